package jsread

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go/jetstream"
)

// TestDecode reads the answers a stream's leader gives a read.
func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		subject      string // of the record read, "" for none
		header       string // its header I-Phase
		err          error  // the error wanted, errors.Is; nil with subject ""
		apiCode      int    // or the API error's code
	}{
		{name: "a record with headers",
			answer:  `{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"I.x","seq":7,"hdrs":"TkFUUy8xLjANCkktUGhhc2U6IG9wZW4NCg0K","data":"e30=","time":"2026-11-30T04:00:00Z"}}`,
			subject: "I.x", header: "open"},
		{name: "a record without headers", answer: `{"message":{"subject":"E","seq":1,"data":"","time":"2026-11-30T04:00:00Z"}}`, subject: "E"},
		{name: "none", answer: `{"error":{"code":404,"err_code":10037,"description":"no message found"}}`, err: jetstream.ErrMsgNotFound},
		{name: "an API error", answer: `{"error":{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}}`, apiCode: 503},
		{name: "neither", answer: `{}`, err: ErrNoRecord},
		{name: "not JSON", answer: `nats`, apiCode: -1},
		{name: "headers that are not", answer: `{"message":{"subject":"E","seq":1,"hdrs":"eHh4","time":"2026-11-30T04:00:00Z"}}`, apiCode: -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := decode([]byte(c.answer))
			switch {
			case c.subject != "":
				if err != nil || m.Subject != c.subject || m.Header.Get("I-Phase") != c.header {
					t.Fatalf("got %+v, %v; want subject %q, I-Phase %q", m, err, c.subject, c.header)
				}
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Fatalf("got %+v, %v; want %v", m, err, c.err)
				}
			case c.apiCode > 0:
				var apiErr *jetstream.APIError
				if !errors.As(err, &apiErr) || apiErr.Code != c.apiCode {
					t.Fatalf("got %+v, %v; want an API error %d", m, err, c.apiCode)
				}
			default:
				if err == nil {
					t.Fatalf("got %+v, want an error", m)
				}
			}
		})
	}
}

// FuzzDecode holds the reader of the leader's answers to one rule: a record or an
// error, never both, never neither, whatever the bytes.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"message":{"subject":"I.x","seq":7,"hdrs":"TkFUUy8xLjANCkktUGhhc2U6IG9wZW4NCg0K","data":"e30=","time":"2026-11-30T04:00:00Z"}}`,
		`{"error":{"code":404,"err_code":10037}}`, `{}`, `null`, `{"message":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b)
		if (m == nil) == (err == nil) {
			t.Fatalf("record %+v and error %v", m, err)
		}
	})
}

// TestRequest: a read names what it asks for and nothing else, as the API's leader
// request takes it.
func TestRequest(t *testing.T) {
	for _, c := range []struct {
		req  request
		want string
	}{
		{request{Seq: 7, NextFor: "I.x"}, `{"seq":7,"next_by_subj":"I.x"}`},
		{request{LastFor: "I.x"}, `{"last_by_subj":"I.x"}`},
		{request{Seq: 1}, `{"seq":1}`},
	} {
		got, err := json.Marshal(c.req)
		if err != nil || string(got) != c.want {
			t.Errorf("%+v: %s, %v; want %s", c.req, got, err, c.want)
		}
	}
}
