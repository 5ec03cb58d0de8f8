package storeformat

import (
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Record
		wantErr string
	}{
		{"record", `{"format":3,"written_by":"v1.2.3"}`, Record{3, "v1.2.3"}, ""},
		{"no writer", `{"format":2}`, Record{Format: 2}, ""},
		{"members of a later version", `{"format":9,"written_by":"v9","since":"x"}`, Record{9, "v9"}, ""},
		{"empty", ``, Record{}, "not a JSON object"},
		{"a number", `3`, Record{}, "not a JSON object"},
		{"no format", `{"written_by":"v1"}`, Record{}, `no member "format"`},
		{"zero", `{"format":0}`, Record{}, "formats start at 1"},
		{"a string", `{"format":"3"}`, Record{}, "not a JSON object"},
		{"trailing", `{"format":3} {}`, Record{}, "bytes after"},
		{"cut short", `{"format":3`, Record{}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Decode(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	for _, r := range []Record{{1, ""}, {3, "v1.2.3"}, {7, "(devel)"}} {
		got, err := Decode(r.Encode())
		if err != nil || got != r {
			t.Errorf("Decode(Encode(%+v)) = %+v, %v", r, got, err)
		}
	}
}

func TestMessages(t *testing.T) {
	msg := Newer("open store in /d", Record{Format: 5, WrittenBy: "v2.0.0"}, 3, "v1.0.0").Error()
	for _, want := range []string{"data format 5", "intentd v2.0.0", "this intentd (v1.0.0) reads formats up to 3", "restore the backup taken before the upgrade"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Newer: %q lacks %q", msg, want)
		}
	}
	if msg := Newer("x", Record{Format: 5}, 3, "v1").Error(); !strings.Contains(msg, "an unnamed build") {
		t.Errorf("Newer without a writer: %q", msg)
	}
}

// FuzzDecode: a record read from a store (which anyone with the store's files or its
// NATS account may change) never panics the decoder, and what it accepts re-encodes to
// a record that decodes the same.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"format":3,"written_by":"v1.2.3"}`))
	f.Add([]byte(`{"format":-1}`))
	f.Add([]byte(`{"format":1e400}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		if r.Format < 1 {
			t.Fatalf("Decode(%q) accepted format %d", b, r.Format)
		}
		again, err := Decode(r.Encode())
		if err != nil || again != r {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", r, again, err)
		}
	})
}
