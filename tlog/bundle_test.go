package tlog

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseBundle(t *testing.T) {
	full := make([][]byte, TileWidth)
	for i := range full {
		full[i] = []byte{byte(i), 'x'}
	}
	for _, tc := range []struct {
		name    string
		in      []byte
		entries int
		err     string
	}{
		{"empty", nil, 0, ""},
		{"one", AppendBundle(nil, []byte("a")), 1, ""},
		{"two", AppendBundle(nil, []byte("a"), []byte("bc")), 2, ""},
		{"full", AppendBundle(nil, full...), TileWidth, ""},
		{"too many", AppendBundle(AppendBundle(nil, full...), []byte("a")), 0, "more than 256"},
		{"half a length", []byte{0}, 0, "cut short"},
		{"empty entry", []byte{0, 0}, 0, "empty"},
		{"short entry", []byte{0, 3, 'a', 'b'}, 0, "3 bytes, 2 remain"},
		{"longest entry", AppendBundle(nil, bytes.Repeat([]byte{'a'}, 65535)), 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBundle(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseBundle: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != tc.entries {
				t.Fatalf("ParseBundle: %d entries, %v; want %d", len(got), err, tc.entries)
			}
			if !bytes.Equal(AppendBundle(nil, got...), tc.in) {
				t.Fatal("the entries do not make the bundle again")
			}
		})
	}
}

// FuzzParseBundle checks that whatever ParseBundle accepts is exactly the bundle its
// entries make again, within the limits of the layout, and that it never panics.
func FuzzParseBundle(f *testing.F) {
	f.Add([]byte{})
	f.Add(AppendBundle(nil, []byte(`{"event_id":1}`), []byte("b")))
	f.Add([]byte{0, 5, 'a'})
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := ParseBundle(b)
		if err != nil {
			return
		}
		if len(entries) > TileWidth {
			t.Fatalf("%d entries", len(entries))
		}
		for i, e := range entries {
			if len(e) == 0 {
				t.Fatalf("entry %d is empty", i)
			}
		}
		if !bytes.Equal(AppendBundle(nil, entries...), b) {
			t.Fatal("the entries do not make the bundle again")
		}
	})
}
