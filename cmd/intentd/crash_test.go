package main_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/testbin"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/natsstore"
)

// The crash test's size. CI runs the default; `make crash` runs it long.
var (
	crashKills = flag.Int("crash.kills", 5, "how many times the crash test kills the server")
	crashEvery = flag.Duration("crash.every", 700*time.Millisecond, "mean time between kills")
)

const crashPolicy = `
name crash_test
parameters { size: string  max_price_cents: int }
evidence { size: string  price_cents: int }
requires {
  evidence.size == parameters.size;
  evidence.price_cents <= parameters.max_price_cents;
}
`

// crashSolutions are demo catalog entries and one that is not in it, so that every kind
// of outcome happens: success, constraint failure and extraction failure.
var crashSolutions = []string{
	"https://shop.example/products/crewneck-sweatshirt-green-m",
	"https://shop.example/products/4k-monitor-27in",
	"sku:NOT-IN-THE-CATALOG",
}

// crashServer runs intentd as a child process on one data folder, killing and restarting it.
type crashServer struct {
	t    *testing.T
	bin  string
	data string
	args []string // the store's flags
	cmd  *exec.Cmd
	url  string

	warnMu sync.Mutex
	warns  []string // the last warnings and errors it logged and what else it printed, for a test that fails
	// keepMsgs, set before a start, keeps the message of every record it logs in msgs,
	// for a test that looks for a line at any level.
	keepMsgs bool
	msgs     []string
}

// warnings returns the last warnings and errors the server logged, newest last.
func (s *crashServer) warnings() []string {
	s.warnMu.Lock()
	defer s.warnMu.Unlock()
	return slices.Clone(s.warns)
}

// start starts intentd and waits until it is ready. A cluster node that is dropped
// from its cluster while it starts (docs/cluster.md, "Fencing": its first renewals can
// go unanswered while NATS elects a leader after a server's death) stops with exit
// code 1 for its supervisor to start it again; start is that supervisor, twice at most.
func (s *crashServer) start() {
	s.t.Helper()
	for try := 0; ; try++ {
		if s.startOnce() {
			return
		}
		if try == 2 {
			s.t.Fatal("intentd was dropped from its cluster three times in a row while starting")
		}
		s.t.Logf("intentd on %s was dropped from its cluster while starting; started again as its supervisor would", s.data)
	}
}

// startOnce starts intentd and waits until it is ready; false when it was dropped from
// its cluster before it was, and has stopped.
func (s *crashServer) startOnce() bool {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, append([]string{"--listen", "127.0.0.1:0", "--data", s.data, "--intent-ttl", "1500ms",
		"--max-proving", "8", "--log-format", "json"}, s.args...)...)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	found := make(chan string, 1)
	var fenced atomic.Bool
	var tailMu sync.Mutex
	var tail []string // the last lines, for a start that fails
	go func() {
		sc := bufio.NewScanner(stderr)
		var full *os.File // every line, when INTENTD_TEST_NODE_LOGS names a folder
		if dir := os.Getenv("INTENTD_TEST_NODE_LOGS"); dir != "" {
			full, _ = os.OpenFile(filepath.Join(dir, filepath.Base(filepath.Dir(s.data))+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if full != nil {
				defer full.Close()
			}
		}
		for sc.Scan() {
			line := sc.Text()
			if full != nil {
				fmt.Fprintln(full, line)
			}
			tailMu.Lock()
			tail = append(tail[max(0, len(tail)-19):], line)
			tailMu.Unlock()
			var rec struct {
				Level string `json:"level"`
				Msg   string `json:"msg"`
				URL   string `json:"url"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				rec.Level = "ERROR" // not a log record: a panic's trace, or the runtime's
			}
			if rec.Msg == "listening" {
				found <- rec.URL
			}
			if s.keepMsgs {
				s.warnMu.Lock()
				s.msgs = append(s.msgs, rec.Msg)
				s.warnMu.Unlock()
			}
			if strings.HasPrefix(rec.Msg, "this node was dropped from the cluster: stopping") {
				fenced.Store(true)
			}
			if rec.Level == "WARN" || rec.Level == "ERROR" {
				s.warnMu.Lock()
				s.warns = append(s.warns[max(0, len(s.warns)-199):], line)
				s.warnMu.Unlock()
			}
		}
	}()
	select {
	case s.url = <-found:
	case <-time.After(60 * time.Second):
		tailMu.Lock()
		defer tailMu.Unlock()
		s.t.Fatalf("intentd did not start listening within a minute; its last lines:\n%s", strings.Join(tail, "\n"))
	}
	// Wait for recovery: /readyz when it exists, else a status read of nothing.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if fenced.Load() {
			s.cmd.Wait()
			return false
		}
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound {
				return true
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.t.Fatal("intentd did not become ready")
	return false
}

// messages are the messages of the records logged since keepMsgs was set.
func (s *crashServer) messages() []string {
	s.warnMu.Lock()
	defer s.warnMu.Unlock()
	return slices.Clone(s.msgs)
}

// stop stops intentd as a supervisor does, with SIGTERM, and waits until it has.
func (s *crashServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
}

func (s *crashServer) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
}

// ledger is what the service acknowledged, and what a resuming subscriber saw.
type ledger struct {
	mu        sync.Mutex
	intents   map[string][]byte // id -> the intent JSON as sent, acknowledged with 200
	proposals map[string]string // id -> solution, acknowledged with 200
	events    []sseEvent
}

type sseEvent struct {
	id       uint64
	typ      string
	intentID string
}

// TestCrashRecovery drives mixed load at intentd, kills it with SIGKILL at random moments
// and restarts it, then checks that nothing acknowledged was lost: every intent that got
// a 200 is stored as sent, every accepted proposal ends terminal, every terminal intent
// has exactly one event, event ids increase across restarts (gapless from 1 on Pebble;
// on NATS they are stream sequences, which skip), and intents whose time passed while the
// server was down expired. It runs on Pebble, and on NATS JetStream (one server, kept
// running in this process while intentd dies).
func TestCrashRecovery(t *testing.T) {
	// Not parallel: heavy: processes killed under load, whose time-outs a test beside it would starve.
	if v := os.Getenv("INTENTD_TEST_STORE"); v != "" && v != "pebble" {
		t.Skip("chooses its own stores; runs when INTENTD_TEST_STORE is pebble")
	}
	if testing.Short() {
		t.Skip("the crash test starts and kills a server many times")
	}
	bin := buildIntentd(t)
	t.Run("pebble", func(t *testing.T) { crashRecovery(t, bin, nil, true, nil) })
	t.Run("nats", func(t *testing.T) {
		srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Shutdown()
		crashRecovery(t, bin, []string{"--store", srv.URL()}, false, nil)
	})
	t.Run("nats-r3", func(t *testing.T) {
		members := startNATSCluster(t, 3)
		urls := make([]string, len(members))
		for i, m := range members {
			urls[i] = m.url
		}
		// At every kill of intentd one NATS server dies too, a different one each
		// time, and comes back when intentd does: one of three is down at a time, which
		// a stream of three replicas survives.
		crashRecovery(t, bin, []string{"--store", strings.Join(urls, ","), "--nats-replicas", "3"}, false, func(i int) func() {
			m := members[i%len(members)]
			m.kill()
			return m.start
		})
	})
}

// buildIntentd builds this package's command once for the tests that run it as a
// process of its own, into the test process's folder that TestMain removes.
func buildIntentd(t *testing.T) string {
	t.Helper()
	built.Do(func() {
		dir, err := testbin.Dir()
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "intentd")
		out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

var built struct {
	sync.Once
	bin string
	err error
}

// natsMember is one server of a JetStream cluster on loopback, run as a process of its
// own (this test binary; see TestMain) so that it can be killed with SIGKILL.
type natsMember struct {
	t    *testing.T
	conf string
	url  string
	cmd  *exec.Cmd
}

// startNATSCluster starts n members of one JetStream cluster and waits until they take
// connections; they are killed when the test ends.
func startNATSCluster(t *testing.T, n int) []*natsMember {
	ports := make([]int, 2*n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[n+i]))
	}
	members := make([]*natsMember, n)
	for i := range members {
		dir := t.TempDir()
		conf := filepath.Join(dir, "nats.conf")
		text := fmt.Sprintf("server_name: m%d\nlisten: 127.0.0.1:%d\njetstream { store_dir: %q }\ncluster { name: crash\n listen: 127.0.0.1:%d\n routes: [%s] }\n",
			i, ports[i], filepath.Join(dir, "js"), ports[n+i], strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		members[i] = &natsMember{t: t, conf: conf, url: fmt.Sprintf("nats://127.0.0.1:%d", ports[i])}
		members[i].start()
		t.Cleanup(members[i].kill)
	}
	return members
}

func (m *natsMember) start() {
	m.t.Helper()
	m.cmd = exec.Command(os.Args[0])
	m.cmd.Env = append(os.Environ(), "INTENTD_TEST_NATS_MEMBER="+m.conf) // see TestMain
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		m.t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && strings.HasPrefix(sc.Text(), "ready ")
		ready <- ok
		for sc.Scan() {
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			m.t.Fatalf("nats member %s did not start", m.url)
		}
	case <-time.After(30 * time.Second):
		m.t.Fatalf("nats member %s did not start in 30s", m.url)
	}
}

func (m *natsMember) kill() {
	if m.cmd != nil && m.cmd.ProcessState == nil {
		m.cmd.Process.Kill()
		m.cmd.Wait()
	}
}

// crashRecovery is the crash test on the store that storeArgs name; gapless says whether
// event ids must be gapless from 1. alsoKill, when given, is called at the i-th kill of
// intentd to kill something more, and returns how to bring it back.
func crashRecovery(t *testing.T, bin string, storeArgs []string, gapless bool, alsoKill func(i int) (restart func())) {
	srv := &crashServer{t: t, bin: bin, data: filepath.Join(t.TempDir(), "data"), args: storeArgs}
	srv.start()
	defer func() {
		if t.Failed() {
			t.Logf("the server's last warnings and errors, across its restarts:\n%s", strings.Join(srv.warnings(), "\n"))
		}
	}()
	defer func() {
		if srv.cmd.ProcessState == nil {
			srv.kill()
		}
	}()

	policyID := postPolicy(t, srv.url, crashPolicy)
	_, key, _ := ed25519.GenerateKey(nil)
	led := &ledger{intents: map[string][]byte{}, proposals: map[string]string{}}

	var urlMu sync.RWMutex
	current := func() string { urlMu.RLock(); defer urlMu.RUnlock(); return srv.url }
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for ctx.Err() == nil {
				drive(current(), policyID, key, rng, led)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		subscribe(ctx, current, led)
	}()

	rng := rand.New(rand.NewPCG(7, 7))
	for i := range *crashKills {
		time.Sleep(time.Duration(rng.Int64N(int64(2 * *crashEvery))))
		srv.kill()
		restart := func() {}
		if alsoKill != nil {
			restart = alsoKill(i)
		}
		// Stay down a while so that some deadlines fall while the server is down.
		if i%3 == 0 {
			time.Sleep(1600 * time.Millisecond)
		}
		restart()
		urlMu.Lock()
		srv.start()
		urlMu.Unlock()
	}
	time.Sleep(*crashEvery)
	stop()
	wg.Wait()

	// Recovery: every accepted proposal ends, every untouched intent expires.
	deadline := time.Now().Add(60 * time.Second)
	statuses := map[string]string{}
	for id := range led.intents {
		for {
			st := getStatus(t, srv.url, id)
			if st == "success" || st == "failure" || st == "expired" {
				statuses[id] = st
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("intent %s is still %s a minute after the last restart", id, st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// A last subscriber reads the whole log from the start.
	all := readAll(t, srv.url)
	srv.kill()

	for id, sent := range led.intents {
		got := getIntent(t, srv, id)
		want, _ := crypto.Canonicalize(sent)
		if !bytes.Equal(got, want) {
			t.Errorf("intent %s is stored as %s, was sent as %s", id, got, want)
		}
		if _, proposed := led.proposals[id]; proposed && statuses[id] == "expired" {
			t.Errorf("intent %s had an accepted proposal and expired", id)
		}
	}
	checkEvents(t, "the resuming subscriber", led.events, nil, gapless)
	checkEvents(t, "a reader from the start", all, statuses, gapless)
	kinds := map[string]int{}
	for _, st := range statuses {
		kinds[st]++
	}
	t.Logf("%d kills; %d intents and %d proposals acknowledged; outcomes %v; %d events seen by the resuming subscriber",
		*crashKills, len(led.intents), len(led.proposals), kinds, len(led.events))
}

// getIntent restarts the server if needed and reads an intent's stored JSON.
func getIntent(t *testing.T, srv *crashServer, id string) []byte {
	t.Helper()
	if srv.cmd.ProcessState != nil {
		srv.start()
	}
	resp, err := http.Get(srv.url + "/intents/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Intent json.RawMessage `json:"intent"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /intents/%s: %d %v", id, resp.StatusCode, err)
	}
	out, _ := crypto.Canonicalize(body.Intent)
	return out
}

// checkEvents checks ids strictly increasing (and, with gapless, gapless from 1), and one
// event per intent; with statuses, also that every terminal intent has its event, of its
// type.
func checkEvents(t *testing.T, who string, evs []sseEvent, statuses map[string]string, gapless bool) {
	t.Helper()
	per := map[string]int{}
	for i, ev := range evs {
		if gapless && ev.id != uint64(i+1) {
			t.Fatalf("%s: event %d has id %d; ids must be gapless from 1", who, i, ev.id)
		}
		if i > 0 && ev.id <= evs[i-1].id {
			t.Fatalf("%s: event %d has id %d after %d; ids must increase", who, i, ev.id, evs[i-1].id)
		}
		per[ev.intentID]++
		if per[ev.intentID] > 1 {
			t.Errorf("%s: intent %s has %d events", who, ev.intentID, per[ev.intentID])
		}
		if statuses != nil && statuses[ev.intentID] != "" && statuses[ev.intentID] != ev.typ {
			t.Errorf("%s: intent %s ended %s but its event is %s", who, ev.intentID, statuses[ev.intentID], ev.typ)
		}
	}
	for id := range statuses {
		if per[id] != 1 {
			t.Errorf("%s: terminal intent %s has %d events, want 1", who, id, per[id])
		}
	}
}

// drive submits one signed intent and, two times in three, proposes a solution for it.
func drive(url, policyID string, key ed25519.PrivateKey, rng *rand.Rand, led *ledger) {
	id := uuid.NewString()
	raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":%d}}}}`,
		id, policyID, 1000+rng.IntN(9000))
	auth, _ := crypto.SignEd25519(key, raw)
	authJSON, _ := json.Marshal(auth)
	body := fmt.Appendf(nil, `{"intent":%s,"authorship":%s}`, raw, authJSON)
	if post(url+"/intents", body) != http.StatusOK {
		return
	}
	led.mu.Lock()
	led.intents[id] = raw
	led.mu.Unlock()
	if rng.IntN(3) == 0 {
		return
	}
	sol := crashSolutions[rng.IntN(len(crashSolutions))]
	if post(url+"/intents/"+id+"/proposal", fmt.Appendf(nil, `{"solution":%q}`, sol)) == http.StatusOK {
		led.mu.Lock()
		led.proposals[id] = sol
		led.mu.Unlock()
	}
}

var client = &http.Client{Timeout: 10 * time.Second}

func post(url string, body []byte) int {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func postPolicy(t *testing.T, url, src string) string {
	t.Helper()
	resp, err := client.Post(url+"/policies", "text/plain", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var id string
	if err := json.NewDecoder(resp.Body).Decode(&id); err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST /policies: %d %v", resp.StatusCode, err)
	}
	return id
}

func getStatus(t *testing.T, url, id string) string {
	t.Helper()
	resp, err := client.Get(url + "/intents/" + id + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("status of %s: %v", id, err)
	}
	return st.Status
}

// subscribe follows the event stream across restarts, resuming after the last id seen.
func subscribe(ctx context.Context, url func() string, led *ledger) {
	var last uint64
	for ctx.Err() == nil {
		n, _ := stream(ctx, url(), last, func(ev sseEvent) {
			led.mu.Lock()
			led.events = append(led.events, ev)
			led.mu.Unlock()
			last = ev.id
		})
		if n == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// readAll reads the stream from the start until it has been quiet for a second. As a
// client does, it resumes after the last id it saw when the server ends the stream,
// which the server does while its store cannot be reached (a NATS cluster electing a
// leader after the kills): what matters is what a reader gets in the end, each event
// once and none missing.
func readAll(t *testing.T, url string) []sseEvent {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var mu sync.Mutex
	var evs []sseEvent
	var last uint64
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		var quietEnded atomic.Bool
		quiet := time.AfterFunc(time.Second, func() { quietEnded.Store(true); cancel() })
		stream(ctx, url, last, func(ev sseEvent) {
			mu.Lock()
			evs = append(evs, ev)
			last = ev.id
			mu.Unlock()
			quiet.Reset(time.Second)
		})
		quiet.Stop()
		cancel()
		if quietEnded.Load() {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	return evs
}

// stream reads one SSE connection, calling fn for each event, and reports how many it read.
func stream(ctx context.Context, url string, after uint64, fn func(sseEvent)) (int, error) {
	got, err := streamSeen(ctx, url, after, fn)
	return got.events, err
}

// streamed is what one SSE connection brought: a test that read too few events says
// whether the stream opened at all, and whether it then stood silent or kept alive.
type streamed struct {
	opened     bool // the response's headers came, with a 200
	events     int
	heartbeats int
}

// streamSeen is stream, and says what else the connection brought.
func streamSeen(ctx context.Context, url string, after uint64, fn func(sseEvent)) (streamed, error) {
	var got streamed
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/events", nil)
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return got, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// A refusal (a 503 while the node's store cannot answer) is said, not taken
		// for a stream that ended with no events.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return got, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	got.opened = true
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "data: "):
			var d struct {
				Type     string `json:"type"`
				IntentID string `json:"intent_id"`
			}
			json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d)
			ev.typ, ev.intentID = d.Type, d.IntentID
		case line == ": heartbeat":
			got.heartbeats++
		case line == "" && ev.id > 0:
			fn(ev)
			got.events++
			ev = sseEvent{}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return got, err
	}
	return got, nil
}
