package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/tlog"
)

// logServer is a server with a transparency log on a folder (store in data/, log in
// tlog/), signing with one fixed key across restarts.
type logServer struct {
	url  string
	log  *tlog.Log
	stop func()
	// events counts the store's events: every event is an outcome, and a leaf of the
	// log.
	events func() uint64
}

var logKeySeed = bytes.Repeat([]byte{42}, 32)

func startLogServer(t testing.TB, dir string) *logServer {
	t.Helper()
	return startLogServerWith(t, dir, nil)
}

// startLogServerWith is startLogServer with the log's options adjusted by set (nil:
// none), and the witnesses' state served when the log has witnesses.
func startLogServerWith(t testing.TB, dir string, set func(*tlog.Options)) *logServer {
	t.Helper()
	key, err := crypto.NewSigningKey(logKeySeed)
	if err != nil {
		t.Fatal(err)
	}
	store, err := persistence.Open(filepath.Join(dir, "data"), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Prover = store, evidence.DefaultCatalog(), actors.ReceiptProver{Key: key}
	e, err := actors.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-e.Ready()
	opts := tlog.Options{Dir: filepath.Join(dir, "tlog"), Key: key, Interval: 10 * time.Millisecond}
	if set != nil {
		set(&opts)
	}
	l, err := tlog.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = l.Run(ctx, e) }()
	srv := intenthttp.NewServer(e, intenthttp.Options{Log: l.Reader(), Info: intentd.Info{
		PublicKey: crypto.EncodeBase58(key.PublicKey()), KeyID: key.ID(), LogOrigin: l.Origin(), LogVerifierKey: l.VerifierKey(),
	}})
	ts := httptest.NewServer(srv)
	s := &logServer{url: ts.URL, log: l, events: func() uint64 {
		var n uint64
		if err := store.Events(context.Background(), 0, math.MaxInt, func(intentd.Event) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}}
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		ts.CloseClientConnections()
		ts.Close()
		cancel()
		<-done
		l.Close()
		e.Close()
		store.Close()
	}
	t.Cleanup(s.stop)
	return s
}

// outcomes runs the demo n times (two outcomes each) and waits until the log's
// checkpoint covers them.
func (s *logServer) outcomes(t testing.TB, n int) {
	t.Helper()
	for range n {
		if r := runCLI(t, s.url, "demo", "--wait", "10s"); r.code != 0 {
			t.Fatalf("demo: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	s.waitCheckpoint(t)
}

func (s *logServer) waitCheckpoint(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The log holds every event first: a checkpoint of its leaves taken while it
		// still follows the events would cover only some of the outcomes.
		want := s.events()
		lines := strings.SplitN(string(s.log.Checkpoint()), "\n", 3)
		if len(lines) == 3 && lines[1] == strconv.FormatUint(want, 10) && s.log.Size() == want && want > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of the store's %d events: the log holds %d leaves", want, s.log.Size())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// removeEvent deletes one event from a stopped Pebble store, as an operator who
// rewrites history would.
func removeEvent(t *testing.T, dir string, id uint64) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	key := binary.BigEndian.AppendUint64([]byte{'e'}, id)
	if _, closer, err := db.Get(key); err != nil {
		t.Fatalf("event %d is not in the store: %v", id, err)
	} else {
		closer.Close()
	}
	if err := db.Delete(key, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// quietPebble keeps Pebble's replay lines out of the test's output.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)         {}
func (quietPebble) Errorf(string, ...any)        {}
func (quietPebble) Fatalf(f string, args ...any) { panic(f) }

// TestLogWatchFork checks that log watch accepts a log that grows and reports, with
// exit 4, one whose history was rewritten: an event removed from a copy of the store
// and the server restarted on it, its log rebuilt from what is left.
func TestLogWatchFork(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	dir := t.TempDir()
	srv := startLogServer(t, dir)
	srv.outcomes(t, 2)
	state := filepath.Join(t.TempDir(), "state.json")
	watch := func(t *testing.T, url string, args ...string) result {
		t.Helper()
		return runCLI(t, url, append([]string{"log", "watch", "--once", "--state", state}, args...)...)
	}
	if r := watch(t, srv.url); r.code != 0 || !strings.Contains(r.stdout, "checkpoint 4 ") || !strings.Contains(r.stdout, "first seen") {
		t.Fatalf("first watch: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	srv.outcomes(t, 1)
	if r := watch(t, srv.url); r.code != 0 || !strings.Contains(r.stdout, "checkpoint 6 ") || !strings.Contains(r.stdout, "consistent with 4") {
		t.Fatalf("watch of a log that grew: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, srv.url, "log", "get", "1"); r.code != 0 || !strings.Contains(r.stdout, "leaf 1 of 6") || !strings.Contains(r.stdout, "event id        2") {
		t.Fatalf("log get 1: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, srv.url, "log", "get", "6"); r.code != 1 {
		t.Fatalf("log get of a leaf beyond the log: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	srv.stop()

	// The copy without event 2, and without the log, which is rebuilt from the events.
	forked := t.TempDir()
	if err := os.CopyFS(filepath.Join(forked, "data"), os.DirFS(filepath.Join(dir, "data"))); err != nil {
		t.Fatal(err)
	}
	removeEvent(t, filepath.Join(forked, "data"), 2)
	kept, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	srv = startLogServer(t, forked)
	srv.waitCheckpoint(t)
	if got := srv.log.Size(); got != 5 {
		t.Fatalf("the rebuilt log holds %d leaves, want 5", got)
	}

	t.Run("rolled back", func(t *testing.T) {
		r := watch(t, srv.url, "--grace", "0s")
		if r.code != exitVerify || !strings.Contains(r.stderr, "FORK") {
			t.Fatalf("watch of a log with fewer leaves: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("rewritten", func(t *testing.T) {
		srv.outcomes(t, 1) // 7 leaves: more than seen, but not an extension of it
		if err := os.WriteFile(state, kept, 0o644); err != nil {
			t.Fatal(err)
		}
		r := watch(t, srv.url)
		if r.code != exitVerify || !strings.Contains(r.stderr, "FORK") || !strings.Contains(r.stderr, "not an extension of 6") {
			t.Fatalf("watch of a rewritten log: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		after, err := os.ReadFile(state)
		if err != nil || !bytes.Equal(after, kept) {
			t.Fatalf("the state file changed on a fork: %s", after)
		}
	})
}

// FuzzParseLogState checks that a state file is read without a panic, and that what
// is accepted holds a checkpoint signed by the key it names.
func FuzzParseLogState(f *testing.F) {
	key, err := crypto.NewSigningKey(logKeySeed)
	if err != nil {
		f.Fatal(err)
	}
	l, err := tlog.Open(tlog.Options{Dir: f.TempDir(), Key: key})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := jsonState(l.Origin(), crypto.EncodeBase58(key.PublicKey()), string(l.Checkpoint()))
	l.Close()
	if _, _, err := parseLogState(good); err != nil {
		f.Fatalf("the state log watch writes is refused: %v", err)
	}
	f.Add(good)
	f.Add([]byte(`{"origin":"x","public_key":"","checkpoint":""}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, cp, err := parseLogState(data)
		if err != nil {
			return
		}
		if cp.Origin != st.Origin {
			t.Fatalf("accepted a checkpoint of %q in the state of %q", cp.Origin, st.Origin)
		}
	})
}

func jsonState(origin, key, cp string) ([]byte, error) {
	return json.Marshal(&logState{Origin: origin, PublicKey: key, Checkpoint: cp})
}

// BenchmarkGetProof measures serving a proof over HTTP from a server with a log: the
// bundle with the outcome's leaf, its inclusion proof and the checkpoint. It reports
// the median of the requests' times beside the mean.
func BenchmarkGetProof(b *testing.B) {
	lookupEnv = func(string) (string, bool) { return "", false }
	srv := startLogServer(b, b.TempDir())
	var ids []string
	for range 50 {
		r := runCLI(b, srv.url, "demo", "--wait", "10s")
		if r.code != 0 {
			b.Fatalf("demo: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for _, m := range demoIDs.FindAllStringSubmatch(r.stdout, -1) {
			ids = append(ids, m[1])
		}
	}
	srv.waitCheckpoint(b)
	c := &http.Client{}
	var times []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		resp, err := c.Get(srv.url + "/intents/" + ids[i%len(ids)] + "/proof")
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"leaf_index"`)) {
			b.Fatalf("GET proof: %d %s %v", resp.StatusCode, body, err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
}

var demoIDs = regexp.MustCompile(`event \d+: intent ([0-9a-f-]{36})`)
