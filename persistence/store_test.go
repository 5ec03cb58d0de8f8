package persistence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/benchcpu"
	"github.com/intentd/intentd/storetest"
)

// event is the event of a success of intent id, as the engine makes it.
func event(id string) intentd.Event {
	ev, err := intentd.NewEvent(intentd.Status{State: intentd.StateSuccess, IntentID: id, Proposal: &intentd.Proposal{Solution: "s"}})
	if err != nil {
		panic(err)
	}
	return ev
}

// ctx is the context of the store calls: Pebble does not wait on it.
var ctx = context.Background()

func openMem(t testing.TB, fs FS) *Store {
	t.Helper()
	s, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func mustCreate(t *testing.T, s *Store, id, policy, snap string) {
	t.Helper()
	if err := s.CreateIntent(ctx, id, policy, []byte(snap), t0); err != nil {
		t.Fatalf("CreateIntent(%s): %v", id, err)
	}
}

// finish writes the outcome of intent id, created with deadline t0, as the engine does:
// over its processing record, which it writes first when the intent is open.
func finish(s *Store, id, policy string, snapshot []byte) (uint64, error) {
	return storetest.BeginAndFinish(ctx, s, id, policy, snapshot, t0, event(id))
}

// TestReopen writes every kind of record, closes the store and finds them all again.
func TestReopen(t *testing.T) {
	fs := NewMemFS()
	s := openMem(t, fs)
	s.PutPolicy(ctx, "P", []byte{7}, []byte("src"))
	mustCreate(t, s, "open", "P", "o")
	mustCreate(t, s, "proc", "P", "p")
	s.BeginProcessing(ctx, "proc", "P", []byte("p2"), t0)
	mustCreate(t, s, "done", "P", "d")
	id, err := finish(s, "done", "P", []byte("d2"))
	if err != nil || id != 1 {
		t.Fatalf("Finish = %d, %v; want event 1", id, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openMem(t, fs)
	defer s.Close()
	if bc, src, err := s.Policy(ctx, "P"); err != nil || string(bc) != "\x07" || string(src) != "src" {
		t.Fatalf("policy after reopen = %q %q %v", bc, src, err)
	}
	for id, want := range map[string]string{"open": "o", "proc": "p2", "done": "d2"} {
		if got, err := s.Intent(ctx, id); err != nil || string(got) != want {
			t.Errorf("intent %s after reopen = %q, %v; want %q", id, got, err, want)
		}
	}
	if ids, _ := s.Processing(ctx); len(ids) != 1 || ids[0] != "proc" {
		t.Errorf("processing after reopen = %v", ids)
	}
	if ids, _ := s.DueExpiries(ctx, t0, 10); len(ids) != 1 || ids[0] != "open" {
		t.Errorf("due after reopen = %v", ids)
	}
	if err := s.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Errorf("references lost on reopen: delete = %v", err)
	}
	mustCreate(t, s, "next", "P", "n")
	if id, err := finish(s, "next", "P", nil); err != nil || id != 2 {
		t.Fatalf("first event after reopen = %d, %v; want 2", id, err)
	}
}

// TestFinishOrder checks that concurrent terminal writes get gapless ids and that the
// sink hears them in id order, each once.
func TestFinishOrder(t *testing.T) {
	s := openMem(t, NewMemFS())
	defer s.Close()
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	var mu sync.Mutex
	var heard []uint64
	s.SetEventSink(func(e intentd.Event) {
		mu.Lock()
		heard = append(heard, e.ID)
		mu.Unlock()
	})
	const n = 300
	var wg sync.WaitGroup
	ids := make([]uint64, n)
	for i := range n {
		id := fmt.Sprintf("i%03d", i)
		mustCreate(t, s, id, "P", "o")
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev, err := finish(s, id, "P", []byte("t"))
			if err != nil {
				t.Error(err)
			}
			ids[i] = ev
		}()
	}
	wg.Wait()
	seen := make(map[uint64]bool)
	for _, id := range ids {
		if id < 1 || id > n || seen[id] {
			t.Fatalf("event id %d out of range or repeated", id)
		}
		seen[id] = true
	}
	for i, id := range heard {
		if id != uint64(i+1) {
			t.Fatalf("sink heard %v, want 1..%d in order", heard, n)
		}
	}
	var replayed []string
	s.Events(ctx, 0, n, func(e intentd.Event) error {
		replayed = append(replayed, e.IntentID)
		return nil
	})
	if len(replayed) != n {
		t.Fatalf("replayed %d events, want %d", len(replayed), n)
	}
	for i, id := range ids {
		if replayed[id-1] != fmt.Sprintf("i%03d", i) {
			t.Fatalf("event %d carries %q, want i%03d", id, replayed[id-1], i)
		}
	}
}

func TestPruneEvents(t *testing.T) {
	s := openMem(t, NewMemFS())
	defer s.Close()
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	for i := range 10 {
		id := fmt.Sprint(i)
		mustCreate(t, s, id, "P", "o")
		if _, err := finish(s, id, "P", nil); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneEvents(ctx, 7, time.Time{})
	if err != nil || n != 3 {
		t.Fatalf("prune to 7 = %d, %v; want 3 deleted", n, err)
	}
	first, last, _ := s.EventBounds(ctx)
	if first != 4 || last != 10 {
		t.Fatalf("bounds = %d..%d, want 4..10", first, last)
	}
	n, err = s.PruneEvents(ctx, 100, time.Now().Add(time.Hour))
	if err != nil || n != 7 {
		t.Fatalf("prune by age = %d, %v; want 7 deleted", n, err)
	}
	first, last, _ = s.EventBounds(ctx)
	if first != 0 || last != 10 {
		t.Fatalf("bounds after pruning all = %d..%d, want 0..10: ids must not restart", first, last)
	}
	mustCreate(t, s, "x", "P", "o")
	if id, _ := finish(s, "x", "P", nil); id != 11 {
		t.Fatalf("next id = %d, want 11", id)
	}
}

// BenchmarkCreateIntentParallel measures synced intent creation from 64 writers on the
// real file system, the write path of POST /intents, with what the service writes: ids
// that are random UUIDs (so each key lands at a random place in the memtable), a
// snapshot the size of a signed demo intent's, and deadlines that grow with time. The
// CPU it reports per intent counts the WAL's fsyncs and Pebble's flushes and
// compactions, which run on goroutines of their own: it is what the store adds to the
// bare server's path for each intent taken in.
func BenchmarkCreateIntentParallel(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	snap := make([]byte, 720)
	var n atomic.Int64
	b.SetParallelism(32) // 64 writers on 2 cores
	b.ResetTimer()
	cpu := benchcpu.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if err := s.CreateIntent(ctx, uuid.NewString(), "P", snap, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	benchcpu.ReportMicros(b, cpu, "intent")
}

// BenchmarkFinishParallel measures synced terminal writes through the committer, of
// intents made processing before the timer starts.
func BenchmarkFinishParallel(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	snap := make([]byte, 800)
	for i := range b.N {
		id := fmt.Sprintf("%036d", i+1)
		if err := s.CreateIntent(ctx, id, "P", snap, t0); err != nil {
			b.Fatal(err)
		}
		if err := s.BeginProcessing(ctx, id, "P", snap, t0); err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("%036d", n.Add(1))
			if _, err := s.Finish(ctx, id, "P", snap, t0, event(id)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestSyncInterval checks that the WAL pauses between fsyncs only for a crowd of writers,
// and longer for a throng.
func TestSyncInterval(t *testing.T) {
	var writers atomic.Int64
	interval := syncInterval(&writers)
	for _, tc := range []struct {
		writers int64
		want    time.Duration
	}{{0, 0}, {1, 0}, {syncCrowd, syncWait}, {syncThrong - 1, syncWait}, {syncThrong, syncThrongWait}, {64, syncThrongWait}} {
		writers.Store(tc.writers)
		if got := interval(); got != tc.want {
			t.Errorf("%d writers: pause %v, want %v", tc.writers, got, tc.want)
		}
	}
}

// TestConformance runs the behaviour every store must have on Pebble: policies, the
// intent lifecycle and its indexes, racing creates, expiry, reopening, closing. The tests
// below are what Pebble promises beyond it: gapless event ids, exact pruning.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func(*testing.T) storetest.Store {
		fs := NewMemFS()
		return func(t *testing.T) storetest.Store { return stepped{openMem(t, fs)} }
	})
}

// stepped shows storetest the store's writes (storetest.Stepped).
type stepped struct{ *Store }

func (s stepped) AroundFirstStep(before, after func()) {
	s.beforeFirstStep, s.afterFirstStep = before, after
}
