package persistence

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// TestMandateCorrupt reads mandate values that no write makes, too short for a revision
// or of revision 0: each is an error that says the record is corrupt, never a panic, a
// not-found that would let a create write over it, or a revision to write from.
func TestMandateCorrupt(t *testing.T) {
	s := openMem(t, NewMemFS())
	defer s.Close()
	for _, tc := range []struct {
		name  string
		value []byte
	}{
		{"empty", nil},
		{"7 bytes", []byte{0, 0, 0, 0, 0, 0, 1}},
		{"revision 0", []byte{0, 0, 0, 0, 0, 0, 0, 0, 'r'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "corrupt " + tc.name
			if err := s.db.Set(key(prefixMandate, id), tc.value, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Mandate(ctx, id); err == nil || !strings.Contains(err.Error(), "corrupt") {
				t.Errorf("Mandate: %v, want an error saying the record is corrupt", err)
			}
			for _, rev := range []uint64{0, 1} {
				if _, err := s.UpdateMandate(ctx, id, []byte("x"), rev, true); err == nil || !strings.Contains(err.Error(), "corrupt") {
					t.Errorf("UpdateMandate from %d: %v, want an error saying the record is corrupt", rev, err)
				}
			}
			if err := s.CreateMandate(ctx, id, []byte("x")); !errors.Is(err, intentd.ErrExists) {
				t.Errorf("CreateMandate over it: %v, want ErrExists", err)
			}
		})
	}
}

// TestMandateKeyLeavesEventSeq creates and updates the mandate whose key under the
// prefix 'm' would be the event sequence's: the events go on from where they were.
func TestMandateKeyLeavesEventSeq(t *testing.T) {
	fs := NewMemFS()
	s := openMem(t, fs)
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	mustCreate(t, s, "i1", "P", "o")
	first, err := finish(s, "i1", "P", []byte("d"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateMandate(ctx, "seq", []byte{0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatalf("CreateMandate(seq): %v", err)
	}
	if _, err := s.UpdateMandate(ctx, "seq", []byte{0, 0, 0, 0, 0, 0, 0, 0}, 1, true); err != nil {
		t.Fatalf("UpdateMandate(seq): %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	defer s.Close()
	mustCreate(t, s, "i2", "P", "o")
	if next, err := finish(s, "i2", "P", []byte("d")); err != nil || next <= first {
		t.Fatalf("event after the mandate and a reopen = %d, %v; want one after %d", next, err, first)
	}
}

// TestMandateUnsyncedWrites: a record written without sync is read at once; it goes
// to disk with the next outcome, and survives a crash after that outcome; and, when no
// outcome comes, within flushAfter on its own.
func TestMandateUnsyncedWrites(t *testing.T) {
	ctx := context.Background()
	mem := crashableFS(t)
	opts := Options{FS: FS{fs: mem}}
	s, err := Open("data", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPolicy(ctx, "P", []byte("bytecode"), []byte("source")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateMandate(ctx, "m", []byte("new")); err != nil {
		t.Fatal(err)
	}
	rev, err := s.UpdateMandate(ctx, "m", []byte("decided"), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, r, err := s.Mandate(ctx, "m"); err != nil || string(got) != "decided" || r != rev {
		t.Fatalf("read before any outcome: %q at %d (%v), want %q at %d", got, r, err, "decided", rev)
	}
	if _, err := storetest.BeginAndFinish(ctx, s, "i", "P", []byte("done"), time.Now().Add(time.Hour), storetest.Event("i")); err != nil {
		t.Fatal(err)
	}
	s = crash(t, s, mem, opts)
	if got, r, err := s.Mandate(ctx, "m"); err != nil || string(got) != "decided" || r != rev {
		t.Fatalf("after an outcome and a crash: %q at %d (%v), want %q at %d", got, r, err, "decided", rev)
	}

	rev, err = s.UpdateMandate(ctx, "m", []byte("alone"), rev, false)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(flushAfter + 500*time.Millisecond)
	s = crash(t, s, mem, opts)
	defer s.Close()
	if got, r, err := s.Mandate(ctx, "m"); err != nil || string(got) != "alone" || r != rev {
		t.Fatalf("written alone, then a crash: %q at %d (%v), want %q at %d", got, r, err, "alone", rev)
	}
}
