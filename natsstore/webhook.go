package natsstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// A webhook endpoint is one record on a subject of its own, as a mandate is: each write
// a rollup fenced on the sequence it replaces, its revision. A delete writes a
// tombstone (hdrOp opDelete) fenced the same way, so that a member still delivering
// the endpoint has its next write refused. No follower reads these subjects.

var _ intentd.WebhookStore = (*Store)(nil)

// CreateWebhook stores a new endpoint's record, expecting no record on its subject:
// intentd.ErrExists when there is one (a tombstone included: ids are not reused).
func (s *Store) CreateWebhook(ctx context.Context, id string, record []byte) (err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	_, err = s.publish(ctx, mandateMsg(s.webhookSubject(id), 0, record))
	if isWrongSeq(err) {
		return intentd.ErrExists
	}
	return err
}

// Webhook returns an endpoint's record and its revision, read from the stream's leader:
// intentd.ErrNotFound for none, or a tombstone.
func (s *Store) Webhook(ctx context.Context, id string) (record []byte, rev uint64, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer end(&err)
	m, err := s.last(ctx, s.webhookSubject(id))
	if err != nil {
		return nil, 0, err
	}
	if m.Header.Get(hdrOp) == opDelete {
		return nil, 0, intentd.ErrNotFound
	}
	return m.Data, m.Sequence, nil
}

// Webhooks calls fn for every endpoint: the subjects of the stream's webhook records,
// each read at its last record, in the order of their subjects.
func (s *Store) Webhooks(ctx context.Context, fn func(id string, record []byte, rev uint64) error) (err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(s.prefix+"."+kindWebhook+".*"))
	if err != nil {
		return err
	}
	// In id order, as the interface promises: the subjects sort as their ids do but
	// for the ids written in base64 (none the service makes).
	for _, subject := range slices.Sorted(maps.Keys(info.State.Subjects)) {
		_, id, ok := s.parseSubject(subject)
		if !ok {
			continue
		}
		m, err := s.last(ctx, subject)
		if errors.Is(err, intentd.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return err
		}
		if m.Header.Get(hdrOp) == opDelete {
			continue
		}
		if err := fn(id, m.Data, m.Sequence); err != nil {
			return kept{err}
		}
	}
	return nil
}

// UpdateWebhook replaces the record of revision rev with a rollup fenced on rev:
// intentd.ErrStale, nothing written, when the record is at another revision or gone.
func (s *Store) UpdateWebhook(ctx context.Context, id string, record []byte, rev uint64) (next uint64, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return 0, err
	}
	defer end(&err)
	if rev == 0 {
		return 0, fmt.Errorf("update webhook %s from revision 0, which no record has: %w", id, intentd.ErrStale)
	}
	next, err = s.publish(ctx, mandateMsg(s.webhookSubject(id), rev, record))
	if isWrongSeq(err) {
		return 0, fmt.Errorf("update webhook %s from revision %d: %w", id, rev, intentd.ErrStale)
	}
	return next, err
}

// DeleteWebhook writes an endpoint's tombstone over its last record: intentd.ErrNotFound
// when there is none. A record written between the read and the tombstone refuses the
// tombstone, and the delete reads again.
func (s *Store) DeleteWebhook(ctx context.Context, id string) (err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	subject := s.webhookSubject(id)
	for {
		m, err := s.last(ctx, subject)
		if err != nil {
			return err
		}
		if m.Header.Get(hdrOp) == opDelete {
			return intentd.ErrNotFound
		}
		tomb := nats.NewMsg(subject)
		tomb.Header.Set(hdrOp, opDelete)
		_, err = s.publish(ctx, fenced(rollUp(tomb), m.Sequence))
		if !isWrongSeq(err) {
			return err
		}
	}
}
