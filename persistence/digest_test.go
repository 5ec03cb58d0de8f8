package persistence

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// framed is the digest's input for records given in key order: each key and value
// preceded by its length, as Digest documents.
func framed(kvs ...string) [32]byte {
	var b []byte
	for _, s := range kvs {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	return sha256.Sum256(b)
}

func digest(t *testing.T, s *Store) [32]byte {
	t.Helper()
	d, err := s.Digest()
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

func TestDigestRecords(t *testing.T) {
	tests := []struct {
		name string
		set  [][2]string // written in this order
		want [32]byte
	}{
		{"empty store", nil, framed()},
		{"one record", [][2]string{{"a", "1"}}, framed("a", "1")},
		{"key order, not write order", [][2]string{{"b", "2"}, {"a", "1"}}, framed("a", "1", "b", "2")},
		{"empty value", [][2]string{{"a", ""}}, framed("a", "")},
		// Without framing these two would hash the same bytes "abc".
		{"boundary in the key", [][2]string{{"ab", "c"}}, framed("ab", "c")},
		{"boundary in the value", [][2]string{{"a", "bc"}}, framed("a", "bc")},
		{"last write wins", [][2]string{{"a", "1"}, {"a", "2"}}, framed("a", "2")},
	}
	seen := map[[32]byte]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openMem(t, NewMemFS())
			defer s.Close()
			for _, kv := range tt.set {
				if err := s.db.Set([]byte(kv[0]), []byte(kv[1]), pebble.Sync); err != nil {
					t.Fatal(err)
				}
			}
			got := digest(t, s)
			if got != tt.want {
				t.Fatalf("Digest = %x, want %x", got, tt.want)
			}
			if other, ok := seen[got]; ok {
				t.Fatalf("digest equals that of %q", other)
			}
			seen[got] = tt.name
		})
	}
}

// TestDigestFollowsWrites checks the digest through the store's own operations: every
// write changes it, a refused write does not, and it survives a re-open.
func TestDigestFollowsWrites(t *testing.T) {
	fs := NewMemFS()
	s := openMem(t, fs)
	empty := digest(t, s)

	if _, err := s.PutPolicy(ctx, "P1", []byte{1}, []byte("name a")); err != nil {
		t.Fatal(err)
	}
	withPolicy := digest(t, s)
	if withPolicy == empty {
		t.Fatal("PutPolicy left the digest unchanged")
	}
	if created, err := s.PutPolicy(ctx, "P1", []byte{1}, []byte("name a # again")); err != nil || created {
		t.Fatalf("second PutPolicy = %v, %v", created, err)
	}
	if digest(t, s) != withPolicy {
		t.Fatal("a PutPolicy that stores nothing changed the digest")
	}
	if err := s.CreateIntent(ctx, "I1", "P2", []byte("{}"), t0); !errors.Is(err, intentd.ErrPolicyNotFound) {
		t.Fatalf("CreateIntent with no policy: %v", err)
	}
	if digest(t, s) != withPolicy {
		t.Fatal("a refused CreateIntent changed the digest")
	}
	if err := s.CreateIntent(ctx, "I1", "P1", []byte("{}"), t0); err != nil {
		t.Fatal(err)
	}
	withIntent := digest(t, s)
	if withIntent == withPolicy {
		t.Fatal("CreateIntent left the digest unchanged")
	}
	if err := s.BeginProcessing(ctx, "I1", "P1", []byte(`{"p":1}`), t0); err != nil {
		t.Fatal(err)
	}
	processing := digest(t, s)
	if processing == withIntent {
		t.Fatal("BeginProcessing left the digest unchanged")
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Digest(); !errors.Is(err, intentd.ErrStoreClosed) {
		t.Fatalf("Digest after Close: %v, want intentd.ErrStoreClosed", err)
	}
	s = openMem(t, fs)
	defer s.Close()
	if got := digest(t, s); got != processing {
		t.Fatalf("digest after re-open = %x, want %x", got, processing)
	}
}

// TestDigestLeavesOutLogBundles checks that the transparency log's bundles, which the log
// writes on its own timer, do not change the digest, and that the records beside them do.
func TestDigestLeavesOutLogBundles(t *testing.T) {
	s := openMem(t, NewMemFS())
	defer s.Close()
	before := digest(t, s)
	for i, b := range []string{"\x00\x01a", "\x00\x01a\x00\x01b"} {
		if err := s.PutLogBundle(t.Context(), uint64(i), []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if got := digest(t, s); got != before {
		t.Fatalf("log bundles changed the digest: %x -> %x", before[:6], got[:6])
	}
	if _, err := s.PutPolicy(t.Context(), "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	if got := digest(t, s); got == before {
		t.Fatal("a policy beside the bundles left the digest unchanged")
	}
}
