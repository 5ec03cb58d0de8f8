// Package jsread reads one record of a JetStream stream through the stream's leader,
// whatever the stream allows, or, where a replica that may be behind will do
// (LastNearby), from the replica that answers first. nats.go's reads (Stream.GetMsg,
// GetLastMsgForSubject, KeyValue.Get) go to any replica (a direct get) as soon as the
// stream allows direct gets, and a replica may be behind the leader: one that has not
// applied the latest writes, or a server come back from its death still catching up.
// What must see every acknowledged write (the NATS store's records, whether a cluster
// member's key is gone) reads here instead.
package jsread

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Timeout bounds a read whose context has no deadline, as nats.go's own requests are
// bounded.
const Timeout = 5 * time.Second

// apiPrefix is the JetStream API's, without a domain: the connections that read here
// are made with jetstream.New and no domain or prefix of their own.
const apiPrefix = "$JS.API."

// request is the body of $JS.API.STREAM.MSG.GET.<stream>: the record at Seq, the first
// record of NextFor at or after Seq, or the last record of LastFor.
type request struct {
	Seq     uint64 `json:"seq,omitzero"`
	NextFor string `json:"next_by_subj,omitzero"`
	LastFor string `json:"last_by_subj,omitzero"`
}

// body is the request's JSON, as json.Marshal writes it. It is appended by hand: a
// member that decides a proposal it did not create reads the intent first, and
// marshalling this one small struct by reflection cost that read a fifth of its CPU.
func (r request) body() ([]byte, error) {
	b := make([]byte, 0, 40+len(r.NextFor)+len(r.LastFor))
	b = append(b, '{')
	if r.Seq != 0 {
		b = strconv.AppendUint(append(b, `"seq":`...), r.Seq, 10)
	}
	for _, m := range []struct{ name, subject string }{{`"next_by_subj":`, r.NextFor}, {`"last_by_subj":`, r.LastFor}} {
		if m.subject == "" {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		var err error
		if b, err = jsontext.AppendQuote(append(b, m.name...), m.subject); err != nil {
			return nil, fmt.Errorf("jsread: subject %q: %w", m.subject, err)
		}
	}
	return append(b, '}'), nil
}

// response is its answer: a record, or an API error.
type response struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// ErrNoRecord is the answer with neither a record nor an error.
var ErrNoRecord = errors.New("jsread: the stream's leader answered a read with no record and no error")

// Next reads the first record of subject at or after seq: jetstream.ErrMsgNotFound when
// there is none.
func Next(ctx context.Context, nc *nats.Conn, stream string, seq uint64, subject string) (*jetstream.RawStreamMsg, error) {
	return get(ctx, nc, stream, request{Seq: seq, NextFor: subject})
}

// Last reads the last record of subject: jetstream.ErrMsgNotFound when there is none.
func Last(ctx context.Context, nc *nats.Conn, stream, subject string) (*jetstream.RawStreamMsg, error) {
	return get(ctx, nc, stream, request{LastFor: subject})
}

// LastNearby reads the last record of subject from any replica of the stream, by a
// direct get, which the replica of the server the connection reaches answers first
// when there is one. A replica may be behind the leader: the record may be an older one
// than the leader's, or missing (jetstream.ErrMsgNotFound). A stream that does not
// allow direct gets leaves the read without an answer: nats.ErrNoResponders at once.
func LastNearby(ctx context.Context, nc *nats.Conn, stream, subject string) (*jetstream.RawStreamMsg, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := nc.RequestWithContext(ctx, apiPrefix+"DIRECT.GET."+stream+"."+subject, nil)
	if err != nil {
		return nil, err
	}
	return decodeDirect(resp.Header, resp.Data)
}

// decodeDirect reads a replica's answer to a direct get: the record, its stream
// sequence, subject and time in headers of their own beside the record's; or, with no
// data, a status header: 404 for no record, another for an error.
func decodeDirect(h nats.Header, data []byte) (*jetstream.RawStreamMsg, error) {
	if status := h.Get("Status"); status != "" && len(data) == 0 {
		if status == "404" {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, fmt.Errorf("jsread: a replica answered a direct get with status %s: %s", status, h.Get("Description"))
	}
	subject := h.Get(jetstream.SubjectHeader)
	seq, err := strconv.ParseUint(h.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil || seq == 0 || subject == "" {
		return nil, fmt.Errorf("jsread: a replica answered a direct get without the record's sequence or subject (%s %q, %s %q)",
			jetstream.SequenceHeader, h.Get(jetstream.SequenceHeader), jetstream.SubjectHeader, subject)
	}
	at, err := time.Parse(time.RFC3339Nano, h.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return nil, fmt.Errorf("jsread: a replica answered a direct get with no time: %w", err)
	}
	return &jetstream.RawStreamMsg{Subject: subject, Sequence: seq, Header: h, Data: data, Time: at}, nil
}

// bounded gives a read whose context has no deadline the package's Timeout.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, Timeout)
}

// get sends a read to the stream's leader and decodes its answer. The errors are those
// of nats.go's reads: the connection's (no responders, a time-out), an API error, or
// jetstream.ErrMsgNotFound.
func get(ctx context.Context, nc *nats.Conn, stream string, req request) (*jetstream.RawStreamMsg, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	body, err := req.body()
	if err != nil {
		return nil, err
	}
	resp, err := nc.RequestWithContext(ctx, apiPrefix+"STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, err
	}
	return decode(resp.Data)
}

// decode reads the leader's answer to a read. It decodes with the JSON package's next
// version, which took 4 µs for the answer of an intent's snapshot where encoding/json
// took 15, and 109 µs for a full entry bundle of the transparency log against 480
// (BenchmarkDecode): every member reads both, and a member that decides a proposal it
// did not create reads the intent so.
func decode(data []byte) (*jetstream.RawStreamMsg, error) {
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		if r.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, r.Error
	}
	if r.Message == nil {
		return nil, ErrNoRecord
	}
	m := &jetstream.RawStreamMsg{Subject: r.Message.Subject, Sequence: r.Message.Sequence, Data: r.Message.Data, Time: r.Message.Time}
	if len(r.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(r.Message.Header)
		if err != nil {
			return nil, err
		}
		m.Header = h
	}
	return m, nil
}
