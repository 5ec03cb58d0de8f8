package main_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/testbin"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/cockroachdb/pebble"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/storeformat"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/proof"
)

// previousRelease is the commit of the release before this one: the tests of upgrades
// build it, and run its members beside this build's.
const previousRelease = "d96f8a2"

// upgradeGate skips a test of upgrades unless INTENTD_UPGRADE_TEST is set (make
// upgrade-test): each builds the previous release from its commit, which takes a
// minute on a cold build cache.
func upgradeGate(t *testing.T) {
	t.Helper()
	if os.Getenv("INTENTD_UPGRADE_TEST") == "" {
		t.Skip("builds the previous release from git history: make upgrade-test (INTENTD_UPGRADE_TEST=1)")
	}
	if v := os.Getenv("INTENTD_TEST_STORE"); v != "" && v != "pebble" {
		t.Skip("chooses its own stores; runs when INTENTD_TEST_STORE is pebble")
	}
}

// buildPrevious builds the previous release's intentd once: a detached worktree of its
// commit in the test process's folder for programs (internal/testbin), go build there,
// the worktree removed. Without git, or
// without the commit in the history (a shallow clone), the test skips and says so.
func buildPrevious(t *testing.T) string {
	t.Helper()
	previous.Do(func() {
		if _, err := exec.LookPath("git"); err != nil {
			previous.skip = "git not installed: apt-get install git"
			return
		}
		top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			previous.skip = "not in a git checkout: the previous release is built from the history"
			return
		}
		repo := strings.TrimSpace(string(top))
		if err := exec.Command("git", "-C", repo, "cat-file", "-e", previousRelease+"^{commit}").Run(); err != nil {
			previous.skip = "commit " + previousRelease + " of the previous release is not in the history (a shallow clone?): git fetch --unshallow"
			return
		}
		dir, err := testbin.Dir()
		if err != nil {
			previous.err = err
			return
		}
		src := filepath.Join(dir, "previous-src")
		if out, err := exec.Command("git", "-C", repo, "worktree", "add", "--detach", src, previousRelease).CombinedOutput(); err != nil {
			previous.err = fmt.Errorf("git worktree add %s: %v\n%s", previousRelease, err, out)
			return
		}
		defer exec.Command("git", "-C", repo, "worktree", "remove", "--force", src).Run()
		previous.bin = filepath.Join(dir, "intentd-"+previousRelease)
		// The build names itself for its commit, so that GET /info tells the members of
		// the two releases apart whether or not the toolchain records the revision.
		build := exec.Command("go", "build", "-o", previous.bin,
			"-ldflags", "-X github.com/intentd/intentd/internal/buildinfo.version="+previousRelease, "./cmd/intentd")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			previous.err = fmt.Errorf("go build of %s: %v\n%s", previousRelease, err, out)
		}
	})
	if previous.skip != "" {
		t.Skip(previous.skip)
	}
	if previous.err != nil {
		t.Fatal(previous.err)
	}
	return previous.bin
}

var previous struct {
	sync.Once
	bin, skip string
	err       error
}

// version is the version GET /info says the node at url runs.
func version(t *testing.T, url string) string {
	t.Helper()
	var info struct {
		Version string `json:"version"`
	}
	getJSON(t, url+"/info", &info)
	return info.Version
}

// TestRollingUpgrade runs a cluster of three members of the previous release on one
// NATS store (three NATS servers) under load, and replaces them one at a time with this
// build, each stopped as a supervisor stops it. While the versions are mixed, every
// member sees the three, and an intent submitted through a member of one version is
// decided through a member of the other. At the end nothing acknowledged is lost, every
// accepted proposal ended in exactly one outcome, in one order on every member, and the
// proofs of outcomes proved by either version verify.
func TestRollingUpgrade(t *testing.T) {
	upgradeGate(t)
	prev, next := buildPrevious(t), buildIntentd(t)
	r := startRigWith(t, prev)
	for k, n := range r.nodes {
		if v := version(t, n.url); v != previousRelease {
			t.Fatalf("node %d runs version %q, want the previous release, %s", k, v, previousRelease)
		}
	}
	l := &loadRun{t: t, r: r, up: []bool{true, true, true},
		urls: []string{r.nodes[0].url, r.nodes[1].url, r.nodes[2].url}, proposed: map[string]bool{}}
	ctx, stopReading := context.WithCancel(context.Background())
	defer stopReading()
	var readers sync.WaitGroup
	subs := l.follow(ctx, &readers)
	var stop atomic.Bool
	var workers sync.WaitGroup
	l.load(&stop, &workers)
	defer func() {
		stop.Store(true)
		workers.Wait()
	}()
	var decided []string // intents decided across the versions, whose proofs are checked
	for k := range r.nodes {
		time.Sleep(3 * time.Second)
		l.replace(k, next)
		if k < len(r.nodes)-1 {
			decided = append(decided, l.acrossVersions()...)
		}
	}
	time.Sleep(2 * time.Second)
	stop.Store(true)
	workers.Wait()
	for k, n := range r.nodes {
		if v := version(t, n.url); v == previousRelease {
			t.Errorf("node %d still runs %s after the upgrade", k, v)
		}
	}

	l.ledgerMu.Lock()
	defer l.ledgerMu.Unlock()
	statuses, full := l.checkOutcomes()
	l.checkSubscribers(subs, full)
	stopReading()
	readers.Wait()
	checkProofs(t, r.nodes[0].url, append(decided, someOf(statuses, 20)...))
	t.Logf("%d intents acknowledged, %d decided, through three replacements; %d decided across the versions", len(l.proposed), len(statuses), len(decided))
}

// replace stops node k as its supervisor would, and starts it again on bin, the
// proposals meanwhile going to the others.
func (l *loadRun) replace(k int, bin string) {
	t, r := l.t, l.r
	l.upMu.Lock()
	l.up[k] = false
	l.upMu.Unlock()
	stopped := time.Now()
	r.nodes[k].stop()
	r.nodes[k].bin = bin
	r.nodes[k].start()
	l.upMu.Lock()
	l.up[k], l.urls[k] = true, r.nodes[k].url
	l.upMu.Unlock()
	waitMembers(t, r.nodes, 3)
	t.Logf("node %d replaced: back and seen by all three members %v after it was stopped", k, time.Since(stopped).Round(10*time.Millisecond))
}

// acrossVersions submits intents through each member and proposes to them through each
// member of the other version, and waits for their success: the members of the two
// versions route commands to each other. It returns the intents.
func (l *loadRun) acrossVersions() []string {
	t, r := l.t, l.r
	var olds, news []*crashServer
	for _, n := range r.nodes {
		if version(t, n.url) == previousRelease {
			olds = append(olds, n)
		} else {
			news = append(news, n)
		}
	}
	if len(olds) == 0 || len(news) == 0 {
		t.Fatalf("the cluster is not mixed: %d members of the previous release, %d of this one", len(olds), len(news))
	}
	var ids []string
	for _, pair := range [][2][]*crashServer{{olds, news}, {news, olds}} {
		for _, from := range pair[0] {
			for _, to := range pair[1] {
				for range 3 { // a few intents, so that some are owned by each side
					id, body := r.intent()
					if code, why := call(from.url+"/intents", body); code != http.StatusOK {
						t.Fatalf("intent through %s: %d %s", from.url, code, why)
					}
					if code, why := call(to.url+"/intents/"+id+"/proposal", fmt.Appendf(nil, `{"solution":%q}`, crashSolutions[0])); code != http.StatusOK {
						t.Fatalf("proposal through %s of an intent submitted through %s: %d %s", to.url, from.url, code, why)
					}
					waitTerminal(t, from.url, id, "success")
					ids = append(ids, id)
					l.ledgerMu.Lock()
					l.proposed[id] = true
					l.ledgerMu.Unlock()
				}
			}
		}
	}
	return ids
}

// someOf returns up to n of the intents of statuses.
func someOf(statuses map[string]string, n int) []string {
	var ids []string
	for id := range statuses {
		if len(ids) == n {
			break
		}
		ids = append(ids, id)
	}
	return ids
}

// checkProofs fetches the proof of each intent from the node at url and verifies it
// under the service's key.
func checkProofs(t *testing.T, url string, ids []string) {
	t.Helper()
	var info struct {
		PublicKey string `json:"public_key"`
	}
	getJSON(t, url+"/info", &info)
	pub, err := crypto.DecodeBase58(info.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("GET /info public_key %q: %v", info.PublicKey, err)
	}
	for _, id := range ids {
		if _, err := proof.Verify(getBody(t, url+"/intents/"+id+"/proof"), pub); err != nil {
			t.Errorf("the proof of %s does not verify: %v", id, err)
		}
	}
}

// TestUpgradePebbleFolder: a data folder written by the previous release is opened by
// this build, which records its format and logs the migration, and serves what the
// previous release stored; a folder whose recorded format is newer than this build's is
// refused with a message that names the format, the version that wrote it and what to
// do.
func TestUpgradePebbleFolder(t *testing.T) {
	upgradeGate(t)
	prev, next := buildPrevious(t), buildIntentd(t)
	data := filepath.Join(t.TempDir(), "data")
	n := &crashServer{t: t, bin: prev, data: data, args: []string{"--intent-ttl", "1h"}}
	n.start()
	policy := postPolicy(t, n.url, crashPolicy)
	r := &rig{t: t, policy: policy}
	_, r.signer, _ = ed25519.GenerateKey(nil)
	var decided, open []string
	for i := range 6 {
		id, body := r.intent()
		if code, why := call(n.url+"/intents", body); code != http.StatusOK {
			t.Fatalf("intent: %d %s", code, why)
		}
		if i%2 == 1 {
			open = append(open, id)
			continue
		}
		if code, why := call(n.url+"/intents/"+id+"/proposal", fmt.Appendf(nil, `{"solution":%q}`, crashSolutions[0])); code != http.StatusOK {
			t.Fatalf("proposal: %d %s", code, why)
		}
		waitTerminal(t, n.url, id, "success")
		decided = append(decided, id)
	}
	n.stop()

	n.bin, n.keepMsgs = next, true
	n.start()
	want := fmt.Sprintf("store migrated from data format 3 (no format record) to %d", persistence.Format)
	if !slices.Contains(n.messages(), want) {
		t.Errorf("the first start of this build on the previous release's folder did not log %q", want)
	}
	for _, id := range decided {
		if st := getStatus(t, n.url, id); st != "success" {
			t.Errorf("intent %s decided by the previous release is %s", id, st)
		}
	}
	checkProofs(t, n.url, decided)
	for _, id := range open {
		if code, why := call(n.url+"/intents/"+id+"/proposal", fmt.Appendf(nil, `{"solution":%q}`, crashSolutions[0])); code != http.StatusOK {
			t.Fatalf("proposal to an intent the previous release stored: %d %s", code, why)
		}
		waitTerminal(t, n.url, id, "success")
	}
	// The policy the previous release stored is still counted as named by open
	// intents: it cannot be deleted while one is.
	_, body := r.intent()
	if code, why := call(n.url+"/intents", body); code != http.StatusOK {
		t.Fatalf("intent after the upgrade: %d %s", code, why)
	}
	if code := deletePolicy(t, n.url, policy); code != http.StatusConflict {
		t.Errorf("DELETE of a policy an open intent names: %d, want 409", code)
	}
	n.stop()
	n.warnMu.Lock()
	n.msgs = nil
	n.warnMu.Unlock()
	n.start()
	for _, m := range n.messages() {
		if strings.Contains(m, "migrated") {
			t.Errorf("a second start logged %q", m)
		}
	}
	n.stop()

	writeFormat(t, data, storeformat.Record{Format: persistence.Format + 1, WrittenBy: "v99.0.0"})
	out, err := exec.Command(next, "--listen", "127.0.0.1:0", "--data", data).CombinedOutput()
	if err == nil {
		t.Fatal("this build started on a folder of a newer format")
	}
	for _, w := range []string{fmt.Sprintf("is of data format %d, recorded by intentd v99.0.0", persistence.Format+1),
		fmt.Sprintf("reads formats up to %d", persistence.Format), "run intentd v99.0.0 or later", "restore the backup taken before the upgrade"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("the refusal of a newer format lacks %q:\n%s", w, out)
		}
	}
}

// writeFormat sets the format record of the closed store in data to rec, as a later
// version would.
func writeFormat(t *testing.T, data string, rec storeformat.Record) {
	t.Helper()
	db, err := pebble.Open(data, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("mformat"), rec.Encode(), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// deletePolicy deletes a policy through the node at url and returns the status.
func deletePolicy(t *testing.T, url, id string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, url+"/policies/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPeerOfAnotherProtocol: a member whose record names only a version of the cluster
// protocol this build does not speak, as a later release's might, is refused by a
// running node: logged once, counted in intentd_cluster_peers_refused_total, and left
// out of the members GET /info lists.
func TestPeerOfAnotherProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("starts intentd and a NATS server")
	}
	if v := os.Getenv("INTENTD_TEST_STORE"); v != "" && v != "pebble" {
		t.Skip("chooses its own stores; runs when INTENTD_TEST_STORE is pebble")
	}
	srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	n := &crashServer{t: t, bin: buildIntentd(t), data: filepath.Join(t.TempDir(), "data"),
		args: []string{"--store", srv.URL(), "--cluster-bind", "127.0.0.1:" + freePort(t)}}
	n.start()
	t.Cleanup(n.stop)
	waitMembers(t, []*crashServer{n}, 1)

	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "intentd_members_intentd")
	if err != nil {
		t.Fatal(err)
	}
	// A later release's record: the member, and version 99 as field 1000.
	rec, err := proto.Marshal(&cluster.Member{Id: "later", Host: "127.0.0.1", Port: 7999, Kinds: []string{"intent"}})
	if err != nil {
		t.Fatal(err)
	}
	rec = protowire.AppendVarint(protowire.AppendTag(rec, 1000, protowire.VarintType), 99)
	for range 3 { // renewals, each read again
		if _, err := kv.Put(ctx, "later", rec); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); metric(t, n.url, "intentd_cluster_peers_refused_total") != 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("intentd_cluster_peers_refused_total = %v, want 1", metric(t, n.url, "intentd_cluster_peers_refused_total"))
		}
	}
	refusals := 0
	for _, w := range n.warnings() {
		if strings.Contains(w, "cluster member refused") && strings.Contains(w, `"refused":"later"`) {
			refusals++
		}
	}
	if refusals != 1 {
		t.Errorf("%d log lines refuse the member, want 1: %v", refusals, n.warnings())
	}
	waitMembers(t, []*crashServer{n}, 1)
}
