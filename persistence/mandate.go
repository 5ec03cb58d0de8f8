package persistence

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

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
	if err := s.putMandate(k, 1, record, true); err != nil {
		return err
	}
	s.noteMandateRev(id, 1)
	return nil
}

// Mandate returns a mandate's record and its revision, which the caller names to
// UpdateMandate: intentd.ErrNotFound when none is stored.
func (s *Store) Mandate(_ context.Context, id string) (record []byte, rev uint64, err error) {
	if err := s.closed(); err != nil {
		return nil, 0, err
	}
	v, err := s.get(key(prefixMandate, id))
	if err != nil {
		return nil, 0, err
	}
	return decodeMandate(id, v)
}

// UpdateMandate replaces the record of revision rev and returns the next revision, in
// a synced batch with sync, and otherwise in one the write-ahead log takes in order
// before the store's next synced batch, which makes both durable: a purchase's
// decision costs no fsync of its own, and its intent's outcome, written synced after
// it, cannot be on disk without it. The revision is compared and the record written
// under the mandate's claim, so a writer that read an older revision, or none (a
// mandate not stored; no record is at revision 0), is refused with intentd.ErrStale
// and nothing is written: it reads the mandate again and decides on what another
// writer made of it. The revision is kept in memory once read or written: this store
// is its database's only writer, and a decision does not read the whole record back
// to compare a number.
func (s *Store) UpdateMandate(_ context.Context, id string, record []byte, rev uint64, sync bool) (uint64, error) {
	if err := s.closed(); err != nil {
		return 0, err
	}
	defer s.mandates.claim(id)()
	k := key(prefixMandate, id)
	cur, ok := s.mandateRev(id)
	if !ok {
		v, err := s.get(k)
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
	if err := s.putMandate(k, rev+1, record, sync); err != nil {
		s.forgetMandateRev(id) // what the database holds is not known
		return 0, err
	}
	s.noteMandateRev(id, rev+1)
	return rev + 1, nil
}

// putMandate writes a mandate's value, its revision then its record, through commit,
// which refuses it while the disk is full and, with sync, makes it durable before it
// returns.
func (s *Store) putMandate(k []byte, rev uint64, record []byte, sync bool) error {
	v := make([]byte, 0, mandateRevAt+len(record))
	v = binary.BigEndian.AppendUint64(v, rev)
	v = append(v, record...)
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(k, v, nil)
	if !sync {
		return s.commitUnsynced(b)
	}
	return s.commit(b)
}

// mandateRevs are the revisions of the mandates this store read or wrote, under the
// lock, which each id's claim orders with the writes of that id.
type mandateRevs struct {
	mu   sync.Mutex
	revs map[string]uint64
}

func (s *Store) mandateRev(id string) (uint64, bool) {
	s.mandateRevs.mu.Lock()
	defer s.mandateRevs.mu.Unlock()
	rev, ok := s.mandateRevs.revs[id]
	return rev, ok
}

func (s *Store) noteMandateRev(id string, rev uint64) {
	s.mandateRevs.mu.Lock()
	defer s.mandateRevs.mu.Unlock()
	if s.mandateRevs.revs == nil {
		s.mandateRevs.revs = make(map[string]uint64)
	}
	s.mandateRevs.revs[id] = rev
}

func (s *Store) forgetMandateRev(id string) {
	s.mandateRevs.mu.Lock()
	defer s.mandateRevs.mu.Unlock()
	delete(s.mandateRevs.revs, id)
}

// decodeMandate reads a mandate's value (putMandate). One too short to hold a revision,
// or of revision 0, which no write makes, is corrupt: an error that says so, so that no
// caller decides on a revision that is not there.
func decodeMandate(id string, v []byte) (record []byte, rev uint64, err error) {
	if len(v) < mandateRevAt {
		return nil, 0, fmt.Errorf("mandate record %s is corrupt: %d bytes, too short for its %d-byte revision", id, len(v), mandateRevAt)
	}
	rev = binary.BigEndian.Uint64(v[:mandateRevAt])
	if rev == 0 {
		return nil, 0, fmt.Errorf("mandate record %s is corrupt: revision 0", id)
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
