package natsstore

import (
	"context"
	"fmt"

	"github.com/intentd/intentd"
)

// A mandate is one record on a subject of its own (mandateMsg), replaced whole by each
// write, and its revision is the stream sequence of that record: a write names the
// sequence it replaces (Nats-Expected-Last-Subject-Sequence), so of two writers that
// read one revision, on any nodes, the stream takes exactly one. The records are on no
// subject the followers, the event log or its pruning read.
//
// A write whose answer was lost is looked for before it is sent again (tries): each
// carries an id of its own in hdrWrite, and a record found with it, or a refusal of the
// copy sent again followed by that record, is the write's success. A write found
// refused is another writer's doing. What cannot be told is a write that landed and was
// replaced by another writer before it was looked for: it answers as refused.

var _ intentd.MandateStore = (*Store)(nil)

// CreateMandate stores a new mandate's record, expecting no record on its subject, so
// that of racing creates of one id, on any nodes, one wins and the others get
// intentd.ErrExists.
func (s *Store) CreateMandate(ctx context.Context, id string, record []byte) (err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	_, err = s.publish(ctx, mandateMsg(s.mandateSubject(id), 0, record))
	if isWrongSeq(err) {
		return intentd.ErrExists
	}
	return err
}

// Mandate returns a mandate's record and its revision, the record's stream sequence,
// read from the stream's leader so that a write acknowledged through any node is seen:
// intentd.ErrNotFound when none is stored.
func (s *Store) Mandate(ctx context.Context, id string) (record []byte, rev uint64, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer end(&err)
	m, err := s.last(ctx, s.mandateSubject(id))
	if err != nil {
		return nil, 0, err
	}
	return m.Data, m.Sequence, nil
}

// UpdateMandate replaces the record of revision rev with a rollup fenced on rev, and
// returns the new record's sequence, its next revision. A record at another revision,
// or none (a mandate not stored; no record is at revision 0, and a write fenced on 0
// would create one), refuses it with intentd.ErrStale and nothing is written: the
// writer reads the mandate again and decides on what another writer made of it. Every
// write the stream acknowledges is stored, so sync changes nothing here.
func (s *Store) UpdateMandate(ctx context.Context, id string, record []byte, rev uint64, _ bool) (next uint64, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return 0, err
	}
	defer end(&err)
	if rev == 0 {
		return 0, fmt.Errorf("update mandate %s from revision 0, which no record has: %w", id, intentd.ErrStale)
	}
	next, err = s.publish(ctx, mandateMsg(s.mandateSubject(id), rev, record))
	if isWrongSeq(err) {
		return 0, fmt.Errorf("update mandate %s from revision %d: %w", id, rev, intentd.ErrStale)
	}
	return next, err
}
