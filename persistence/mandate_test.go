package persistence

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
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
