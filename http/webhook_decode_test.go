package http

import (
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

func TestDecodeWebhookSpec(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string // a part of the refusal; "" for none
		kind       intentd.Kind
	}{
		{"the least", `{"url":"https://h.example/"}`, "", 0},
		{"everything", `{"url":"https://h.example/","types":["success"],"policy_ids":["p"],"mandate_ids":["m"],"asymmetric":true,"max_in_flight":4}`, "", 0},
		{"not JSON", `{"url":`, "not valid JSON", intentd.KindInvalid},
		{"not an object", `[]`, "must be a JSON object", intentd.KindUnprocessable},
		{"no url", `{}`, "url: missing", intentd.KindUnprocessable},
		{"url not a string", `{"url":1}`, "url: must be a string", intentd.KindUnprocessable},
		{"an unknown member", `{"url":"https://h.example/","secret":"x"}`, "secret: unknown field", intentd.KindUnprocessable},
		{"types not an array", `{"url":"https://h.example/","types":"success"}`, "types: must be an array", intentd.KindUnprocessable},
		{"asymmetric not a boolean", `{"url":"https://h.example/","asymmetric":"yes"}`, "asymmetric: must be true or false", intentd.KindUnprocessable},
		{"max_in_flight 0", `{"url":"https://h.example/","max_in_flight":0}`, "max_in_flight", intentd.KindUnprocessable},
		{"max_in_flight a fraction", `{"url":"https://h.example/","max_in_flight":1.5}`, "max_in_flight: must be an integer", intentd.KindUnprocessable},
		{"a duplicate member", `{"url":"https://h.example/","url":"https://i.example/"}`, "duplicate", intentd.KindUnprocessable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeWebhookSpec([]byte(tc.body))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("DecodeWebhookSpec: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || intentd.ErrorKind(err) != tc.kind {
				t.Fatalf("DecodeWebhookSpec: %v, want kind %v naming %q", err, tc.kind, tc.want)
			}
		})
	}
}

func FuzzDecodeWebhookSpec(f *testing.F) {
	f.Add([]byte(`{"url":"https://h.example/","types":["success"],"max_in_flight":4}`))
	f.Add([]byte(`{"url":1}`))
	f.Add([]byte(`{"from_event_id":3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := DecodeWebhookSpec(body)
		if err != nil {
			if k := intentd.ErrorKind(err); k != intentd.KindInvalid && k != intentd.KindUnprocessable {
				t.Fatalf("refusal of kind %v: %v", k, err)
			}
			return
		}
		if spec.MaxInFlight < 0 {
			t.Fatalf("accepted max_in_flight %d", spec.MaxInFlight)
		}
		for _, name := range []string{"event_id", "from_event_id"} {
			if id, err := decodeEventIDBody(body, name); err == nil && id == 0 {
				t.Fatalf("event id 0 accepted from %q", body)
			}
		}
	})
}
