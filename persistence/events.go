package persistence

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// startSeq is the event id the committer starts after: the last event's, or the end of
// a gap past it (eventids.go).
func (s *Store) startSeq() (uint64, error) {
	seq, err := s.readSeq()
	if err != nil {
		return 0, err
	}
	gap, err := s.lastGapEnd()
	return max(seq, gap), err
}

// readSeq is the id of the last event written, 0 for none.
func (s *Store) readSeq() (uint64, error) {
	v, err := s.get([]byte(keyEventSeq))
	if errors.Is(err, intentd.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("event sequence record is %d bytes, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// SetEventSink names the function that hears of every event once it is durable, in id
// order, from the committer's goroutine. It must not block; it is set before the first
// Finish.
func (s *Store) SetEventSink(fn func(intentd.Event)) {
	s.sinkMu.Lock()
	s.sink = fn
	s.sinkMu.Unlock()
}

type finishReq struct {
	id, policyID string
	snapshot     []byte
	expiresAt    time.Time
	event        intentd.Event
	at           time.Time
	reply        chan finishResult
}

type finishResult struct {
	eventID uint64
	err     error
}

// maxGroup bounds one committed group so a burst cannot build an unbounded batch.
const maxGroup = 512

func (s *Store) commitLoop() {
	defer close(s.done)
	group := make([]*finishReq, 0, maxGroup)
	for {
		group = group[:0]
		select {
		case r := <-s.finishCh:
			group = append(group, r)
		case <-s.closing:
			s.drainOnClose()
			return
		}
	more:
		for len(group) < maxGroup {
			select {
			case r := <-s.finishCh:
				group = append(group, r)
			default:
				break more
			}
		}
		s.commitGroup(group)
	}
}

// drainOnClose answers what is still queued: a request queued before Close is written.
func (s *Store) drainOnClose() {
	for {
		select {
		case r := <-s.finishCh:
			s.commitGroup([]*finishReq{r})
		default:
			return
		}
	}
}

func (s *Store) commitGroup(group []*finishReq) {
	b := s.db.NewBatch()
	defer b.Close()
	seq := s.seq
	events := make([]intentd.Event, 0, len(group))
	for _, r := range group {
		seq++
		b.Set(key(prefixIntent, r.id), r.snapshot, nil)
		b.Delete(expiryKey(r.expiresAt, r.id), nil)
		b.Delete(key(prefixProcessing, r.id), nil)
		b.Set(eventKey(seq), eventRecord(r.at, r.event.Data), nil)
		ev := r.event
		ev.ID, ev.At = seq, r.at
		events = append(events, ev)
	}
	b.Set([]byte(keyEventSeq), binary.BigEndian.AppendUint64(nil, seq), nil)
	var err error
	if !s.noMark && seq > s.issued.Load() {
		err = s.reserveIDs(seq)
	}
	// A reader sees the group's terminal snapshots once the commit is done, a moment
	// before their references are released: DeletePolicy waits for finishMu, so that a
	// delete after an outcome it read never counts that outcome's reference.
	s.finishMu.Lock()
	var mandates map[string]waitingMandate
	if err == nil {
		// The mandates' records written without sync go with the outcomes: a
		// purchase's decision is on disk no later than its outcome.
		mandates = s.mandateRevs.take(b)
		err = s.commit(b)
	}
	if err != nil {
		s.mandateRevs.putBack(mandates, s.flushMandates)
		s.finishMu.Unlock()
		// Nothing of the group is written and the sequence does not advance, so ids
		// stay gapless; each caller learns its write failed.
		for _, r := range group {
			r.reply <- finishResult{err: fmt.Errorf("write terminal state of %s: %w", r.id, err)}
		}
		return
	}
	s.mandateRevs.committed(mandates)
	s.seq = seq
	s.durableSeq.Store(seq)
	s.releaseRefs(group)
	s.finishMu.Unlock()
	s.sinkMu.RLock()
	sink := s.sink
	s.sinkMu.RUnlock()
	for i, r := range group {
		if sink != nil {
			sink(events[i])
		}
		r.reply <- finishResult{eventID: events[i].ID}
	}
}

// Events calls fn for up to limit events with ids greater than after, in id order.
func (s *Store) Events(_ context.Context, after uint64, limit int, fn func(intentd.Event) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: eventKey(after + 1), UpperBound: []byte{prefixEvent + 1}})
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		ev, err := decodeEvent(it.Key(), it.Value())
		if err != nil {
			it.Close()
			return err
		}
		if err := fn(ev); err != nil {
			it.Close()
			return err
		}
		n++
	}
	return it.Close()
}

// EventBounds reports the oldest retained event id, 0 when none is, and the id of the
// last event written, retained or pruned. The ids of a gap after it (eventids.go) were
// handed out for events a loss took, or held in reserve, and are not counted: the engine
// takes last for an event the log gave or pruned, and a reader resuming inside the gap
// would otherwise be told that the log reads less than it holds. The sequence record on
// disk keeps the gap's end, for a version that knows no gaps.
func (s *Store) EventBounds(context.Context) (first, last uint64, err error) {
	if last, err = s.readSeq(); err == nil {
		last, err = s.outsideGaps(last)
	}
	if err != nil {
		return 0, 0, err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixEvent}, UpperBound: []byte{prefixEvent + 1}})
	if err != nil {
		return 0, 0, err
	}
	if it.First() && len(it.Key()) == 9 {
		first = binary.BigEndian.Uint64(it.Key()[1:])
	}
	return first, last, it.Close()
}

// PrunedThrough reports the id of the newest event pruned, 0 when none was. Ids have no
// gaps here but those of a loss (eventids.go), so it is the one before the oldest
// retained, or the last when none is (EventBounds has already stepped it out of the
// gaps), or the id before a gap that holds that one: a reader who saw the lost events
// has missed none that was pruned.
func (s *Store) PrunedThrough(ctx context.Context) (uint64, error) {
	first, last, err := s.EventBounds(ctx)
	if err != nil || first == 0 {
		return last, err
	}
	return s.outsideGaps(first - 1)
}

// PruneEvents deletes the oldest events beyond keep and those written before olderThan,
// and reports how many it deleted. The sequence record is kept, so ids never restart.
func (s *Store) PruneEvents(ctx context.Context, keep uint64, olderThan time.Time) (int, error) {
	first, last, err := s.EventBounds(ctx)
	if err != nil || first == 0 {
		return 0, err
	}
	cut := first // events with id < cut are deleted
	if from, err := s.keepFrom(last, keep); err != nil {
		return 0, err
	} else if from > cut {
		cut = from
	}
	// Events are written in time order, so the old ones are a prefix of the log.
	err = s.Events(ctx, cut-1, int(last-cut+1), func(e intentd.Event) error {
		if !e.At.Before(olderThan) {
			return errStop
		}
		cut = e.ID + 1
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, err
	}
	if cut <= first {
		return 0, nil
	}
	// Counted, not taken as cut-first: a gap among them holds ids of no event.
	n, err := s.countKeys(eventKey(first), eventKey(cut))
	if err != nil {
		return 0, err
	}
	if err := s.db.DeleteRange(eventKey(first), eventKey(cut), s.writeOpts); err != nil {
		return 0, err
	}
	return n, nil
}

var errStop = errors.New("stop")

// countKeys counts the keys from lo up to hi.
func (s *Store) countKeys(lo, hi []byte) (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}
