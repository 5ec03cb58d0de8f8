package main_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/cluster/clustertls"
	"github.com/intentd/intentd/crypto"
)

// TestCluster runs three intentd processes as one cluster on a three-server JetStream
// cluster, all on loopback. Intents are submitted to each node in turn, proposed to on
// another and read on the third; every node's stream has the same events. Then one node
// and one NATS server are killed with SIGKILL, and every proposal for the open intents,
// the dead node's included, succeeds through the nodes left within seconds. One member
// keeps no transparency log, and serves the log of those that do, one of them killed.
// Last, an intent delegated to an agent is refused what it must refuse from any member,
// and takes the agent's signed proposal through a member that does not own it.
func TestCluster(t *testing.T) {
	// Not parallel: heavy: a cluster of processes killed and paused, whose time-outs a test beside it would starve.
	r := startRigFlags(t, rigArgs) // one member keeps no transparency log
	const n = 30
	checkSpread(t, r, n)
	checkOneKeepsIndex(t, r.nodes)
	checkLoglessFollowsNoEvents(t, r) // and the checks after it read its events all the same
	checkNodeKilled(t, r, n)
	checkOneKeepsIndex(t, r.nodes[:2])
	paused := checkNodePaused(t, r, n)
	checkRejoin(t, r, 2*n+paused)
	checkOneKeepsIndex(t, r.nodes)
	checkLogFromKeepers(t, r) // after the counts of events, as checkAgents
	checkAgents(t, r)         // last: its outcome is not in the event counts of the checks before
}

// checkOneKeepsIndex waits until one of the nodes, the one that scans the expiry index,
// follows every intent of the stream for its index, and the others follow the policies
// alone (intentd_store_index_follows_intents), as they do once the index has not been
// used on them for 5 s.
func checkOneKeepsIndex(t *testing.T, nodes []*crashServer) {
	t.Helper()
	waitGauges(t, nodes, "intentd_store_index_follows_intents", "one 1, the node that scans the index", func(v []float64) bool {
		keepers := 0
		for _, x := range v {
			if x == 1 {
				keepers++
			}
		}
		return keepers == 1
	})
}

// checkLoglessFollowsNoEvents waits until the member that keeps no log, which no event
// stream reads since checkSpread's closed, follows no event
// (intentd_store_events_followed), while the members that keep the log follow them.
func checkLoglessFollowsNoEvents(t *testing.T, r *rig) {
	t.Helper()
	waitGauges(t, r.nodes, "intentd_store_events_followed", "1, 1 and 0, the member that keeps no log and serves no event stream", func(v []float64) bool {
		return v[0] == 1 && v[1] == 1 && v[logless] == 0
	})
}

// waitGauges reads a gauge of each node until ok holds of the values, in the nodes'
// order, and fails after 20 s saying what it wanted.
func waitGauges(t *testing.T, nodes []*crashServer, name, want string, ok func([]float64) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var v []float64
		for _, n := range nodes {
			v = append(v, metric(t, n.url, name))
		}
		if ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes' %s are %v; want %s", name, v, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// submitTo submits a new intent through node n and returns its id.
func (r *rig) submitTo(t *testing.T, n *crashServer) string {
	id, body := r.intent()
	r.submit(t, n, id, body)
	return id
}

// submit posts the body that submits intent id through node n. A 503 says to try
// again (a member the cluster is moving away from); a retry of a create that was
// written is refused as a taken id, which is the same.
func (r *rig) submit(t *testing.T, n *crashServer, id string, body []byte) {
	retried := false
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		code, why := call(n.url+"/intents", body)
		if code == http.StatusOK || code == http.StatusConflict && retried {
			return
		}
		retried = true
		if code != http.StatusServiceUnavailable && code != 0 || time.Since(start) > 30*time.Second {
			t.Fatalf("POST /intents to %s: %d %s", n.url, code, why)
		}
	}
}

// proposeVia proposes the one solution to intent id through node n.
func proposeVia(n *crashServer, id string) (int, string) {
	return call(n.url+"/intents/"+id+"/proposal", fmt.Appendf(nil, `{"solution":%q}`, crashSolutions[0]))
}

// checkSpread submits n intents to each node in turn, proposes to each on another and
// reads it on the third: every node's stream has the same events, each node counts the
// members, and no command crossed between nodes.
func checkSpread(t *testing.T, r *rig, n int) {
	nodes := r.nodes
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range ids {
		ids[i] = r.submitTo(t, nodes[i%3])
	}
	for i, id := range ids {
		wg.Go(func() {
			if code, why := proposeVia(nodes[(i+1)%3], id); code != http.StatusOK {
				t.Errorf("proposal of %s through another node: %d %s", id, code, why)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		waitTerminal(t, nodes[(i+2)%3].url, id, "success")
	}
	logs := make([][]sseEvent, 3)
	for k, node := range nodes {
		logs[k] = readN(t, node.url, n)
		checkEvents(t, fmt.Sprintf("node %d", k), logs[k], nil, false)
		if len(logs[k]) != n {
			t.Fatalf("node %d's stream has %d events, want %d", k, len(logs[k]), n)
		}
	}
	if !slices.Equal(logs[0], logs[1]) || !slices.Equal(logs[0], logs[2]) {
		t.Fatal("the nodes' streams differ")
	}
	// Each node counts the members, its grains and the commands it sent to others.
	var grains, remote float64
	for k, node := range nodes {
		if got := metric(t, node.url, "intentd_cluster_members"); got != 3 {
			t.Errorf("node %d: intentd_cluster_members %v, want 3", k, got)
		}
		grains += metric(t, node.url, "intentd_cluster_grain_activations")
		remote += metric(t, node.url, `intentd_cluster_request_duration_seconds_count{result="ok"}`)
	}
	// 30 intents, each created through one node and proposed to through the next,
	// whose owner is another node for about two thirds of them. No create or proposal
	// crosses: a create is written by the node asked, and a proposal decided by it,
	// whoever owns the intent (docs/cluster.md, "What a command does"). Sent to their
	// owners, fewer than 5 would cross about once in 10^9 runs; a change of members
	// meanwhile would send a few resumes.
	if remote >= float64(n/6) {
		t.Errorf("%v commands answered across the nodes (%v grains active), want next to none", remote, grains)
	}
}

// checkNodeKilled submits n open intents on every node, then kills a node and a NATS
// server with SIGKILL: every proposal for the open intents, the dead node's included,
// succeeds through the nodes left within seconds.
func checkNodeKilled(t *testing.T, r *rig, n int) {
	nodes, members := r.nodes, r.members
	var wg sync.WaitGroup
	open := make([]string, n)
	for i := range open {
		open[i] = r.submitTo(t, nodes[i%3])
	}
	killed := time.Now()
	nodes[2].kill()
	members[2].kill()
	var slowest time.Duration
	var mu sync.Mutex
	for i, id := range open {
		wg.Go(func() {
			via := nodes[i%2]
			ambiguous := false // a refusal that may have come after the write
			for {
				code, why := proposeVia(via, id)
				if code == http.StatusOK {
					break
				}
				// A 503 from a member that died with the request may hide an accepted
				// proposal: the retry then finds it. The outcome below tells.
				if code == http.StatusConflict && ambiguous && strings.HasPrefix(why, "proposal_exists") {
					break
				}
				if code != http.StatusServiceUnavailable && code != 0 {
					t.Errorf("proposal of %s after the kill: %d %s", id, code, why)
					return
				}
				ambiguous = true
				if time.Since(killed) > 30*time.Second {
					t.Errorf("proposal of %s still refused 30s after the kill: %d %s", id, code, why)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			mu.Lock()
			slowest = max(slowest, time.Since(killed))
			mu.Unlock()
		})
	}
	wg.Wait()
	waitMembers(t, nodes[:2], 2) // the dead node left every view
	for _, id := range open {
		waitTerminal(t, nodes[0].url, id, "success")
	}
	all := readN(t, nodes[1].url, 2*n)
	checkEvents(t, "a node left after the kill", all, nil, false)
	if len(all) != 2*n {
		t.Fatalf("%d events after the kill, want %d", len(all), 2*n)
	}
	t.Logf("every proposal accepted within %v of the kill of a node and a NATS server", slowest.Round(10*time.Millisecond))
}

// checkNodePaused pauses a node past its membership TTL: it is dropped, its intents
// are served by the node left, and, resumed, it finds itself out and stops, writing
// nothing. The checks before it decided 2n intents; it returns how many more it
// decided.
func checkNodePaused(t *testing.T, r *rig, n int) int {
	nodes := r.nodes
	paused := make([]string, 10)
	for i := range paused {
		paused[i] = r.submitTo(t, nodes[i%2])
	}
	nodes[1].cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	waitMembers(t, nodes[:1], 1)
	for _, id := range paused {
		for {
			code, why := proposeVia(nodes[0], id)
			if code == http.StatusOK {
				break
			}
			if code != http.StatusServiceUnavailable && code != 0 || time.Since(stopped) > 30*time.Second {
				t.Fatalf("proposal of %s with a node paused: %d %s", id, code, why)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("with a node paused, every proposal accepted %v after the pause", time.Since(stopped).Round(10*time.Millisecond))
	// Resumed, it finds itself out, stops serving grains, and rejoins as a new member
	// by itself, with no restart.
	resumed := time.Now()
	nodes[1].cmd.Process.Signal(syscall.SIGCONT)
	waitMembers(t, nodes[:2], 2)
	if nodes[1].cmd.ProcessState != nil {
		t.Fatalf("the resumed node stopped: %v", nodes[1].cmd.ProcessState)
	}
	t.Logf("the resumed node was a member again %v after it resumed", time.Since(resumed).Round(10*time.Millisecond))
	// And it serves: an intent taken in and proposed through it is decided.
	served := r.submitTo(t, nodes[1])
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		code, why := proposeVia(nodes[1], served)
		if code == http.StatusOK {
			break
		}
		if code != http.StatusServiceUnavailable && code != 0 || time.Since(start) > 30*time.Second {
			t.Fatalf("proposal of %s through the rejoined node: %d %s", served, code, why)
		}
	}
	waitTerminal(t, nodes[1].url, served, "success")
	paused = append(paused, served)
	// With --cluster-exit-on-fence, a node dropped stops instead, for its supervisor.
	nodes[1].kill()
	nodes[1].args = append(nodes[1].args, "--cluster-exit-on-fence")
	nodes[1].start()
	waitMembers(t, nodes[:2], 2)
	nodes[1].cmd.Process.Signal(syscall.SIGSTOP)
	waitMembers(t, nodes[:1], 1)
	exited := make(chan error, 1)
	go func() { exited <- nodes[1].cmd.Wait() }()
	nodes[1].cmd.Process.Signal(syscall.SIGCONT)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("the resumed node with --cluster-exit-on-fence ended with %v, want exit code 1 (fenced)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the resumed node with --cluster-exit-on-fence, dropped from the cluster, is still running")
	}
	for _, id := range paused {
		waitTerminal(t, nodes[0].url, id, "success")
	}
	all := readN(t, nodes[0].url, 2*n+len(paused))
	checkEvents(t, "the node left after the pause", all, nil, false)
	if len(all) != 2*n+len(paused) {
		t.Fatalf("%d events after the pause, want %d", len(all), 2*n+len(paused))
	}
	return len(paused)
}

// checkRejoin starts the killed NATS server and both stopped nodes again: the three
// serve as one, and every node's stream holds the before outcomes and the new ones.
func checkRejoin(t *testing.T, r *rig, before int) {
	nodes, members := r.nodes, r.members
	members[2].start()
	rejoined := time.Now()
	nodes[1].start()
	nodes[2].start()
	waitMembers(t, nodes, 3)
	t.Logf("the two nodes were back in every view %v after they were started", time.Since(rejoined).Round(10*time.Millisecond))
	again := make([]string, 9)
	for i := range again {
		again[i] = r.submitTo(t, nodes[i%3])
	}
	for i, id := range again {
		for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
			code, why := proposeVia(nodes[(i+1)%3], id)
			if code == http.StatusOK {
				break
			}
			if code != http.StatusServiceUnavailable && code != 0 || time.Since(start) > 30*time.Second {
				t.Fatalf("proposal of %s after the rejoin: %d %s", id, code, why)
			}
		}
	}
	want := before + len(again)
	for i, id := range again {
		waitTerminal(t, nodes[(i+2)%3].url, id, "success")
	}
	for k, node := range nodes {
		evs := readN(t, node.url, want)
		checkEvents(t, fmt.Sprintf("node %d after the rejoin", k), evs, nil, false)
		if len(evs) != want {
			t.Fatalf("node %d has %d events after the rejoin, want %d", k, len(evs), want)
		}
	}
}

// rig is three intentd nodes in one cluster on a three-server JetStream cluster, every
// one a process of its own on loopback, so that any can be killed with SIGKILL. They
// are killed when the test ends; one that failed prints its last warnings.
type rig struct {
	t       *testing.T
	nodes   []*crashServer
	members []*natsMember
	policy  string
	signer  ed25519.PrivateKey
}

func startRig(t *testing.T) *rig {
	return startRigFlags(t, nil)
}

// startRigFlags is startRig with the flags extra(i) added to node i's, when extra is
// not nil.
func startRigFlags(t *testing.T, extra func(i int) []string) *rig {
	if testing.Short() {
		t.Skip("starts three intentd and three NATS servers")
	}
	if v := os.Getenv("INTENTD_TEST_STORE"); v != "" && v != "pebble" {
		t.Skip("chooses its own stores; runs when INTENTD_TEST_STORE is pebble")
	}
	return startRigArgs(t, buildIntentd(t), extra)
}

// startRigWith is startRig with the nodes running bin, a build of intentd.
func startRigWith(t *testing.T, bin string) *rig {
	return startRigArgs(t, bin, nil)
}

// startRigArgs is startRigWith with the flags extra(i) added to node i's, when extra
// is not nil.
func startRigArgs(t *testing.T, bin string, extra func(i int) []string) *rig {
	r := &rig{t: t, members: startNATSCluster(t, 3)}
	urls := make([]string, len(r.members))
	for i, m := range r.members {
		urls[i] = m.url
	}
	keyFile, _ := signingKeyFile(t)
	// The members speak mutual TLS, as production's do.
	ca, err := clustertls.NewCA("test cluster", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certs := t.TempDir()
	if err := os.WriteFile(filepath.Join(certs, "ca.pem"), ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	r.nodes = make([]*crashServer, 3)
	for i := range r.nodes {
		cert, key, err := ca.Issue(fmt.Sprint("node", i), []string{"127.0.0.1"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tlsCert, tlsKey := filepath.Join(certs, fmt.Sprint("node", i, ".pem")), filepath.Join(certs, fmt.Sprint("node", i, ".key"))
		if err := os.WriteFile(tlsCert, cert, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tlsKey, key, 0o600); err != nil {
			t.Fatal(err)
		}
		r.nodes[i] = &crashServer{t: t, bin: bin, data: filepath.Join(t.TempDir(), "data"), args: []string{
			"--store", strings.Join(urls, ","), "--nats-replicas", "3", "--intent-ttl", "1h",
			"--cluster-bind", "127.0.0.1:" + freePort(t), "--signing-key", keyFile,
			"--cluster-tls-ca", filepath.Join(certs, "ca.pem"), "--cluster-tls-cert", tlsCert, "--cluster-tls-key", tlsKey}}
		if extra != nil {
			r.nodes[i].args = append(r.nodes[i].args, extra(i)...)
		}
	}
	for _, n := range r.nodes {
		n.start()
	}
	t.Cleanup(func() {
		for k, n := range r.nodes {
			if n.cmd.ProcessState == nil {
				n.kill()
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("node %d's last warnings and errors:\n%s", k, strings.Join(n.warnings(), "\n"))
			}
		}
	})
	waitMembers(t, r.nodes, 3)
	r.policy = postPolicy(t, r.nodes[0].url, crashPolicy)
	_, r.signer, _ = ed25519.GenerateKey(nil)
	return r
}

// ledBy names the store's stream and the members bucket when the NATS server of that
// name leads them: its death leaves them without a leader until NATS elects one.
func (r *rig) ledBy(server string) []string {
	var urls []string
	for _, m := range r.members {
		urls = append(urls, m.url)
	}
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		return []string{"(unknown: " + err.Error() + ")"}
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	var out []string
	for _, name := range []string{"INTENTD", "KV_intentd_members_intentd"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := js.Stream(ctx, name)
		cancel()
		if err == nil && st.CachedInfo().Cluster != nil && st.CachedInfo().Cluster.Leader == server {
			out = append(out, name)
		}
	}
	return out
}

// intent returns a new signed intent's id and the body that submits it.
func (r *rig) intent() (string, []byte) {
	id := uuid.NewString()
	raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":5000}}}}`, id, r.policy)
	return id, r.authored(raw)
}

// authored is the body that submits the intent raw, signed with the rig's key.
func (r *rig) authored(raw []byte) []byte {
	auth, _ := crypto.SignEd25519(r.signer, raw)
	authJSON, _ := json.Marshal(auth)
	return fmt.Appendf(nil, `{"intent":%s,"authorship":%s}`, raw, authJSON)
}

// readN reads the stream from the start until it has n events and a second more has
// brought no other, or 30 s pass; a connection that ends is resumed after the last id.
func readN(t *testing.T, url string, n int) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var evs []sseEvent
	var quiet *time.Timer
	said := ""
	tries, opened, beats := 0, 0, 0
	for ctx.Err() == nil {
		mu.Lock()
		var after uint64
		if len(evs) > 0 {
			after = evs[len(evs)-1].id
		}
		mu.Unlock()
		got, err := streamSeen(ctx, url, after, func(ev sseEvent) {
			mu.Lock()
			defer mu.Unlock()
			evs = append(evs, ev)
			if len(evs) == n {
				quiet = time.AfterFunc(time.Second, cancel)
			}
		})
		if err != nil && ctx.Err() == nil && err.Error() != said {
			said = err.Error() // once while it stays the same: a refusal repeats every 100 ms
			t.Logf("%s reading %s/events: %v; resuming", time.Now().Format("15:04:05.000"), url, err)
		}
		tries++
		if got.opened {
			opened++
		}
		beats += got.heartbeats
		if got.events == 0 && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond) // refused, or ended at once: again shortly
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) < n {
		// What the caller's failure cannot say: whether the node refused, or opened
		// its stream and stood silent.
		t.Logf("%s/events gave %d of %d events in %d connections, %d of them opened, with %d heartbeats in all",
			url, len(evs), n, tries, opened, beats)
	}
	if quiet != nil {
		quiet.Stop()
	}
	return evs
}

// call posts a JSON body and returns the status with the error's code and message, or
// 0 and the reason when no answer came.
func call(url string, body []byte) (int, string) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var e struct{ Code, Message string }
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Code + ": " + e.Message
}

// metric reads one sample of a node's /metrics, 0 when it is absent.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			return f
		}
	}
	return 0
}

// signingKeyFile makes a receipt signing key and writes it to a file of its own, as
// --signing-key reads it; it returns the file and the key.
func signingKeyFile(t *testing.T) (string, *crypto.SigningKey) {
	t.Helper()
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "signing.key")
	if err := crypto.WriteSigningKeyFile(file, key); err != nil {
		t.Fatal(err)
	}
	return file, key
}

// freePort is a port of 127.0.0.1 that nothing listens on, for a node to bind. The
// port is taken below the kernel's range of ephemeral ports when it can be: a port
// of that range, free when asked, was seen taken as the local port of some other
// process's outgoing connection before the node it was for bound it ("address already in
// use"), which a port outside the range never is.
func freePort(t *testing.T) string {
	t.Helper()
	if lo := ephemeralLow(); lo > minTestPort+1000 {
		for range 100 {
			port := strconv.Itoa(minTestPort + rand.IntN(lo-minTestPort))
			if ln, err := net.Listen("tcp", "127.0.0.1:"+port); err == nil {
				ln.Close()
				return port
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// minTestPort is the lowest port freePort picks, above the ports services commonly take.
const minTestPort = 20000

// ephemeralLow is the first port of the kernel's range of ephemeral ports (Linux), or 0
// when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}

// waitMembers waits until every node's GET /info lists want members.
func waitMembers(t *testing.T, nodes []*crashServer, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, node := range nodes {
		for {
			var info struct {
				Cluster *struct{ Members []string } `json:"cluster"`
			}
			resp, err := client.Get(node.url + "/info")
			if err == nil {
				json.NewDecoder(resp.Body).Decode(&info)
				resp.Body.Close()
			}
			if info.Cluster != nil && len(info.Cluster.Members) == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not see %d members: %+v", node.url, want, info.Cluster)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitTerminal waits until an intent's status, read at url, is want.
func waitTerminal(t *testing.T, url, id, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if st := getStatus(t, url, id); st == want {
			return
		} else if st != "open" && st != "processing" {
			t.Fatalf("intent %s ended %s, want %s", id, st, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("intent %s is not %s after 30s", id, want)
}
