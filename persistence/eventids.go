package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// An event id is never handed out twice, even by a store that lost acknowledged writes
// and was opened on what remains (--accept-data-loss): subscribers and the transparency
// log saw the lost events, and would take a new event under an old id for the old one.
// The mark, which lives outside the log, keeps a ceiling that no id handed out is above
// (markRecord.issued); the committer raises it, and writes it, before it hands out an id
// past it, so a loss that drops the log's last events, and their ids, leaves the ceiling.
// A start that accepts a loss writes the ids between the last surviving event and the
// ceiling as a gap, and the next event is numbered past it. So ids stay gapless but for
// such a gap, which marks events that were lost (and ids the ceiling held in reserve).
//
// The ceiling is raised idReserve ids at a time, by the mark's own updates while events
// come (markLoop, a few times a second) and by the committer only when events came
// faster than those updates: a lost start of the log costs at most idReserve ids beyond
// the lost events, and the committer does not wait on the mark's fsyncs at ordinary
// rates.

// idReserve is how far the ceiling of event ids is raised past the last id given: above
// 2,000 events a second, the committer raises it itself, one wait for the mark's three
// fsyncs every few hundred events.
const idReserve = 1024

// reserveIDs raises the ceiling of event ids past upTo, writing the mark, before the
// committer hands out ids up to upTo.
func (s *Store) reserveIDs(upTo uint64) error {
	s.markMu.Lock()
	defer s.markMu.Unlock()
	if upTo <= s.marked.issued {
		return nil // the mark's update raised it meanwhile
	}
	m := markRecord{writes: s.durable.Load(), events: s.durableSeq.Load(), issued: upTo + idReserve}
	if err := writeMark(s.fs, s.dir, m); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			err = fmt.Errorf("%w: %w", intentd.ErrStorageFull, err)
		}
		return fmt.Errorf("raise the event ids' ceiling in the mark: %w", err)
	}
	s.marked = m
	s.issued.Store(m.issued)
	return nil
}

// skipIDs writes the ids after the last event up to ceiling as a gap, and numbers the
// next event past it: the ids a store that lost its last events had handed out.
func (s *Store) skipIDs(ceiling uint64) error {
	if ceiling <= s.seq {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(gapKey(s.seq+1), binary.BigEndian.AppendUint64(nil, ceiling), nil)
	// The sequence record moves with the gap: it is the last id handed out, which the
	// engine reads as such, and a version that knows no gaps numbers on from it.
	_ = b.Set([]byte(keyEventSeq), binary.BigEndian.AppendUint64(nil, ceiling), nil)
	if err := s.commit(b); err != nil {
		return err
	}
	s.seq = ceiling
	s.durableSeq.Store(ceiling)
	return nil
}

// lastGapEnd is the last id of the newest gap, 0 for none: the event ids resume past it.
func (s *Store) lastGapEnd() (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixGap}, UpperBound: []byte{prefixGap + 1}})
	if err != nil {
		return 0, err
	}
	var hi uint64
	if it.Last() && len(it.Value()) == 8 {
		hi = binary.BigEndian.Uint64(it.Value())
	}
	return hi, it.Close()
}

// gapAt reports the gap that holds id: its first id, and whether there is one.
func (s *Store) gapAt(id uint64) (lo uint64, ok bool, err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixGap}, UpperBound: gapKey(id + 1)})
	if err != nil {
		return 0, false, err
	}
	if it.Last() && len(it.Key()) == 9 && len(it.Value()) == 8 && binary.BigEndian.Uint64(it.Value()) >= id {
		lo, ok = binary.BigEndian.Uint64(it.Key()[1:]), true
	}
	return lo, ok, it.Close()
}

// outsideGaps is id, or when a gap holds it the id before the gap, and so on: the
// newest id at or below id that is not in a gap.
func (s *Store) outsideGaps(id uint64) (uint64, error) {
	for id > 0 {
		lo, ok, err := s.gapAt(id)
		if err != nil || !ok {
			return id, err
		}
		id = lo - 1
	}
	return 0, nil
}

// keepFrom is the id from which the newest keep events up to last are kept: last-keep+1
// when the ids have no gap, and as much lower as the gaps among them are wide.
func (s *Store) keepFrom(last, keep uint64) (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixGap}, UpperBound: gapKey(last + 1)})
	if err != nil {
		return 0, err
	}
	from, need := last+1, keep
	for ok := it.Last(); ok && need > 0; ok = it.Prev() {
		if len(it.Key()) != 9 || len(it.Value()) != 8 {
			continue
		}
		lo, hi := binary.BigEndian.Uint64(it.Key()[1:]), binary.BigEndian.Uint64(it.Value())
		if hi >= from {
			hi = from - 1 // a gap ends at the last id at most; this only guards the sums
		}
		if n := from - 1 - hi; n >= need {
			break
		} else {
			need -= n
		}
		from = lo
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	if need >= from {
		return 1, nil
	}
	return from - need, nil
}
