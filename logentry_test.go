package intentd

import (
	"strings"
	"testing"
)

func TestParseLogEntry(t *testing.T) {
	const (
		id = "0b7c3f5e-2a71-4c1e-9d43-5f0e6a8b9c21"
		d1 = "FEa7NBL6cw7h39f9Abw6mdrxoYqMTCKDNfMKTpp9i4gX"
		d2 = "J3PiJwvgW1xfUnUug6vKpjgxaVMKjFixmhisD3Fvtj5h"
	)
	full := `{"event_id":7,"type":"success","intent_id":"` + id + `","event_digest":"` + d1 + `","receipt_digest":"` + d2 + `"}`
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"with receipt", full, true},
		{"expired, no receipt", `{"event_id":1,"type":"expired","intent_id":"` + id + `","event_digest":"` + d1 + `"}`, true},
		{"spaces", strings.Replace(full, `:7,`, `: 7,`, 1), false},
		{"members reordered", `{"type":"success","event_id":7,"intent_id":"` + id + `","event_digest":"` + d1 + `"}`, false},
		{"unknown member", strings.Replace(full, `}`, `,"x":1}`, 1), false},
		{"repeated member", strings.Replace(full, `"type":"success",`, `"type":"success","type":"success",`, 1), false},
		{"open is no outcome", strings.Replace(full, "success", "open", 1), false},
		{"intent id not a UUID", strings.Replace(full, id, "x", 1), false},
		{"upper-case intent id", strings.Replace(full, id, strings.ToUpper(id), 1), false},
		{"short digest", strings.Replace(full, d1, "abc", 1), false},
		{"empty receipt digest", strings.Replace(full, d2, "", 1), false},
		{"trailing data", full + " ", false},
		{"not JSON", "event", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseLogEntry([]byte(tt.in))
			if (err == nil) != tt.ok {
				t.Fatalf("ParseLogEntry(%s) = %+v, %v; want ok %v", tt.in, e, err, tt.ok)
			}
			if tt.ok && string(MarshalLogEntry(e)) != tt.in {
				t.Fatalf("MarshalLogEntry(ParseLogEntry(%s)) = %s", tt.in, MarshalLogEntry(e))
			}
		})
	}
}

// FuzzParseLogEntry checks that an entry accepted is exactly the bytes its values
// are written as, so that what a reader is shown is what the leaf hash covers.
func FuzzParseLogEntry(f *testing.F) {
	f.Add(`{"event_id":7,"type":"success","intent_id":"0b7c3f5e-2a71-4c1e-9d43-5f0e6a8b9c21","event_digest":"FEa7NBL6cw7h39f9Abw6mdrxoYqMTCKDNfMKTpp9i4gX"}`)
	f.Add(`{"event_id":1,"type":"expired"}`)
	f.Fuzz(func(t *testing.T, in string) {
		e, err := ParseLogEntry([]byte(in))
		if err != nil {
			return
		}
		if got := string(MarshalLogEntry(e)); got != in {
			t.Fatalf("ParseLogEntry(%q) accepted bytes it does not write: %q", in, got)
		}
	})
}
