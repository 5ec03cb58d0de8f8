package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The store reads its stream's records through the stream's leader, which has applied
// every acknowledged write: a policy just stored through one node is there when another
// reads it. nats.go's Stream.GetMsg and GetLastMsgForSubject go to any replica instead
// (a direct get) as soon as the stream's configuration, as last read, allows direct
// gets; so the store makes the API's leader request itself, whatever the stream allows.
// Direct gets can then be turned on for what may read a replica behind the leader, the
// followers catching up while the stream elects a leader (docs/operating.md, "Reads and
// followers"), without moving any other read.

// leaderGetTimeout bounds a read whose context has no deadline, as nats.go's own
// requests are bounded.
const leaderGetTimeout = 5 * time.Second

// msgGetRequest is the body of $JS.API.STREAM.MSG.GET.<stream>: the record at Seq, the
// first record of NextFor at or after Seq, or the last record of LastFor.
type msgGetRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
}

// msgGetResponse is its answer: a record, or an API error.
type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// errNoRecord is the answer with neither a record nor an error.
var errNoRecord = errors.New("nats store: the stream's leader answered a read with no record and no error")

// getMsg reads, through the stream's leader, the first record of subject at or after
// seq: jetstream.ErrMsgNotFound when there is none.
func (s *Store) getMsg(ctx context.Context, seq uint64, subject string) (*jetstream.RawStreamMsg, error) {
	return s.leaderGet(ctx, msgGetRequest{Seq: seq, NextFor: subject})
}

// getLastMsg reads, through the stream's leader, the last record of subject:
// jetstream.ErrMsgNotFound when there is none.
func (s *Store) getLastMsg(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	return s.leaderGet(ctx, msgGetRequest{LastFor: subject})
}

// leaderGet sends a read to the stream's leader and decodes its answer. The errors are
// those of nats.go's reads: the connection's (no responders, a time-out), an API error,
// or jetstream.ErrMsgNotFound.
func (s *Store) leaderGet(ctx context.Context, req msgGetRequest) (*jetstream.RawStreamMsg, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, leaderGetTimeout)
		defer cancel()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+s.name, body)
	if err != nil {
		return nil, err
	}
	return decodeMsgGet(resp.Data)
}

// decodeMsgGet reads the leader's answer to a read.
func decodeMsgGet(data []byte) (*jetstream.RawStreamMsg, error) {
	var r msgGetResponse
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
		return nil, errNoRecord
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
