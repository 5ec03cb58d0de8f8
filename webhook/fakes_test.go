package webhook

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/intentd/intentd"
)

// memStore is an in-memory intentd.WebhookStore with the revision fencing of the real
// ones, shared by the members of a test.
type memStore struct {
	mu   sync.Mutex
	recs map[string]memRecord
	next uint64
}

type memRecord struct {
	b   []byte
	rev uint64
}

func newMemStore() *memStore { return &memStore{recs: map[string]memRecord{}} }

func (m *memStore) CreateWebhook(_ context.Context, id string, record []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.recs[id]; ok {
		return intentd.ErrExists
	}
	m.next++
	m.recs[id] = memRecord{slices.Clone(record), m.next}
	return nil
}

func (m *memStore) Webhook(_ context.Context, id string) ([]byte, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok {
		return nil, 0, intentd.ErrNotFound
	}
	return slices.Clone(r.b), r.rev, nil
}

func (m *memStore) Webhooks(ctx context.Context, fn func(string, []byte, uint64) error) error {
	m.mu.Lock()
	ids := make([]string, 0, len(m.recs))
	for id := range m.recs {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		b, rev, err := m.Webhook(ctx, id)
		if err != nil {
			continue
		}
		if err := fn(id, b, rev); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore) UpdateWebhook(_ context.Context, id string, record []byte, rev uint64) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok || r.rev != rev {
		return 0, fmt.Errorf("webhook %s at another revision: %w", id, intentd.ErrStale)
	}
	m.next++
	m.recs[id] = memRecord{slices.Clone(record), m.next}
	return m.next, nil
}

func (m *memStore) DeleteWebhook(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.recs[id]; !ok {
		return intentd.ErrNotFound
	}
	delete(m.recs, id)
	return nil
}

// memLog is an event log and stream in memory: events appended are given to every
// subscription after its starting id.
type memLog struct {
	mu       sync.Mutex
	events   []intentd.Event
	policies map[string]string // intent id -> policy id
	grew     chan struct{}     // closed and replaced at each append
}

func newMemLog() *memLog { return &memLog{policies: map[string]string{}, grew: make(chan struct{})} }

// add appends an event of an intent of policy, with mandate when not empty, and
// returns its id.
func (l *memLog) add(typ intentd.State, policy, mandate string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := uint64(len(l.events) + 1)
	intent := fmt.Sprintf("00000000-0000-4000-8000-%012d", id)
	data := fmt.Sprintf(`{"type":%q,"intent_id":%q`, typ, intent)
	if mandate != "" {
		data += fmt.Sprintf(`,"mandate_id":%q`, mandate)
	}
	data += "}"
	l.events = append(l.events, intentd.Event{ID: id, Type: typ, IntentID: intent, At: time.Now(), Data: []byte(data)})
	l.policies[intent] = policy
	close(l.grew)
	l.grew = make(chan struct{})
	return id
}

func (l *memLog) Subscribe(_ context.Context, from uint64, f intentd.Filter) (intentd.Subscription, error) {
	return &memSub{l: l, after: from, f: f}, nil
}

func (l *memLog) GetIntent(_ context.Context, id string) (json.RawMessage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.policies[id]
	if !ok {
		return nil, intentd.ErrNotFound
	}
	return json.RawMessage(fmt.Sprintf(`{"intent":{"id":%q,"policy_id":%q},"authorship":"Unsigned"}`, id, p)), nil
}

func (l *memLog) Events(_ context.Context, after uint64, limit int, fn func(intentd.Event) error) error {
	l.mu.Lock()
	evs := slices.Clone(l.events)
	l.mu.Unlock()
	for _, ev := range evs {
		if ev.ID > after && limit > 0 {
			limit--
			if err := fn(ev); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *memLog) EventBounds(context.Context) (uint64, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == 0 {
		return 0, 0, nil
	}
	return 1, uint64(len(l.events)), nil
}

type memSub struct {
	l     *memLog
	after uint64
	f     intentd.Filter
}

func (s *memSub) next() (intentd.Event, bool, <-chan struct{}) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	for _, ev := range s.l.events[min(int(s.after), len(s.l.events)):] {
		s.after = ev.ID
		if s.f.Match(ev) {
			return ev, true, nil
		}
	}
	return intentd.Event{}, false, s.l.grew
}

func (s *memSub) Next(ctx context.Context) (intentd.Event, error) {
	for {
		ev, ok, grew := s.next()
		if ok {
			return ev, nil
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return intentd.Event{}, ctx.Err()
		}
	}
}

func (s *memSub) Pending() bool {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	return int(s.after) < len(s.l.events)
}

func (s *memSub) Filling() <-chan struct{} { return nil }
func (s *memSub) Truncated() bool          { return false }
func (s *memSub) Close()                   {}

// ed25519GenerateKey is a fresh Ed25519 key for the v1a signatures of a test.
func ed25519GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	return ed25519.GenerateKey(nil)
}
