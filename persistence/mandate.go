package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// A mandate is one record, replaced whole by each write, at a revision that fences the
// writes (intentd.MandateStore). Here the revision is a counter stored before the
// record: 1 for the create, one more for each update. A write compares and writes under
// a claim of the mandate's id, so that of two writers that read one revision exactly
// one writes the next; writes of other mandates do not wait on its fsync.

var _ intentd.MandateStore = (*Store)(nil)

// mandateRevAt is where a mandate's record starts in its value: after the revision.
const mandateRevAt = 8

// CreateMandate stores a new mandate's record at revision 1, in one synced batch, so
// that the mandate outlives a crash once the call returns; intentd.ErrExists when the
// id is taken, which leaves the stored record as it was.
func (s *Store) CreateMandate(_ context.Context, id string, record []byte) error {
	if err := s.closed(); err != nil {
		return err
	}
	defer s.mandates.claim(id)()
	k := key(prefixMandate, id)
	if ok, err := s.has(k); err != nil {
		return fmt.Errorf("create mandate %s: %w", id, err)
	} else if ok {
		return intentd.ErrExists
	}
	if err := s.putRevisioned(k, 1, record); err != nil {
		return err
	}
	s.mandateRevs.written(id, 1)
	return nil
}

// Mandate returns a mandate's record and its revision, which the caller names to
// UpdateMandate: intentd.ErrNotFound when none is stored.
func (s *Store) Mandate(_ context.Context, id string) (record []byte, rev uint64, err error) {
	if err := s.closed(); err != nil {
		return nil, 0, err
	}
	v, ok := s.mandateRevs.waited(id)
	if !ok {
		var err error
		if v, err = s.get(key(prefixMandate, id)); err != nil {
			return nil, 0, err
		}
	}
	return decodeMandate(id, bytes.Clone(v))
}

// UpdateMandate replaces the record of revision rev and returns the next revision. The
// revision is compared and the record taken under the mandate's claim, so a writer
// that read an older revision, or none (a mandate not stored; no record is at revision
// 0), is refused with intentd.ErrStale and nothing is written: it reads the mandate
// again and decides on what another writer made of it. The revision is kept in memory
// once read or written: this store is its database's only writer, and a decision does
// not read the whole record back to compare a number.
//
// With sync the record is written in a synced batch of its own. Without, it waits in
// memory, where Mandate reads it, for the next batch of outcomes (commitGroup), which
// takes it along, or a second at most: a purchase's decision costs no write of its
// own, and its intent's outcome, which follows it, cannot be on disk without it.
func (s *Store) UpdateMandate(_ context.Context, id string, record []byte, rev uint64, sync bool) (uint64, error) {
	if err := s.closed(); err != nil {
		return 0, err
	}
	if s.refusing() {
		return 0, s.Writable()
	}
	defer s.mandates.claim(id)()
	cur, ok := s.mandateRevs.rev(id)
	if !ok {
		v, err := s.get(key(prefixMandate, id))
		if errors.Is(err, intentd.ErrNotFound) {
			return 0, fmt.Errorf("update mandate %s, which is not stored: %w", id, intentd.ErrStale)
		}
		if err != nil {
			return 0, fmt.Errorf("update mandate %s: %w", id, err)
		}
		if _, cur, err = decodeMandate(id, v); err != nil {
			return 0, err
		}
	}
	if cur != rev {
		return 0, fmt.Errorf("update mandate %s from revision %d, which is at %d: %w", id, rev, cur, intentd.ErrStale)
	}
	if !sync {
		s.mandateRevs.wait(id, record, rev+1, s.flushMandates)
		return rev + 1, nil
	}
	// The batches of outcomes take waiting records along under finishMu: held here, no
	// older record of this mandate is in a batch committed after this one. A waiting
	// record goes only once this one, which replaces it, is written: should the write
	// fail, the one acknowledged before it is still to be written.
	s.finishMu.Lock()
	defer s.finishMu.Unlock()
	if err := s.putRevisioned(key(prefixMandate, id), rev+1, record); err != nil {
		return 0, err
	}
	s.mandateRevs.written(id, rev+1)
	return rev + 1, nil
}

// mandateValue is a mandate's value: its revision, then its record.
func mandateValue(rev uint64, record []byte) []byte {
	v := make([]byte, 0, mandateRevAt+len(record))
	v = binary.BigEndian.AppendUint64(v, rev)
	return append(v, record...)
}

// putRevisioned writes a revisioned record's value (a mandate's, a webhook
// endpoint's) in a synced batch, which commit refuses while the disk is full.
func (s *Store) putRevisioned(k []byte, rev uint64, record []byte) error {
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(k, mandateValue(rev, record), nil)
	return s.commit(b)
}

// mandateRevs are the revisions of the mandates this store read or wrote, and the
// records written without sync that are not yet durable: waiting for a batch, or in one
// being committed, which the database shows only once it is.
type mandateRevs struct {
	mu         sync.Mutex
	revs       map[string]uint64
	waiting    map[string]waitingMandate
	committing map[string]waitingMandate
	flush      *time.Timer
	closed     bool
}

func (m *mandateRevs) rev(id string) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rev, ok := m.revs[id]
	return rev, ok
}

// written notes a record written synced at rev: the waiting and committing ones it
// replaces are no longer to be read or written.
func (m *mandateRevs) written(id string, rev uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.revs == nil {
		m.revs = make(map[string]uint64)
	}
	m.revs[id] = rev
	if w, ok := m.waiting[id]; ok && w.rev <= rev {
		delete(m.waiting, id)
	}
	if w, ok := m.committing[id]; ok && w.rev <= rev {
		delete(m.committing, id)
	}
}

// waitingMandate is a record written without sync, at its revision. The record is the
// caller's, which does not change it: its value is made when a batch takes it, once,
// rather than for each record a newer one replaces before that.
type waitingMandate struct {
	record []byte
	rev    uint64
}

// wait keeps a record written without sync until a batch takes it, and starts the
// timer that writes it when no batch of outcomes comes.
func (m *mandateRevs) wait(id string, record []byte, rev uint64, flush func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.revs == nil {
		m.revs = make(map[string]uint64)
	}
	if m.waiting == nil {
		m.waiting = make(map[string]waitingMandate)
	}
	m.revs[id], m.waiting[id] = rev, waitingMandate{record, rev}
	if m.flush == nil && !m.closed {
		m.flush = time.AfterFunc(flushAfter, flush)
	}
}

// waited is the value of a record waiting for a batch, if any.
func (m *mandateRevs) waited(id string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.waiting[id]
	if !ok {
		if w, ok = m.committing[id]; !ok {
			return nil, false
		}
	}
	return mandateValue(w.rev, w.record), true
}

// take moves every waiting record into b, and returns them, to be put back should the
// batch fail. The caller holds finishMu: the records of one mandate reach the
// database in the order they were written.
func (m *mandateRevs) take(b *pebble.Batch) map[string]waitingMandate {
	m.mu.Lock()
	defer m.mu.Unlock()
	taken := m.waiting
	m.waiting = make(map[string]waitingMandate)
	if m.committing == nil {
		m.committing = make(map[string]waitingMandate)
	}
	for id, w := range taken {
		_ = b.Set(key(prefixMandate, id), mandateValue(w.rev, w.record), nil)
		m.committing[id] = w
	}
	return taken
}

// committed forgets the records of a batch that is written: the database shows them.
func (m *mandateRevs) committed(taken map[string]waitingMandate) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, w := range taken {
		if c, ok := m.committing[id]; ok && c.rev == w.rev {
			delete(m.committing, id)
		}
	}
}

// putBack returns to waiting the records of a batch that failed, but those a newer
// record replaced meanwhile.
func (m *mandateRevs) putBack(taken map[string]waitingMandate, flush func()) {
	if len(taken) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.waiting == nil {
		m.waiting = make(map[string]waitingMandate)
	}
	for id, w := range taken {
		if c, ok := m.committing[id]; ok && c.rev == w.rev {
			delete(m.committing, id)
		}
		if cur, newer := m.waiting[id]; !newer || cur.rev < w.rev {
			m.waiting[id] = w
		}
	}
	if m.flush == nil && !m.closed {
		m.flush = time.AfterFunc(flushAfter, flush)
	}
}

// flushMandates writes the records no batch of outcomes took along within flushAfter.
func (s *Store) flushMandates() {
	s.finishMu.Lock()
	defer s.finishMu.Unlock()
	m := &s.mandateRevs
	m.mu.Lock()
	m.flush = nil
	m.mu.Unlock()
	s.writeWaitingMandates()
}

// writeWaitingMandates writes the waiting records in a synced batch; finishMu is held.
func (s *Store) writeWaitingMandates() {
	b := s.db.NewBatch()
	defer b.Close()
	taken := s.mandateRevs.take(b)
	if len(taken) == 0 {
		return
	}
	if err := s.commit(b); err != nil {
		s.log.Warn("write mandates", "error", err)
		s.mandateRevs.putBack(taken, s.flushMandates)
		return
	}
	s.mandateRevs.committed(taken)
}

// closeMandates writes the waiting records before the database closes.
func (s *Store) closeMandates() {
	m := &s.mandateRevs
	m.mu.Lock()
	m.closed = true
	if m.flush != nil {
		m.flush.Stop()
		m.flush = nil
	}
	m.mu.Unlock()
	s.finishMu.Lock()
	defer s.finishMu.Unlock()
	s.writeWaitingMandates()
}

// decodeMandate reads a mandate's value (putRevisioned).
func decodeMandate(id string, v []byte) (record []byte, rev uint64, err error) {
	return decodeRevisioned("mandate", id, v)
}

// decodeRevisioned reads the value of a revisioned record (a mandate, a webhook
// endpoint). One too short to hold a revision, or of revision 0, which no write makes,
// is corrupt: an error that says so, so that no caller decides on a revision that is
// not there.
func decodeRevisioned(what, id string, v []byte) (record []byte, rev uint64, err error) {
	if len(v) < mandateRevAt {
		return nil, 0, fmt.Errorf("%s record %s is corrupt: %d bytes, too short for its %d-byte revision", what, id, len(v), mandateRevAt)
	}
	rev = binary.BigEndian.Uint64(v[:mandateRevAt])
	if rev == 0 {
		return nil, 0, fmt.Errorf("%s record %s is corrupt: revision 0", what, id)
	}
	return v[mandateRevAt:], rev, nil
}

// closed is intentd.ErrStoreClosed once Close has begun, as Finish answers: the
// database must not be touched after it is closed.
func (s *Store) closed() error {
	select {
	case <-s.closing:
		return intentd.ErrStoreClosed
	default:
		return nil
	}
}
