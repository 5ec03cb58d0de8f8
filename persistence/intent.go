package persistence

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// idClaims hands out claims of ids, one holder at a time for each id: work on one id
// that must be one step (a check and the durable write that depends on it) waits for
// the holder before it, and work on other ids does not, as it would behind one lock
// held across each fsync. The zero value is ready for use.
type idClaims struct {
	mu   sync.Mutex
	held map[string]chan struct{}
}

// claim marks id as claimed, after any claim of it in progress has ended; the returned
// function ends the claim.
func (c *idClaims) claim(id string) func() {
	for {
		c.mu.Lock()
		wait, busy := c.held[id]
		if !busy {
			if c.held == nil {
				c.held = make(map[string]chan struct{})
			}
			done := make(chan struct{})
			c.held[id] = done
			c.mu.Unlock()
			return func() {
				c.mu.Lock()
				delete(c.held, id)
				c.mu.Unlock()
				close(done)
			}
		}
		c.mu.Unlock()
		<-wait
	}
}

// CreateIntent stores a new open intent: its snapshot, its deadline in the expiry index
// and its reference to the policy, in one synced batch. It fails with intentd.ErrPolicyNotFound
// when the policy is not stored and intentd.ErrExists when the id is taken.
func (s *Store) CreateIntent(_ context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) error {
	if s.beforeFirstStep != nil {
		s.beforeFirstStep()
	}
	s.policyMu.RLock()
	defer s.policyMu.RUnlock()
	defer s.creating.claim(id)()

	refs := s.policies[policyID]
	if refs == nil {
		return intentd.ErrPolicyNotFound
	}
	ik := key(prefixIntent, id)
	if s.ids.mayBeStored(id) {
		if ok, err := s.has(ik); err != nil {
			return err
		} else if ok {
			return intentd.ErrExists
		}
	}
	s.ids.add(id)
	b := s.db.NewBatch()
	defer b.Close()
	b.Set(ik, snapshot, nil)
	b.Set(expiryKey(expiresAt, id), []byte(policyID), nil)
	if err := s.commit(b); err != nil {
		return err
	}
	refs.Add(1)
	if s.afterFirstStep != nil {
		s.afterFirstStep()
	}
	return nil
}

// Intent returns an intent's snapshot.
func (s *Store) Intent(_ context.Context, id string) ([]byte, error) {
	return s.get(key(prefixIntent, id))
}

// BeginProcessing records that an open intent accepted a proposal: its new snapshot, its
// deadline out of the expiry index (a processing intent cannot expire) and its id in the
// processing set, which start-up reads to resume interrupted work, with the policy it
// names.
func (s *Store) BeginProcessing(_ context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) error {
	b := s.db.NewBatch()
	defer b.Close()
	b.Set(key(prefixIntent, id), snapshot, nil)
	b.Delete(expiryKey(expiresAt, id), nil)
	b.Set(key(prefixProcessing, id), []byte(policyID), nil)
	return s.commit(b)
}

// Processing lists the intents that were processing when the store was last written.
func (s *Store) Processing(context.Context) ([]string, error) {
	var ids []string
	err := s.scan([]byte{prefixProcessing}, func(k, _ []byte) error {
		ids = append(ids, string(k[1:]))
		return nil
	})
	return ids, err
}

// DueExpiries lists up to limit open intents whose deadline is at or before now, earliest
// first.
func (s *Store) DueExpiries(_ context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	upper := binary.BigEndian.AppendUint64([]byte{prefixExpiry}, uint64(now.UnixNano())+1)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixExpiry}, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	for ok := it.First(); ok && len(ids) < limit; ok = it.Next() {
		k := it.Key()
		if len(k) < expiryIDAt {
			continue
		}
		ids = append(ids, string(k[expiryIDAt:]))
	}
	return ids, it.Close()
}

// NextExpiry reports the earliest deadline in the expiry index.
func (s *Store) NextExpiry(context.Context) (time.Time, bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixExpiry}, UpperBound: []byte{prefixExpiry + 1}})
	if err != nil {
		return time.Time{}, false, err
	}
	var at time.Time
	found := false
	if it.First() && len(it.Key()) >= expiryIDAt {
		at = time.Unix(0, int64(binary.BigEndian.Uint64(it.Key()[1:expiryIDAt])))
		found = true
	}
	return at, found, it.Close()
}

// Finish writes an intent's terminal state in one synced batch: its snapshot, its
// deadline out of the expiry index, its id out of the processing set, its policy
// reference released, and its event appended with the next event id, which it returns.
// The event sink hears of the event after the batch is durable.
func (s *Store) Finish(_ context.Context, id, policyID string, snapshot []byte, expiresAt time.Time, ev intentd.Event) (uint64, error) {
	select {
	case <-s.closing:
		return 0, intentd.ErrStoreClosed
	default:
	}
	// An expiry replaces an open intent only: one whose proposal was accepted is the
	// proposal's to end, whatever a stale reader decided. An outcome replaces a
	// processing intent only: BeginProcessing moves an intent from open to processing
	// once, and nothing writes its processing record again, so an outcome over
	// processing is an outcome of the one proposal that record holds.
	processing, err := s.has(key(prefixProcessing, id))
	if err != nil {
		return 0, fmt.Errorf("finish %s: %w", id, err)
	}
	switch expiry := ev.Type == intentd.StateExpired; {
	case expiry && processing:
		return 0, fmt.Errorf("expire %s, which is processing: %w", id, intentd.ErrStale)
	case !expiry && !processing:
		return 0, fmt.Errorf("finish %s (%s), which is not processing: %w", id, ev.Type, intentd.ErrStale)
	}
	req := &finishReq{
		id: id, policyID: policyID, snapshot: snapshot, expiresAt: expiresAt, event: ev,
		at:    time.Now(),
		reply: make(chan finishResult, 1),
	}
	select {
	case s.finishCh <- req:
	case <-s.closing:
		return 0, intentd.ErrStoreClosed
	}
	select {
	case r := <-req.reply:
		return r.eventID, r.err
	case <-s.done:
		// The committer drains the queue before it ends, so a request it took has its
		// reply waiting; one queued after the drain was never written.
		select {
		case r := <-req.reply:
			return r.eventID, r.err
		default:
			return 0, intentd.ErrStoreClosed
		}
	}
}
