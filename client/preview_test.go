package client

import (
	"encoding/json"
	"testing"

	"github.com/intentd/intentd"
)

// FuzzPreview checks that the reader of a preview's body takes any input without a
// panic, and that what it accepts is a success or a failure that reads back the same.
func FuzzPreview(f *testing.F) {
	f.Add([]byte(`{"outcome":"success","intent_id":"x","proposal":{"solution":"s"},"evidence":{},"proof":false,"note":"n","previews_left":3}`))
	f.Add([]byte(`{"outcome":"failure","reason":"r","failure_kind":"constraints","constraint_failures":[{"index":1,"pretty_expr":"e","reason":"r"}],"proof":false,"note":"n"}`))
	f.Add([]byte(`{"outcome":"open"}`))
	f.Add([]byte(`{"status":"success"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Preview
		if err := json.Unmarshal(data, &p); err != nil {
			return
		}
		if p.Outcome.State != intentd.StateSuccess && p.Outcome.State != intentd.StateFailure {
			t.Fatalf("accepted a preview whose outcome is %q", p.Outcome.State)
		}
	})
}
