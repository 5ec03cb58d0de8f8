package natsstore

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/internal/jsread"
)

// The store reads its stream's records through the stream's leader, which has applied
// every acknowledged write: a policy just stored through one node is there when another
// reads it. nats.go's Stream.GetMsg and GetLastMsgForSubject go to any replica instead
// (a direct get) as soon as the stream's configuration, as last read, allows direct
// gets; so the store reads through jsread, whatever the stream allows. The one read that
// may find a replica behind the leader, that of an intent before its proposal, whose
// write is fenced by the sequence read, takes a direct get on purpose (IntentNearby);
// no other read moves (docs/operating.md, "Reads and followers").

// getMsg reads, through the stream's leader, the first record of subject at or after
// seq: jetstream.ErrMsgNotFound when there is none.
func (s *Store) getMsg(ctx context.Context, seq uint64, subject string) (*jetstream.RawStreamMsg, error) {
	return jsread.Next(ctx, s.nc, s.name, seq, subject)
}

// getLastMsg reads, through the stream's leader, the last record of subject:
// jetstream.ErrMsgNotFound when there is none.
func (s *Store) getLastMsg(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	return jsread.Last(ctx, s.nc, s.name, subject)
}
