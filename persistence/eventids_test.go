package persistence

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/intentd/intentd"
)

// finishN creates and finishes n intents named from first on, one Finish each, and
// returns the event ids handed out.
func finishN(t *testing.T, s *Store, first, n int) []uint64 {
	t.Helper()
	ids := make([]uint64, n)
	for i := range n {
		id := fmt.Sprintf("i%04d", first+i)
		mustCreate(t, s, id, "P", "o")
		ev, err := finish(s, id, "P", []byte("done"))
		if err != nil {
			t.Fatalf("Finish(%s): %v", id, err)
		}
		ids[i] = ev
	}
	return ids
}

// lostEvents makes a store in a folder of its own that handed out the event ids 1 to n,
// closes it, and cuts its write-ahead log in half, as a failing disk would after the
// fsync: the later events are lost. It returns the folder.
func lostEvents(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	s := openWithPolicy(t, dir)
	finishN(t, s, 0, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if logs := damageLogs(t, dir, func(b []byte) []byte { return b[:len(b)/2] }); len(logs) != 1 {
		t.Fatalf("log files %v, want one", logs)
	}
	return dir
}

// TestNoEventIDTwiceAfterLoss opens, with AcceptDataLoss, a store that lost the last of
// the 40 events it handed out: the next event gets an id past 40, the lost ids stay a
// gap that readers of the log skip, the ids after it are gapless across restarts, and
// no event reads as pruned.
func TestNoEventIDTwiceAfterLoss(t *testing.T) {
	dir := lostEvents(t, 40)
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrDataLoss) {
		t.Fatalf("Open of a store that lost events = %v, want ErrDataLoss", err)
	}
	s, err := Open(dir, Options{AcceptDataLoss: true})
	if err != nil {
		t.Fatal(err)
	}
	kept := lastEvent(t, s)
	if kept >= 40 {
		t.Fatalf("the last event after the loss is %d, want an event lost", kept)
	}
	next := finishN(t, s, 100, 3)
	if next[0] <= 40 || next[1] != next[0]+1 || next[2] != next[1]+1 {
		t.Fatalf("the events after the loss have ids %v, want ids past 40, in a row", next)
	}
	var read []uint64
	err = s.Events(ctx, 0, 1000, func(ev intentd.Event) error { read = append(read, ev.ID); return nil })
	if err != nil || len(read) != int(kept)+3 || read[kept-1] != kept || read[kept] != next[0] {
		t.Fatalf("the log after the loss reads %v, %v; want 1 to %d, then %v", read, err, kept, next)
	}
	// A reader that saw a lost event resumes with the new ones.
	read = nil
	s.Events(ctx, 40, 1000, func(ev intentd.Event) error { read = append(read, ev.ID); return nil })
	if len(read) != 3 || read[0] != next[0] {
		t.Fatalf("the events after 40 are %v, want %v", read, next)
	}
	if p, err := s.PrunedThrough(ctx); err != nil || p != 0 {
		t.Fatalf("PrunedThrough after the loss = %d, %v; want 0, nothing was pruned", p, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after the loss was accepted: %v", err)
	}
	defer s.Close()
	if again := finishN(t, s, 200, 1); again[0] != next[2]+1 {
		t.Fatalf("the first event after a restart is %d, want %d", again[0], next[2]+1)
	}
}

// TestNoEventIDTwiceBeforeAnyNew accepts the loss of a store's events twice, with no
// event between: the ids of neither loss are handed out again, and once every event
// before the two gaps is pruned, the newest pruned is the last that survived, not an
// id of the gaps.
func TestNoEventIDTwiceBeforeAnyNew(t *testing.T) {
	dir := lostEvents(t, 40)
	s, err := Open(dir, Options{AcceptDataLoss: true})
	if err != nil {
		t.Fatal(err)
	}
	kept := lastEvent(t, s)
	if _, err := s.PruneEvents(ctx, 0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if p, err := s.PrunedThrough(ctx); err != nil || p != kept {
		t.Fatalf("PrunedThrough with every event pruned = %d, %v; want %d", p, err, kept)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The second loss: the mark is raised as if the store had handed out 2,000 ids
	// more since, and lost them.
	m := readMarkFile(t, dir)
	m.writes, m.events, m.issued = m.writes+1, m.events+2000, m.issued+2000
	if err := writeMark(vfs.Default, dir, m); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{AcceptDataLoss: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if next := finishN(t, s, 100, 1); next[0] <= m.issued {
		t.Fatalf("the event after two losses is %d, want past %d", next[0], m.issued)
	}
	if p, err := s.PrunedThrough(ctx); err != nil || p != kept {
		t.Fatalf("PrunedThrough after two gaps and an event = %d, %v; want %d", p, err, kept)
	}
}

// TestPruneCountsEventsNotIDs prunes a store whose ids have a gap: it keeps as many
// events as it is told, not as many ids.
func TestPruneCountsEventsNotIDs(t *testing.T) {
	dir := lostEvents(t, 40)
	s, err := Open(dir, Options{AcceptDataLoss: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, kept := firstEvent(t, s), lastEvent(t, s)
	// The sequence record holds the gap's end before any event comes after it, so that
	// a version that knows no gaps numbers on from there; EventBounds names the last
	// event the log holds.
	if seq, err := s.readSeq(); err != nil || seq <= kept {
		t.Fatalf("after the accepted loss, the sequence record holds %d, %v: the last kept event's (%d), not the gap's end", seq, err, kept)
	}
	if _, last, _ := s.EventBounds(ctx); last != kept {
		t.Fatalf("after the accepted loss, EventBounds's last is %d, want the last kept event's, %d", last, kept)
	}
	next := finishN(t, s, 100, 5)
	if n, err := s.PruneEvents(ctx, 8, t0); err != nil || n != int(kept-first+1)+5-8 {
		t.Fatalf("PruneEvents(8) = %d, %v, want %d events deleted", n, err, int(kept-first+1)+5-8)
	}
	var read []uint64
	s.Events(ctx, 0, 1000, func(ev intentd.Event) error { read = append(read, ev.ID); return nil })
	if len(read) != 8 || read[0] != kept-2 || read[3] != next[0] {
		t.Fatalf("after keeping 8 events the log reads %v, want %d to %d, then %v", read, kept-2, kept, next)
	}
	if p, _ := s.PrunedThrough(ctx); p != kept-3 {
		t.Fatalf("PrunedThrough = %d, want %d", p, kept-3)
	}
	// Four across the gap: three before it, one after.
	if n, err := s.PruneEvents(ctx, 4, t0); err != nil || n != 4 {
		t.Fatalf("PruneEvents(4) across the gap = %d, %v, want 4 events deleted", n, err)
	}
	if p, _ := s.PrunedThrough(ctx); p != next[0] {
		t.Fatalf("PrunedThrough past the gap = %d, want %d", p, next[0])
	}
}

// TestMarkCoversEventIDs hands out event ids from many writers at once, faster than the
// mark's own updates: when an id is handed out, the mark on disk already puts the
// ceiling of ids at or above it, so that a loss of the log's end never brings an id
// back.
func TestMarkCoversEventIDs(t *testing.T) {
	fs := NewMemFS()
	s := openMem(t, fs)
	defer s.Close()
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 600 {
				id := fmt.Sprintf("w%d-%d", w, i)
				if err := s.CreateIntent(ctx, id, "P", []byte("o"), t0); err != nil {
					errs <- err
					return
				}
				ev, err := finish(s, id, "P", []byte("done"))
				if err != nil {
					errs <- err
					return
				}
				m, ok, err := readMark(fs.fs, "db")
				if err != nil || !ok || m.issued < ev {
					errs <- fmt.Errorf("event %d handed out while the mark's ceiling is %d (%v, %v)", ev, m.issued, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// firstEvent and lastEvent are the ids of the oldest and the newest event the store
// holds, 0 for none, read from the log itself.
func firstEvent(t *testing.T, s *Store) uint64 {
	t.Helper()
	var first uint64
	err := s.Events(ctx, 0, 1, func(ev intentd.Event) error { first = ev.ID; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return first
}

func lastEvent(t *testing.T, s *Store) uint64 {
	t.Helper()
	var last uint64
	err := s.Events(ctx, 0, math.MaxInt, func(ev intentd.Event) error { last = ev.ID; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return last
}
