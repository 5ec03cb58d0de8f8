package tlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/torchwood"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/benchcpu"
	iproof "github.com/intentd/intentd/proof"
)

// fakeWitness is a C2SP tlog-witness in memory: it keeps the size and root it last
// cosigned for one log, checks the log's signature and the consistency proof, and
// cosigns with torchwood's signer. The end-to-end tests run litewitness instead.
type fakeWitness struct {
	t      testing.TB
	name   string
	signer *torchwood.CosignatureSigner
	srv    *httptest.Server

	mu     sync.Mutex
	origin string
	logKey note.Verifier // nil: the log is unknown (404)
	size   uint64
	root   []byte
	status []int // every status answered
}

func newFakeWitness(t testing.TB, name string) *fakeWitness {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := torchwood.NewCosignatureSigner(name, priv)
	if err != nil {
		t.Fatal(err)
	}
	w := &fakeWitness{t: t, name: name, signer: s}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *fakeWitness) register(l *Log) {
	v, err := note.NewVerifier(l.VerifierKey())
	if err != nil {
		w.t.Fatal(err)
	}
	w.mu.Lock()
	w.origin, w.logKey = l.Origin(), v
	w.mu.Unlock()
}

func (w *fakeWitness) line() string {
	return fmt.Sprintf("witness %s %s %s\n", w.name, w.signer.Verifier().String(), w.srv.URL)
}

func (w *fakeWitness) answered() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.status...)
}

func (w *fakeWitness) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	status, answer := w.add(body)
	w.mu.Lock()
	w.status = append(w.status, status)
	w.mu.Unlock()
	if status == http.StatusConflict {
		rw.Header().Set("Content-Type", "text/x.tlog.size")
	}
	rw.WriteHeader(status)
	rw.Write(answer)
}

func (w *fakeWitness) add(body []byte) (int, []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	head, signed, ok := bytes.Cut(body, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	oldText, ok2 := strings.CutPrefix(lines[0], "old ")
	old, err := strconv.ParseUint(oldText, 10, 64)
	if !ok || !ok2 || err != nil {
		return http.StatusBadRequest, []byte("bad request\n")
	}
	if w.logKey == nil {
		return http.StatusNotFound, []byte("unknown log\n")
	}
	cp, _, n, err := log.ParseCheckpoint(signed, w.origin, w.logKey)
	if err != nil {
		return http.StatusForbidden, []byte("no trusted signature\n")
	}
	if old != w.size {
		return http.StatusConflict, fmt.Appendf(nil, "%d\n", w.size)
	}
	var p [][]byte
	for _, h := range lines[1:] {
		b, _ := base64.StdEncoding.DecodeString(h)
		p = append(p, b)
	}
	if old > 0 {
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, old, cp.Size, p, w.root, cp.Hash); err != nil {
			return http.StatusUnprocessableEntity, []byte("bad consistency proof\n")
		}
	}
	w.size, w.root = cp.Size, cp.Hash
	c, err := note.Sign(&note.Note{Text: n.Text}, w.signer)
	if err != nil {
		w.t.Error(err)
		return http.StatusInternalServerError, nil
	}
	_, sigs, _ := bytes.Cut(c, []byte("\n\n"))
	return http.StatusOK, sigs
}

// witnessedLog opens a log with the witnesses under a 2-of-3 policy, registered
// with those that register, asked each 50 ms.
func witnessedLog(t *testing.T, src *fakeSource, ws []*fakeWitness, register ...bool) *Log {
	t.Helper()
	text := ""
	for _, w := range ws {
		text += w.line()
	}
	text += "group g 2"
	for _, w := range ws {
		text += " " + w.name
	}
	p, err := iproof.ParsePolicy([]byte(text + "\nquorum g\n"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(Options{Dir: t.TempDir(), Key: src.key, Origin: "log.example.com/intentd", Interval: 10 * time.Millisecond,
		Witnesses: p, WitnessInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i, w := range ws {
		if i >= len(register) || register[i] {
			w.register(l)
		}
	}
	return l
}

// runFor runs the log over src until ctx ends, and returns its stop.
func runFor(t *testing.T, l *Log, src Source) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, src) }()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWitnesses(t *testing.T) {
	tests := []struct {
		name     string
		down     int    // witnesses stopped before the log starts
		register []bool // witnesses that know the log (all when nil)
		quorum   bool
		alarms   int // witnesses that must show an alarm
		failures int // witnesses that must count failures
	}{
		{name: "all three cosign", quorum: true},
		{name: "one down", down: 1, quorum: true, failures: 1},
		{name: "two down", down: 2, failures: 2},
		{name: "one does not know the log", register: []bool{true, true, false}, quorum: true, alarms: 1},
		{name: "none knows the log", register: []bool{false, false, false}, alarms: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newFakeSource(t)
			evs := src.add(t, 5)
			ws := []*fakeWitness{newFakeWitness(t, "w1.example"), newFakeWitness(t, "w2.example"), newFakeWitness(t, "w3.example")}
			l := witnessedLog(t, src, ws, tt.register...)
			for _, w := range ws[len(ws)-tt.down:] {
				w.srv.Close()
			}
			stop := runFor(t, l, src)
			defer stop()
			waitFor(t, "5 leaves", func() bool { return l.Size() == 5 })
			inc, wit, err := l.InclusionWitnessed(context.Background(), evs[4].IntentID)
			if err != nil || inc == nil || wit == nil {
				t.Fatalf("InclusionWitnessed: %v, %v, %v", inc, wit, err)
			}
			if wit.QuorumMet != tt.quorum {
				t.Fatalf("quorum met %v, want %v (%+v; witnesses %+v)", wit.QuorumMet, tt.quorum, wit, l.Witnesses())
			}
			p := l.wit.policy
			names, qerr := p.CheckQuorum([]byte(inc.Checkpoint))
			if (qerr == nil) != tt.quorum {
				t.Fatalf("the bundle's checkpoint: cosigners %v, %v", names, qerr)
			}
			if tt.quorum {
				if len(names) != 3-tt.down-tt.alarms || wit.Message != "" {
					t.Errorf("cosigners %v, message %q", names, wit.Message)
				}
				if _, err := p.CheckQuorum(l.Checkpoint()); err != nil {
					t.Errorf("/log/checkpoint: %v", err)
				}
				if n := l.Uncosigned(); n != 0 {
					t.Errorf("%d leaves uncosigned", n)
				}
			} else {
				if !strings.Contains(wit.Message, "no checkpoint that covers leaf 4") {
					t.Errorf("message %q", wit.Message)
				}
				if n := l.Uncosigned(); n != 5 {
					t.Errorf("%d leaves uncosigned, want 5", n)
				}
			}
			// The inclusion verifies against its checkpoint, cosigned or not.
			cp, err := iproof.ParseCheckpoint([]byte(inc.Checkpoint), l.Origin(), src.key.PublicKey())
			if err != nil {
				t.Fatal(err)
			}
			if err := proof.VerifyInclusion(rfc6962.DefaultHasher, inc.LeafIndex, cp.Size, iproof.LeafHash(inc.Entry), inc.InclusionProof, cp.Hash); err != nil {
				t.Fatal(err)
			}
			alarms, failures := 0, 0
			for _, st := range l.Witnesses() {
				if st.Alarm != "" && st.Alarms > 0 {
					alarms++
				}
				if st.Error != "" && st.Failures > 0 {
					failures++
				}
			}
			if alarms != tt.alarms || failures != tt.failures {
				t.Errorf("%d alarms and %d failures, want %d and %d: %+v", alarms, failures, tt.alarms, tt.failures, l.Witnesses())
			}
		})
	}
}

// TestWitnessesFollowTheLog checks the protocol over a growing log: each new
// checkpoint is sent with a consistency proof from the witness's size, a witness that
// forgot the log (a size it did not cosign) is resynchronised through 409, and a
// witness that holds another tree answers 422, which is an alarm not retried for the
// same checkpoint.
func TestWitnessesFollowTheLog(t *testing.T) {
	src := newFakeSource(t)
	evs := src.add(t, 3)
	ws := []*fakeWitness{newFakeWitness(t, "w1.example"), newFakeWitness(t, "w2.example"), newFakeWitness(t, "w3.example")}
	l := witnessedLog(t, src, ws)
	stop := runFor(t, l, src)
	defer stop()
	waitFor(t, "a cosigned checkpoint of 3", func() bool { c := l.wit.cosigned.Load(); return c != nil && c.size == 3 })

	// w2 loses its state of the log: it knows it at size 0 again, so the log's
	// request from size 3 is answered 409 0, and the log sends the checkpoint again
	// from 0. w3 is given another tree of 3 leaves.
	ws[1].mu.Lock()
	ws[1].size, ws[1].root = 0, nil
	ws[1].mu.Unlock()
	ws[2].mu.Lock()
	ws[2].root = bytes.Repeat([]byte{1}, 32)
	ws[2].mu.Unlock()
	evs = append(evs, src.add(t, 4)...)
	waitFor(t, "a cosigned checkpoint of 7", func() bool { c := l.wit.cosigned.Load(); return c != nil && c.size == 7 })
	if _, wit, err := l.InclusionWitnessed(context.Background(), evs[6].IntentID); err != nil || !wit.QuorumMet || len(wit.Cosigners) != 2 {
		t.Fatalf("inclusion of leaf 6: %+v, %v", wit, err)
	}
	got := ws[1].answered()
	if !containsRun(got, http.StatusConflict, http.StatusOK) {
		t.Errorf("w2 answered %v, want a 409 then a 200", got)
	}
	waitFor(t, "w3's alarm", func() bool { return l.Witnesses()[2].Alarm != "" })
	st := l.Witnesses()[2]
	if !strings.HasPrefix(st.Alarm, "422") || st.Cosigned != 3 {
		t.Errorf("w3: %+v", st)
	}
	// Rounds go on at 50 ms; w3 is not asked again about the checkpoint it refused.
	n := len(ws[2].answered())
	time.Sleep(300 * time.Millisecond)
	if m := len(ws[2].answered()); m != n {
		t.Errorf("w3 was asked %d more times about the checkpoint it refused", m-n)
	}
}

func containsRun(s []int, a, b int) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == a && s[i+1] == b {
			return true
		}
	}
	return false
}

// FuzzCosignatureLines feeds the reading of a witness's answer arbitrary bytes after a
// true cosignature: it keeps only lines that verify, and never what the witness did
// not sign.
func FuzzCosignatureLines(f *testing.F) {
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		f.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := torchwood.NewCosignatureSigner("w.example", priv)
	if err != nil {
		f.Fatal(err)
	}
	v, err := iproof.NewCosignatureVerifier(s.Verifier().String())
	if err != nil {
		f.Fatal(err)
	}
	signer, _, err := newSigner("log.example.com/intentd", key)
	if err != nil {
		f.Fatal(err)
	}
	text := "log.example.com/intentd\n3\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n"
	signed, err := note.Sign(&note.Note{Text: text}, signer)
	if err != nil {
		f.Fatal(err)
	}
	c, err := note.Sign(&note.Note{Text: text}, s)
	if err != nil {
		f.Fatal(err)
	}
	_, line, _ := bytes.Cut(c, []byte("\n\n"))
	f.Add(line, []byte(""))
	f.Add(line, []byte("— w.example AAAA\n"))
	f.Add([]byte("— other x\n"), line)
	f.Fuzz(func(t *testing.T, answer, more []byte) {
		got := cosignatureLines(signed, v, append(append([]byte(nil), answer...), more...))
		if got == nil {
			return
		}
		n, err := note.Open(append(append([]byte(nil), signed...), got...), note.VerifierList(v))
		if err != nil || len(n.Sigs) == 0 {
			t.Fatalf("kept lines %q that do not verify: %v", got, err)
		}
	})
}

// BenchmarkWitnessRound measures one round of asking three witnesses (in memory, over
// loopback HTTP) to cosign a checkpoint of a log grown by 16 leaves: the consistency
// proofs, the requests and the checks of the answers. Its CPU is what witnessing adds
// to a node at each interval, beside the decide path, which it does not touch; the
// witnesses' own work is in it too, since they run in the same process.
func BenchmarkWitnessRound(b *testing.B) {
	src := newFakeSource(b)
	ws := []*fakeWitness{newFakeWitness(b, "w1.example"), newFakeWitness(b, "w2.example"), newFakeWitness(b, "w3.example")}
	text := ""
	for _, w := range ws {
		text += w.line()
	}
	p, err := iproof.ParsePolicy([]byte(text + "group g 2 w1.example w2.example w3.example\nquorum g\n"))
	if err != nil {
		b.Fatal(err)
	}
	l, err := Open(Options{Dir: b.TempDir(), Key: src.key, Origin: "log.example.com/intentd", Witnesses: p, WitnessInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for _, w := range ws {
		w.register(l)
	}
	ctx := context.Background()
	var next uint64 = 1
	grow := func() {
		var batch []leaf
		for range 16 {
			d := crypto.EncodeBase58(bytes.Repeat([]byte{byte(next)}, 32))
			batch = append(batch, leaf{eventID: next, entry: intentd.LogEntry{EventID: next, Type: intentd.StateSuccess,
				IntentID: fmt.Sprintf("00000000-0000-4000-8000-%012d", next), EventDigest: d, ReceiptDigest: d}})
			next++
		}
		if err := l.append(batch); err != nil {
			b.Fatal(err)
		}
	}
	grow()
	l.wit.round(ctx, false)
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		grow()
		b.StartTimer()
		start := benchcpu.Now()
		l.wit.round(ctx, false)
		cpu += benchcpu.Now() - start
	}
	b.StopTimer()
	// The CPU of the round alone, the fake witnesses' side (their checks and
	// cosignatures) included: the process serves both.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/round")
	if c := l.wit.cosigned.Load(); c == nil || c.size != next-1 {
		b.Fatalf("the last round left no cosigned checkpoint of %d leaves", next-1)
	}
}
