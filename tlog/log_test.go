package tlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/syncbuf"
	iproof "github.com/intentd/intentd/proof"
)

// fakeSource is an in-memory event stream with receipts: what an engine gives a log.
type fakeSource struct {
	key *crypto.SigningKey

	mu       sync.Mutex
	events   []intentd.Event
	receipts map[string]json.RawMessage
	pruned   uint64 // the events with an id at most this are no longer retained
	changed  chan struct{}
	// failProof makes Proof fail this many times before it answers.
	failProof int
	// carry makes the events added carry what their decision knows of the receipt:
	// carryReceipt the receipt alone (a node that has not computed its digest),
	// carryBoth the receipt and its digest (those decided on the log's own node),
	// carryDigest the digest alone (those a store carried from another node). reads
	// counts the receipts read from the source.
	carry int
	reads int
}

func newFakeSource(t testing.TB) *fakeSource {
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	return &fakeSource{key: key, receipts: map[string]json.RawMessage{}, changed: make(chan struct{})}
}

// add appends n outcomes, with ids that skip numbers as a replicated store's may; every
// third is an expiry and has no receipt.
func (s *fakeSource) add(t *testing.T, n int) []intentd.Event {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var added []intentd.Event
	for range n {
		id := uint64(1)
		if len(s.events) > 0 {
			id = s.events[len(s.events)-1].ID + 1 + uint64(len(s.events)%2)
		}
		intent := uuid.NewString()
		ev := intentd.Event{ID: id, IntentID: intent, At: time.Unix(int64(id), 0)}
		if len(s.events)%3 == 2 {
			ev.Type = intentd.StateExpired
			ev.Data = fmt.Appendf(nil, `{"type":"expired","intent_id":%q}`, intent)
		} else {
			ev.Type = intentd.StateSuccess
			ev.Data = fmt.Appendf(nil, `{"type":"success","intent_id":%q,"proposal":{"solution":"s"},"evidence":{}}`, intent)
			s.receipts[intent] = s.bundle(t, intent)
		}
		if s.carry != carryNothing {
			ev.Decided = &intentd.Decided{Receipt: s.receipts[intent]}
			if s.carry != carryReceipt && len(ev.Decided.Receipt) > 0 {
				d, err := crypto.Digest(ev.Decided.Receipt)
				if err != nil {
					t.Fatal(err)
				}
				ev.Decided.ReceiptDigest = d
			}
			if s.carry == carryDigest {
				ev.Decided.Receipt = nil
			}
		}
		s.events = append(s.events, ev)
		added = append(added, ev)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return added
}

func (s *fakeSource) bundle(t *testing.T, intent string) json.RawMessage {
	d, _ := crypto.Digest([]byte(`{}`))
	sum := sha256.Sum256([]byte("policy"))
	r, err := crypto.SignReceipt(s.key, crypto.Receipt{Version: crypto.ReceiptVersion, IntentID: intent, PolicyID: crypto.EncodeBase58(sum[:]),
		AuthoredIntentDigest: d, ProposalDigest: d, EvidenceDigest: d, Outcome: crypto.OutcomeSuccess, IssuedAt: time.Unix(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (s *fakeSource) Subscribe(_ context.Context, from uint64, f intentd.Filter) (intentd.Subscription, error) {
	if !f.Patient {
		// The log takes its leaves late as well: a store that paces its events need
		// not hurry them for it (intentd.EventPacer).
		return nil, errors.New("the transparency log subscribes without saying it is patient")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &fakeSub{s: s, after: from, truncated: from < s.pruned}, nil
}

func (s *fakeSource) Receipt(_ context.Context, id string) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.failProof > 0 {
		s.failProof--
		return nil, intentd.Errorf(intentd.KindBusy, intentd.CodeStoreUnavailable, "the store did not answer")
	}
	return s.receipts[id], nil
}

type fakeSub struct {
	s         *fakeSource
	after     uint64
	truncated bool
}

// next returns the first retained event after the subscription's place, or a channel
// closed when there may be one.
func (f *fakeSub) next() (*intentd.Event, chan struct{}) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	for i := range f.s.events {
		if ev := &f.s.events[i]; ev.ID > f.after && ev.ID > f.s.pruned {
			return ev, nil
		}
	}
	return nil, f.s.changed
}

func (f *fakeSub) Next(ctx context.Context) (intentd.Event, error) {
	for {
		ev, wait := f.next()
		if ev != nil {
			f.after = ev.ID
			return *ev, nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return intentd.Event{}, ctx.Err()
		}
	}
}

func (f *fakeSub) Pending() bool            { ev, _ := f.next(); return ev != nil }
func (f *fakeSub) Filling() <-chan struct{} { return nil }
func (f *fakeSub) Truncated() bool          { return f.truncated }
func (f *fakeSub) Close()                   {}

// run runs a log over src until it holds want leaves, then stops it.
func run(t *testing.T, l *Log, src Source, want uint64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, src) }()
	deadline := time.Now().Add(10 * time.Second)
	for l.Size() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if got := l.Size(); got != want {
		t.Fatalf("the log holds %d leaves, want %d", got, want)
	}
}

func openLog(t *testing.T, dir string, key *crypto.SigningKey) *Log {
	t.Helper()
	l, err := Open(Options{Dir: dir, Key: key, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// mth is the Merkle tree hash of RFC 6962 section 2.1, computed from its definition.
func mth(leaves [][]byte) []byte {
	switch n := len(leaves); n {
	case 0:
		h := sha256.Sum256(nil)
		return h[:]
	case 1:
		return rfc6962.DefaultHasher.HashLeaf(leaves[0])
	default:
		k := 1
		for k*2 < n {
			k *= 2
		}
		return rfc6962.DefaultHasher.HashChildren(mth(leaves[:k]), mth(leaves[k:]))
	}
}

// wantEntries are the entries a log must make of events.
func wantEntries(t *testing.T, src *fakeSource, evs []intentd.Event) [][]byte {
	var out [][]byte
	for _, ev := range evs {
		sum := sha256.Sum256(ev.Data)
		e := intentd.LogEntry{EventID: ev.ID, Type: ev.Type, IntentID: ev.IntentID, EventDigest: crypto.EncodeBase58(sum[:])}
		if raw, ok := src.receipts[ev.IntentID]; ok {
			e.ReceiptDigest, _ = crypto.Digest(raw)
		}
		out = append(out, intentd.MarshalLogEntry(e))
	}
	return out
}

// checkpointOf verifies a log's checkpoint and returns it.
func checkpointOf(t *testing.T, l *Log, key *crypto.SigningKey) *log.Checkpoint {
	t.Helper()
	cp, err := iproof.ParseCheckpoint(l.Checkpoint(), l.Origin(), key.PublicKey())
	if err != nil {
		t.Fatalf("checkpoint %q: %v", l.Checkpoint(), err)
	}
	return cp
}

// TestLogIsRFC6962 checks the log against the definitions: its root against RFC 6962's
// Merkle tree hash, each tile against the nodes it holds, each bundle against its
// entries, each inclusion proof against the root, for trees across tile edges.
func TestLogIsRFC6962(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 255, 256, 257, 600} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := newFakeSource(t)
			evs := src.add(t, n)
			l := openLog(t, t.TempDir(), src.key)
			defer l.Close()
			run(t, l, src, uint64(n))
			entries := wantEntries(t, src, evs)
			if _, err := l.publish(); err != nil {
				t.Fatal(err)
			}
			cp := checkpointOf(t, l, src.key)
			if cp.Size != uint64(n) || !bytes.Equal(cp.Hash, mth(entries)) {
				t.Fatalf("checkpoint %d %x, want %d %x", cp.Size, cp.Hash, n, mth(entries))
			}
			for tile := 0; tile*TileWidth < n; tile++ {
				lo, hi := tile*TileWidth, min(n, (tile+1)*TileWidth)
				var hashes, bundle []byte
				for _, e := range entries[lo:hi] {
					hashes = append(hashes, rfc6962.DefaultHasher.HashLeaf(e)...)
					bundle = binary.BigEndian.AppendUint16(bundle, uint16(len(e)))
					bundle = append(bundle, e...)
				}
				if got, err := l.Tile(0, uint64(tile), hi-lo); err != nil || !bytes.Equal(got, hashes) {
					t.Errorf("tile 0/%d.p/%d: %x, %v", tile, hi-lo, got, err)
				}
				if got, err := l.Entries(uint64(tile), hi-lo); err != nil || !bytes.Equal(got, bundle) {
					t.Errorf("entries %d.p/%d: %v", tile, hi-lo, err)
				}
				if _, err := l.Tile(0, uint64(tile), hi-lo+1); hi-lo < TileWidth && intentd.ErrorCode(err) != intentd.CodeLogNotFound {
					t.Errorf("tile 0/%d.p/%d beyond the log: %v, want log_not_found", tile, hi-lo+1, err)
				}
			}
			if n >= 2*TileWidth {
				want := append(mth(entries[:TileWidth]), mth(entries[TileWidth:2*TileWidth])...)
				if got, err := l.Tile(1, 0, 2); err != nil || !bytes.Equal(got, want) {
					t.Errorf("tile 1/0.p/2: %x, %v; want %x", got, err, want)
				}
			}
			for i, ev := range evs {
				inc, err := l.Inclusion(ev.IntentID)
				if err != nil || inc == nil {
					t.Fatalf("inclusion of leaf %d: %v, %v", i, inc, err)
				}
				if inc.LeafIndex != uint64(i) || !bytes.Equal(inc.Entry, entries[i]) {
					t.Fatalf("inclusion of leaf %d: index %d, entry %s", i, inc.LeafIndex, inc.Entry)
				}
				if err := proof.VerifyInclusion(rfc6962.DefaultHasher, inc.LeafIndex, cp.Size, iproof.LeafHash(inc.Entry), inc.InclusionProof, cp.Hash); err != nil {
					t.Fatalf("inclusion of leaf %d: %v", i, err)
				}
			}
			for _, index := range []uint64{1 << 56, 1<<64 - 1} {
				if _, err := l.Tile(0, index, 1); intentd.ErrorCode(err) != intentd.CodeLogNotFound {
					t.Errorf("tile 0/%d, whose leaves wrap around: %v", index, err)
				}
				if _, err := l.Entries(index, 1); intentd.ErrorCode(err) != intentd.CodeLogNotFound {
					t.Errorf("bundle %d, whose leaves wrap around: %v", index, err)
				}
			}
			if inc, err := l.Inclusion(uuid.NewString()); inc != nil || err != nil {
				t.Errorf("inclusion of an intent not in the log: %v, %v", inc, err)
			}
		})
	}
}

// TestLogRestarts checks that a log reopened goes on as one that never stopped: the
// same leaves, the same checkpoint, the same tree once more events come.
func TestLogRestarts(t *testing.T) {
	src := newFakeSource(t)
	src.add(t, 300)
	dir := t.TempDir()
	l := openLog(t, dir, src.key)
	run(t, l, src, 300)
	if _, err := l.publish(); err != nil {
		t.Fatal(err)
	}
	before := l.Checkpoint()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	src.add(t, 10)
	l = openLog(t, dir, src.key)
	defer l.Close()
	if got := l.Checkpoint(); !bytes.Equal(got, before) {
		t.Fatalf("reopened, the checkpoint is\n%s\nwant\n%s", got, before)
	}
	run(t, l, src, 310)

	// A log that never stopped, on another node, makes the same bytes.
	other := openLog(t, t.TempDir(), src.key)
	defer other.Close()
	run(t, other, src, 310)
	if _, err := l.publish(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.publish(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l.Checkpoint(), other.Checkpoint()) {
		t.Fatalf("two nodes on one stream sign\n%s\nand\n%s", l.Checkpoint(), other.Checkpoint())
	}
}

// TestLogOutlivesPruning checks that pruned events stay in the log, and that a log
// that would have to start after pruned events refuses to: its tree would be another.
func TestLogOutlivesPruning(t *testing.T) {
	src := newFakeSource(t)
	evs := src.add(t, 20)
	dir := t.TempDir()
	l := openLog(t, dir, src.key)
	run(t, l, src, 20)
	src.mu.Lock()
	src.pruned = evs[15].ID
	src.mu.Unlock()
	if inc, err := l.Inclusion(evs[0].IntentID); err != nil || inc == nil || inc.LeafIndex != 0 {
		t.Fatalf("inclusion of a pruned event: %v, %v", inc, err)
	}
	src.add(t, 5)
	run(t, l, src, 25)
	l.Close()

	fresh := openLog(t, t.TempDir(), src.key)
	defer fresh.Close()
	if err := fresh.Run(context.Background(), src); !errors.Is(err, ErrGap) {
		t.Fatalf("a new log over a pruned stream: %v, want ErrGap", err)
	}
	if fresh.Size() != 0 {
		t.Fatalf("the new log holds %d leaves", fresh.Size())
	}
}

// TestLogWaitsForReceipts checks that a receipt the source cannot give yet is waited
// for, not left out of the leaf.
func TestLogWaitsForReceipts(t *testing.T) {
	src := newFakeSource(t)
	evs := src.add(t, 2)
	src.failProof = 2
	l := openLog(t, t.TempDir(), src.key)
	defer l.Close()
	run(t, l, src, 2)
	inc, err := l.Inclusion(evs[0].IntentID)
	if err != nil || inc == nil {
		t.Fatal(inc, err)
	}
	if !bytes.Equal(inc.Entry, wantEntries(t, src, evs[:1])[0]) {
		t.Fatalf("entry %s lacks its receipt", inc.Entry)
	}
}

// What fakeSource's events carry of their receipts.
const (
	carryNothing = iota
	carryReceipt
	carryBoth
	carryDigest
)

// TestLogTakesCarriedReceipts checks that the receipts, or their digests, events carry
// make the same leaves as those read from the source, and that none is read then.
func TestLogTakesCarriedReceipts(t *testing.T) {
	for name, carry := range map[string]int{"the receipt": carryReceipt, "the receipt and its digest": carryBoth, "the digest alone": carryDigest} {
		t.Run(name, func(t *testing.T) {
			src := newFakeSource(t)
			src.carry = carry
			evs := src.add(t, 9)
			l := openLog(t, t.TempDir(), src.key)
			defer l.Close()
			run(t, l, src, 9)
			want := wantEntries(t, src, evs)
			for i, ev := range evs {
				inc, err := l.Inclusion(ev.IntentID)
				if err != nil || inc == nil {
					t.Fatal(inc, err)
				}
				if !bytes.Equal(inc.Entry, want[i]) {
					t.Errorf("entry %d: %s, want %s", i, inc.Entry, want[i])
				}
			}
			src.mu.Lock()
			defer src.mu.Unlock()
			if src.reads != 0 {
				t.Errorf("%d receipts read from the source, want none", src.reads)
			}
		})
	}
}

// TestCheckpointCadence checks that a checkpoint follows new leaves within the
// interval, without anyone asking.
func TestCheckpointCadence(t *testing.T) {
	src := newFakeSource(t)
	l := openLog(t, t.TempDir(), src.key)
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Run(ctx, src)
	src.add(t, 3)
	deadline := time.Now().Add(5 * time.Second)
	for checkpointOf(t, l, src.key).Size != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of 3 leaves; the newest is\n%s", l.Checkpoint())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkInclusion measures the log's part of serving a proof: the leaf's index, its
// entry and its inclusion proof against the newest checkpoint, in a log of a million
// leaves (made once, in b's first run, with the leaves written directly).
func BenchmarkInclusion(b *testing.B) {
	key, err := crypto.NewSigningKey(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		b.Fatal(err)
	}
	l, err := Open(Options{Dir: b.TempDir(), Key: key})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const n = 1_000_000
	ids := make([]string, 0, n)
	d, _ := crypto.Digest([]byte(`{}`))
	batch := make([]leaf, 0, 4096)
	for i := range n {
		id := uuid.NewString()
		ids = append(ids, id)
		batch = append(batch, leaf{uint64(i + 1), intentd.LogEntry{EventID: uint64(i + 1), Type: intentd.StateSuccess, IntentID: id, EventDigest: d, ReceiptDigest: d}})
		if len(batch) == cap(batch) || i == n-1 {
			if err := l.append(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := l.publish(); err != nil {
		b.Fatal(err)
	}
	// A log written over days has its tables compacted; one written in a second has
	// not, and would measure the compactions still due.
	if err := l.db.Compact([]byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		inc, err := l.Inclusion(ids[(i*7919)%n])
		if err != nil || inc == nil {
			b.Fatal(inc, err)
		}
	}
}

// TestOpenFailureLeavesNoWatch opens a log whose folder Pebble refuses: the watch of
// its files' operations stops with the failed open, as it does with Close, rather than
// run for as long as the process.
func TestOpenFailureLeavesNoWatch(t *testing.T) {
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	before := watches()
	if err := openLog(t, dir, key).Close(); err != nil {
		t.Fatal(err)
	}
	waitWatches(t, before, "Close")
	if err := os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := Open(Options{Dir: dir, Key: key}); err == nil {
		l.Close()
		t.Fatal("a log whose CURRENT names no manifest was opened")
	}
	waitWatches(t, before, "a failed Open")
}

// watches counts the goroutines of Pebble's watch for slow file operations.
func watches() int {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "vfs.(*diskHealthCheckingFS)") {
			n++
		}
	}
	return n
}

// waitWatches waits up to 5 s for the watches to fall back to want: a closed watch's
// goroutine ends soon after, not at once.
func waitWatches(t *testing.T, want int, after string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for watches() > want {
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %d goroutines of the disk watch run, want %d", after, watches(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDamagedFolder opens a log whose folder lost or garbled a file while the log was
// closed: each is refused with an error naming the folder and saying to remove it, never
// a panic, and a log opened on the folder's place once it is removed starts afresh.
func TestDamagedFolder(t *testing.T) {
	tests := []struct {
		name string
		file string // the file damaged: removed when text is empty
		text string
		want string
	}{
		{"CURRENT missing", "CURRENT", "", "the file CURRENT is missing"},
		{"CURRENT names no manifest", "CURRENT", "MANIFEST-999999\n", "MANIFEST-999999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newFakeSource(t)
			src.add(t, 10)
			dir := t.TempDir()
			l := openLog(t, dir, src.key)
			run(t, l, src, 10)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tt.file)
			if tt.text == "" {
				err := os.Remove(path)
				if err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := Open(Options{Dir: dir, Key: src.key})
			if err == nil {
				l.Close()
				t.Fatal("a damaged folder was opened")
			}
			msg := err.Error()
			if !strings.Contains(msg, dir) || !strings.Contains(msg, tt.want) || !strings.Contains(msg, "remove the folder") || strings.Contains(msg, "\n") {
				t.Fatalf("Open = %v; want one line naming %s, saying %q and to remove the folder", err, dir, tt.want)
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, dir, src.key)
			defer l.Close()
			run(t, l, src, 10)
		})
	}
}

// TestFolderRemovedWhileRunning removes the folder of a log that is appending, as `rm
// -rf` on a running server would: when Pebble gives up, the process ends with exit
// code 1 and one line naming the folder and what to do, without a goroutine dump. It
// runs the log in a process of its own, this test binary started again.
func TestFolderRemovedWhileRunning(t *testing.T) {
	if dir := os.Getenv("TLOG_TEST_REMOVED_DIR"); dir != "" {
		appendAfterRemoval(t, dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "tlog")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFolderRemovedWhileRunning$")
	cmd.Env = append(os.Environ(), "TLOG_TEST_REMOVED_DIR="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the process ended with %v, want exit code 1\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	var rec struct{ Level, Msg, Dir string }
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil || rec.Level != "ERROR" || rec.Msg != FatalMsg || rec.Dir != dir {
		t.Fatalf("the process wrote\n%s\nwant one error line %q naming %s", stderr.Bytes(), FatalMsg, dir)
	}
}

// appendAfterRemoval opens a log in dir, removes the folder and appends leaves until
// Pebble needs a new file there, which ends the process.
func appendAfterRemoval(t *testing.T, dir string) {
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(Options{Dir: dir, Key: key, Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	d, _ := crypto.Digest([]byte(`{}`))
	batch := make([]leaf, 0, TileWidth)
	// Far more than the memtable holds: Pebble makes a new log file when it is full.
	for i := range 1 << 20 {
		id := uint64(i + 1)
		batch = append(batch, leaf{id, intentd.LogEntry{EventID: id, Type: intentd.StateSuccess, IntentID: uuid.NewString(), EventDigest: d, ReceiptDigest: d}})
		if len(batch) == cap(batch) {
			if err := l.append(batch); err != nil {
				t.Fatalf("append: %v", err)
			}
			batch = batch[:0]
		}
	}
	t.Fatal("a log whose folder was removed took a million leaves")
}

// TestDamagedTable garbles the data blocks of the log's table under a running log, as a
// failing disk would: reading a tile, a bundle or a leaf there is an internal error, to
// be logged and answered as one, never a log_not_found that says the checkpoint's leaves
// are not in the log.
func TestDamagedTable(t *testing.T) {
	src := newFakeSource(t)
	evs := src.add(t, 600)
	dir := t.TempDir()
	l := openLog(t, dir, src.key)
	defer l.Close()
	run(t, l, src, 600)
	if _, err := l.publish(); err != nil {
		t.Fatal(err)
	}
	if err := l.db.Flush(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table after a flush")
	}
	for _, name := range tables {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		// A byte in every 512 of the first four fifths: every data block, and none of
		// the index and footer at the end, so that the table still opens.
		for off := 0; off < len(b)*4/5; off += 512 {
			b[off] ^= 0xff
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		read func() error
	}{
		{"tile", func() error { _, err := l.Tile(0, 0, TileWidth); return err }},
		{"partial tile", func() error { _, err := l.Tile(0, 2, 600-2*TileWidth); return err }},
		{"entry bundle", func() error { _, err := l.Entries(0, TileWidth); return err }},
		{"partial entry bundle", func() error { _, err := l.Entries(2, 600-2*TileWidth); return err }},
		{"inclusion", func() error { _, err := l.Inclusion(evs[0].IntentID); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.read()
			if err == nil || intentd.ErrorKind(err) != intentd.KindInternal || intentd.ErrorCode(err) != intentd.CodeInternal {
				t.Fatalf("read of a damaged table: %v (code %s), want an internal error", err, intentd.ErrorCode(err))
			}
		})
	}
}

// TestKeyChange reopens a log with another key or origin than the ones that signed its
// checkpoint: another key is refused unless the change is accepted, another origin is
// refused, and a log goes on, its checkpoint signed again over the same tree, under an
// accepted key, or when it holds no leaf.
func TestKeyChange(t *testing.T) {
	other, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		leaves  int
		key     *crypto.SigningKey // nil: the key that signed the log
		origin  string
		accept  bool
		refused bool
		// originRefused: Open fails with an *OriginError.
		originRefused bool
	}{
		{name: "same key", leaves: 5},
		{name: "another key", leaves: 5, key: other, refused: true},
		{name: "another key, accepted", leaves: 5, key: other, accept: true},
		{name: "another key, empty log", key: other},
		{name: "another origin", leaves: 5, origin: "example.com/log", originRefused: true},
		{name: "another origin, empty log", origin: "example.com/log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newFakeSource(t)
			evs := src.add(t, tt.leaves)
			dir := t.TempDir()
			l := openLog(t, dir, src.key)
			run(t, l, src, uint64(tt.leaves))
			if _, err := l.publish(); err != nil {
				t.Fatal(err)
			}
			before := checkpointOf(t, l, src.key)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}

			key := src.key
			if tt.key != nil {
				key = tt.key
			}
			var logs syncbuf.Buffer
			opts := Options{Dir: dir, Key: key, Origin: tt.origin, AcceptKeyChange: tt.accept, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			l, err := Open(opts)
			if tt.originRefused {
				var oe *OriginError
				if !errors.As(err, &oe) || oe.Dir != dir || oe.Size != uint64(tt.leaves) || oe.Origin != DefaultOrigin(src.key) || oe.Want != tt.origin {
					if err == nil {
						l.Close()
					}
					t.Fatalf("Open = %v, want an OriginError of %s, %d leaves, origin %s", err, dir, tt.leaves, DefaultOrigin(src.key))
				}
				return
			}
			if tt.refused {
				var ke *KeyError
				if !errors.As(err, &ke) || ke.Dir != dir || ke.Size != uint64(tt.leaves) || ke.Origin != DefaultOrigin(src.key) || ke.KeyID != key.ID() {
					if err == nil {
						l.Close()
					}
					t.Fatalf("Open = %v, want a KeyError of %s, %d leaves, origin %s, key %s", err, dir, tt.leaves, DefaultOrigin(src.key), key.ID())
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer func() { l.Close() }() // the log last opened
			after := checkpointOf(t, l, key)
			if after.Size != before.Size || !bytes.Equal(after.Hash, before.Hash) {
				t.Fatalf("reopened, the checkpoint is of %d leaves, root %x; before it was %d, %x", after.Size, after.Hash, before.Size, before.Hash)
			}
			if warned := strings.Contains(logs.String(), "level=WARN"); warned != (tt.leaves > 0 && (tt.key != nil || tt.origin != "")) {
				t.Errorf("reopened, the log wrote\n%s", logs.String())
			}
			// The log goes on, and its next start accepts no change: the checkpoint
			// it keeps is signed by its key now.
			src.add(t, 2)
			run(t, l, src, uint64(tt.leaves+2))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			opts.AcceptKeyChange = false
			if l, err = Open(opts); err != nil {
				t.Fatalf("Open after the change: %v", err)
			}
			if tt.leaves > 0 {
				if inc, err := l.Inclusion(evs[0].IntentID); err != nil || inc == nil {
					t.Fatalf("inclusion of the first leaf after the change: %v, %v", inc, err)
				}
			}
		})
	}
}
