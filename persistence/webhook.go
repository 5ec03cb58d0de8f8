package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// A webhook endpoint is one record, as a mandate is: its value is an 8-byte revision
// then the record (putRevisioned), and a write compares the revision and writes under a
// claim of the endpoint's id. Every write is synced: an endpoint's record moves with
// its deliveries a few times a second at most (webhook.Service batches them).

var _ intentd.WebhookStore = (*Store)(nil)

// CreateWebhook stores a new endpoint's record at revision 1: intentd.ErrExists when
// the id is taken.
func (s *Store) CreateWebhook(_ context.Context, id string, record []byte) error {
	if err := s.closed(); err != nil {
		return err
	}
	defer s.webhooks.claim(id)()
	k := key(prefixWebhook, id)
	if ok, err := s.has(k); err != nil {
		return fmt.Errorf("create webhook %s: %w", id, err)
	} else if ok {
		return intentd.ErrExists
	}
	return s.putRevisioned(k, 1, record)
}

// Webhook returns an endpoint's record and revision: intentd.ErrNotFound when none is
// stored.
func (s *Store) Webhook(_ context.Context, id string) ([]byte, uint64, error) {
	if err := s.closed(); err != nil {
		return nil, 0, err
	}
	v, err := s.get(key(prefixWebhook, id))
	if err != nil {
		return nil, 0, err
	}
	return decodeWebhook(id, bytes.Clone(v))
}

// Webhooks calls fn for every endpoint, in id order.
func (s *Store) Webhooks(_ context.Context, fn func(id string, record []byte, rev uint64) error) error {
	if err := s.closed(); err != nil {
		return err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixWebhook}, UpperBound: []byte{prefixWebhook + 1}})
	if err != nil {
		return fmt.Errorf("list webhooks: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		id := string(it.Key()[1:])
		record, rev, err := decodeWebhook(id, bytes.Clone(it.Value()))
		if err != nil {
			return err
		}
		if err := fn(id, record, rev); err != nil {
			return err
		}
	}
	return it.Error()
}

// UpdateWebhook replaces the record of revision rev, in a synced batch, and returns the
// next revision; intentd.ErrStale, nothing written, when the record is at another
// revision or not stored.
func (s *Store) UpdateWebhook(_ context.Context, id string, record []byte, rev uint64) (uint64, error) {
	if err := s.closed(); err != nil {
		return 0, err
	}
	if s.refusing() {
		return 0, s.Writable()
	}
	defer s.webhooks.claim(id)()
	k := key(prefixWebhook, id)
	v, err := s.get(k)
	if errors.Is(err, intentd.ErrNotFound) {
		return 0, fmt.Errorf("update webhook %s, which is not stored: %w", id, intentd.ErrStale)
	}
	if err != nil {
		return 0, fmt.Errorf("update webhook %s: %w", id, err)
	}
	_, cur, err := decodeWebhook(id, v)
	if err != nil {
		return 0, err
	}
	if cur != rev {
		return 0, fmt.Errorf("update webhook %s from revision %d, which is at %d: %w", id, rev, cur, intentd.ErrStale)
	}
	if err := s.putRevisioned(k, rev+1, record); err != nil {
		return 0, err
	}
	return rev + 1, nil
}

// DeleteWebhook removes an endpoint's record, in a synced batch: intentd.ErrNotFound
// when none is stored.
func (s *Store) DeleteWebhook(_ context.Context, id string) error {
	if err := s.closed(); err != nil {
		return err
	}
	defer s.webhooks.claim(id)()
	k := key(prefixWebhook, id)
	if ok, err := s.has(k); err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	} else if !ok {
		return intentd.ErrNotFound
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Delete(k, nil)
	return s.commit(b)
}

// decodeWebhook reads an endpoint's value, which has a mandate's form.
func decodeWebhook(id string, v []byte) ([]byte, uint64, error) {
	return decodeRevisioned("webhook", id, v)
}
