package jsread

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go"
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
// request takes it, in the bytes json.Marshal would write; a subject that is not UTF-8
// is refused, as json.Marshal refuses it.
func TestRequest(t *testing.T) {
	for _, c := range []struct {
		req  request
		want string // "" for an error
	}{
		{request{Seq: 7, NextFor: "I.x"}, `{"seq":7,"next_by_subj":"I.x"}`},
		{request{LastFor: "I.x"}, `{"last_by_subj":"I.x"}`},
		{request{Seq: 1}, `{"seq":1}`},
		{request{}, `{}`},
		{request{Seq: 18446744073709551615, NextFor: "a", LastFor: "b"}, `{"seq":18446744073709551615,"next_by_subj":"a","last_by_subj":"b"}`},
		{request{LastFor: "I.\"q\"\\<é>\n"}, `{"last_by_subj":"I.\"q\"\\<é>\n"}`},
		{request{LastFor: "I.\xff"}, ""},
	} {
		got, err := c.req.body()
		if c.want == "" {
			if err == nil {
				t.Errorf("%+v: %s, want an error", c.req, got)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%+v: %s, %v; want %s", c.req, got, err, c.want)
		}
	}
}

// FuzzRequest holds the request's bytes to json.Marshal's, whatever the subjects.
func FuzzRequest(f *testing.F) {
	f.Add(uint64(7), "I.x", "")
	f.Add(uint64(0), "", "I.\"\\\x00")
	f.Fuzz(func(t *testing.T, seq uint64, next, last string) {
		r := request{Seq: seq, NextFor: next, LastFor: last}
		got, err := r.body()
		want, werr := json.Marshal(r)
		if (err == nil) != (werr == nil) || err == nil && string(got) != string(want) {
			t.Fatalf("%+v: %s, %v; json.Marshal writes %s, %v", r, got, err, want, werr)
		}
	})
}

// TestDecodeDirect reads the answers a replica gives a direct get.
func TestDecodeDirect(t *testing.T) {
	record := func(kv ...string) nats.Header {
		h := nats.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, c := range []struct {
		name   string
		header nats.Header
		data   string
		seq    uint64 // the record's sequence, 0 for an error
		err    error  // the error wanted, errors.Is, when seq is 0; nil for any
	}{
		{"a record with headers of its own", record("Nats-Stream", "S", "Nats-Subject", "I.x", "Nats-Sequence", "7",
			"Nats-Time-Stamp", "2026-12-01T04:00:00.123456789Z", "I-Phase", "open"), "{}", 7, nil},
		{"a record with no data", record("Nats-Subject", "E", "Nats-Sequence", "1", "Nats-Time-Stamp", "2026-12-01T04:00:00Z"), "", 1, nil},
		{"none", record("Status", "404", "Description", "Message Not Found"), "", 0, jetstream.ErrMsgNotFound},
		{"a status", record("Status", "408", "Description", "Request Timeout"), "", 0, nil},
		{"no sequence", record("Nats-Subject", "I.x", "Nats-Time-Stamp", "2026-12-01T04:00:00Z"), "{}", 0, nil},
		{"a sequence that is not", record("Nats-Subject", "I.x", "Nats-Sequence", "-1", "Nats-Time-Stamp", "2026-12-01T04:00:00Z"), "{}", 0, nil},
		{"no subject", record("Nats-Sequence", "7", "Nats-Time-Stamp", "2026-12-01T04:00:00Z"), "{}", 0, nil},
		{"no time", record("Nats-Subject", "I.x", "Nats-Sequence", "7"), "{}", 0, nil},
		{"no headers", nil, "{}", 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := decodeDirect(c.header, []byte(c.data))
			switch {
			case c.seq != 0:
				if err != nil || m.Sequence != c.seq || string(m.Data) != c.data || m.Header.Get("I-Phase") != c.header.Get("I-Phase") || m.Time.IsZero() {
					t.Fatalf("got %+v, %v; want the record %d", m, err, c.seq)
				}
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Fatalf("got %+v, %v; want %v", m, err, c.err)
				}
			default:
				if err == nil || m != nil {
					t.Fatalf("got %+v, %v; want an error", m, err)
				}
			}
		})
	}
}

// FuzzDecodeDirect holds the reader of a replica's answers to one rule: a record with
// its sequence and subject, or an error, never both, never neither, whatever the
// headers.
func FuzzDecodeDirect(f *testing.F) {
	f.Add("Nats-Subject", "I.x", "Nats-Sequence", "7", "2026-12-01T04:00:00Z", []byte("{}"))
	f.Add("Status", "404", "Description", "x", "", []byte(nil))
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, at string, data []byte) {
		h := nats.Header{}
		h.Set(k1, v1)
		h.Set(k2, v2)
		h.Set("Nats-Time-Stamp", at)
		m, err := decodeDirect(h, data)
		if (m == nil) == (err == nil) {
			t.Fatalf("record %+v and error %v", m, err)
		}
		if m != nil && (m.Sequence == 0 || m.Subject == "") {
			t.Fatalf("a record without its sequence or subject: %+v", m)
		}
	})
}
