package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/intentd/intentd"
)

// testMandates holds a store to intentd.MandateStore, on a store that has it: a record
// reads back as written, at a revision above 0; an id is created once; a write names
// the revision it read, and one that names another is refused and writes nothing, so
// that of writers racing from one revision exactly one writes; and the records and
// their revisions survive a reopen. The engine serializes a mandate's decisions on
// nothing else, across the members of a cluster.
func testMandates(t *testing.T, open func(*testing.T) Store) {
	s := open(t)
	ms, ok := s.(intentd.MandateStore)
	if !ok {
		s.Close()
		t.Skip("the store keeps no mandates")
	}
	defer func() { s.Close() }()

	large := make([]byte, 64<<10)
	for i := range large {
		large[i] = byte(i * 7 % 251) // zero bytes included
	}
	stored := map[string][]byte{} // what each id should read back
	revs := map[string]uint64{}
	t.Run("create and read back", func(t *testing.T) {
		for _, tc := range []struct {
			name, id string
			record   []byte
		}{
			{"a record", "m1", []byte(`{"spent":0}`)},
			{"an empty record", "m2", []byte{}},
			{"a record of 64 KiB", "m3", large},
			{"an id that is not a subject token", "m.4 x", []byte("r4")},
		} {
			if err := ms.CreateMandate(ctx, tc.id, tc.record); err != nil {
				t.Fatalf("%s: CreateMandate(%s): %v", tc.name, tc.id, err)
			}
			rev := mustReadMandate(t, ms, tc.id, tc.record)
			stored[tc.id], revs[tc.id] = tc.record, rev
		}
	})

	t.Run("a taken id", func(t *testing.T) {
		if err := ms.CreateMandate(ctx, "m1", []byte("again")); !errors.Is(err, intentd.ErrExists) {
			t.Fatalf("CreateMandate of a taken id: %v, want ErrExists", err)
		}
		if rev := mustReadMandate(t, ms, "m1", stored["m1"]); rev != revs["m1"] {
			t.Fatalf("a refused create moved the revision from %d to %d", revs["m1"], rev)
		}
	})

	t.Run("a missing id", func(t *testing.T) {
		if _, _, err := ms.Mandate(ctx, "nope"); !errors.Is(err, intentd.ErrNotFound) {
			t.Fatalf("Mandate of an id never created: %v, want ErrNotFound", err)
		}
	})

	t.Run("update", func(t *testing.T) {
		testMandateUpdates(t, ms, stored, revs)
	})

	t.Run("racing writers", func(t *testing.T) {
		testMandateRace(t, ms)
	})

	t.Run("reopen", func(t *testing.T) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(t)
		ms = s.(intentd.MandateStore)
		for id, record := range stored {
			if rev := mustReadMandate(t, ms, id, record); rev != revs[id] {
				t.Errorf("mandate %s after a reopen: revision %d, want %d", id, rev, revs[id])
			}
		}
		next, err := ms.UpdateMandate(ctx, "m1", []byte("after a reopen"), revs["m1"], true)
		if err != nil || next <= revs["m1"] {
			t.Fatalf("UpdateMandate after a reopen = %d, %v; want a revision above %d", next, err, revs["m1"])
		}
		if rev := mustReadMandate(t, ms, "m1", []byte("after a reopen")); rev != next {
			t.Fatalf("revision %d read back, %d written", rev, next)
		}
	})

	t.Run("closed", func(t *testing.T) {
		s.Close()
		if err := ms.CreateMandate(ctx, "m9", nil); !errors.Is(err, intentd.ErrStoreClosed) {
			t.Errorf("CreateMandate after Close: %v, want ErrStoreClosed", err)
		}
		if _, _, err := ms.Mandate(ctx, "m1"); !errors.Is(err, intentd.ErrStoreClosed) {
			t.Errorf("Mandate after Close: %v, want ErrStoreClosed", err)
		}
		if _, err := ms.UpdateMandate(ctx, "m1", nil, 1, true); !errors.Is(err, intentd.ErrStoreClosed) {
			t.Errorf("UpdateMandate after Close: %v, want ErrStoreClosed", err)
		}
	})
}

// testMandateUpdates writes mandate m1 from its revision and from others, and updates
// mandates that are not stored, keeping stored and revs as the store should hold them.
func testMandateUpdates(t *testing.T, ms intentd.MandateStore, stored map[string][]byte, revs map[string]uint64) {
	old := revs["m1"]
	next, err := ms.UpdateMandate(ctx, "m1", []byte(`{"spent":5}`), old, true)
	if err != nil || next <= old {
		t.Fatalf("UpdateMandate from the current revision = %d, %v; want a revision above %d", next, err, old)
	}
	if rev := mustReadMandate(t, ms, "m1", []byte(`{"spent":5}`)); rev != next {
		t.Fatalf("revision %d read back, %d written", rev, next)
	}
	stored["m1"], revs["m1"] = []byte(`{"spent":5}`), next
	// Without sync a record is read at once, and is on disk by the next outcome or the
	// store's close (the reopen below reads it).
	unsynced, err := ms.UpdateMandate(ctx, "m1", []byte(`{"spent":7}`), next, false)
	if err != nil || unsynced <= next {
		t.Fatalf("UpdateMandate without sync = %d, %v; want a revision above %d", unsynced, err, next)
	}
	if rev := mustReadMandate(t, ms, "m1", []byte(`{"spent":7}`)); rev != unsynced {
		t.Fatalf("revision %d read back, %d written without sync", rev, unsynced)
	}
	if _, err := ms.UpdateMandate(ctx, "m1", []byte("stale"), next, false); !errors.Is(err, intentd.ErrStale) {
		t.Fatalf("UpdateMandate without sync from the revision before it: %v, want ErrStale", err)
	}
	old, next = next, unsynced
	stored["m1"], revs["m1"] = []byte(`{"spent":7}`), next
	// Revisions are per mandate in their meaning only: a store may number them from
	// one counter (a stream's sequence), so another mandate's revision is not m1's.
	for _, tc := range []struct {
		name, id string
		rev      uint64
	}{
		{"from the revision before", "m1", old},
		{"from a revision not yet written", "m1", next + 1},
		{"from revision 0", "m1", 0},
		{"of a mandate not stored", "nope", next},
		{"of a mandate not stored, from revision 0", "nope", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ms.UpdateMandate(ctx, tc.id, []byte("stale"), tc.rev, true)
			if !errors.Is(err, intentd.ErrStale) {
				t.Fatalf("UpdateMandate(%s, %d): %v, want ErrStale", tc.id, tc.rev, err)
			}
			if _, _, err := ms.Mandate(ctx, "nope"); !errors.Is(err, intentd.ErrNotFound) {
				t.Fatalf("Mandate of an id never created: %v, want ErrNotFound", err)
			}
			if rev := mustReadMandate(t, ms, "m1", stored["m1"]); rev != revs["m1"] {
				t.Fatalf("a refused update moved the revision from %d to %d", revs["m1"], rev)
			}
		})
	}
}

// testMandateRace has many writers read one mandate, all before any writes, then each
// write from the revision it read: exactly one may succeed, and its record stands.
func testMandateRace(t *testing.T, ms intentd.MandateStore) {
	if err := ms.CreateMandate(ctx, "raced", []byte("start")); err != nil {
		t.Fatal(err)
	}
	const writers = 20
	var read, wrote sync.WaitGroup
	read.Add(writers)
	start := make(chan struct{})
	revs := make([]uint64, writers)
	errs := make([]error, writers)
	for i := range writers {
		wrote.Go(func() {
			_, rev, err := ms.Mandate(ctx, "raced")
			read.Done()
			if err != nil {
				errs[i] = fmt.Errorf("read: %w", err)
				return
			}
			<-start
			revs[i], errs[i] = ms.UpdateMandate(ctx, "raced", fmt.Appendf(nil, "writer %d", i), rev, true)
		})
	}
	read.Wait()
	close(start)
	wrote.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("writers %d and %d both wrote from one revision", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, intentd.ErrStale):
			t.Errorf("writer %d: %v, want success or ErrStale", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d writers from one revision wrote", writers)
	}
	if rev := mustReadMandate(t, ms, "raced", fmt.Appendf(nil, "writer %d", winner)); rev != revs[winner] {
		t.Fatalf("revision %d read back, %d written", rev, revs[winner])
	}
}

// mustReadMandate reads mandate id, which must hold record at a revision above 0, and
// returns the revision.
func mustReadMandate(t *testing.T, ms intentd.MandateStore, id string, record []byte) uint64 {
	t.Helper()
	got, rev, err := ms.Mandate(ctx, id)
	if err != nil {
		t.Fatalf("Mandate(%s): %v", id, err)
	}
	if !bytes.Equal(got, record) {
		t.Fatalf("Mandate(%s) = %d bytes %.40q, want %d bytes %.40q", id, len(got), got, len(record), record)
	}
	if rev == 0 {
		t.Fatalf("Mandate(%s): revision 0, want one above 0", id)
	}
	return rev
}
