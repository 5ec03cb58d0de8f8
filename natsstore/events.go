package natsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// SetEventSink names the function that hears of every event once it is durable, in id
// order, from the goroutine that follows the event subject.
func (s *Store) SetEventSink(fn func(intentd.Event)) {
	s.sinkMu.Lock()
	s.sink = fn
	s.sinkMu.Unlock()
}

// Events calls fn for up to limit events with ids greater than after, in id order.
func (s *Store) Events(ctx context.Context, after uint64, limit int, fn func(intentd.Event) error) (err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	floor, _, err := s.floorNow(ctx)
	if err != nil {
		return err
	}
	next := max(after+1, floor)
	n := 0
	if limit >= pageByConsumer {
		// The consumer may be served by a replica that is behind the leader (one
		// just restarted and catching up): it says nothing is pending while the
		// stream has more. What it handed over counts; the leader tells the rest.
		got, last, err := s.eventsByConsumer(ctx, next, limit, fn)
		if err != nil {
			return err
		}
		n = got
		if got > 0 {
			next = last + 1
		}
	}
	for ; n < limit; n++ {
		m, err := s.getMsg(ctx, next, s.eventSubject())
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		ev, err := intentd.DecodeEvent(m.Sequence, m.Time, m.Data)
		if err != nil {
			return err
		}
		ev.Decided = decidedOf(m.Header)
		if err := fn(ev); err != nil {
			return kept{err}
		}
		next = m.Sequence + 1
	}
	return nil
}

// pageByConsumer is the page size from which Events reads through a consumer, which
// streams the page after one round trip to create it, rather than one direct get per
// event. On loopback a page of 256 took 2.9 ms through the consumer and 18 ms by direct
// gets (BenchmarkEventsPage); a page of a few is quicker by direct gets.
const pageByConsumer = 32

// pageConsumerWait bounds the making of a page's consumer: past it, the page is read
// from the leader. A consumer is made in milliseconds; one that takes longer waits for a
// server that has died, or for JetStream's leaders to be elected after it.
const pageConsumerWait = 2 * time.Second

// eventsByConsumer hands fn up to limit events from next on, read through a consumer
// made for the page, and says how many it handed over and the last one's id. What it
// did not hand over, the caller reads from the leader: the rest of a page a consumer
// left short, or all of it when no consumer could be made (the stream at its limit of
// consumers; in a cluster, the server that was to hold it just died), so that a page
// is slower then but never refused for it. So is the rest of a page whose consumer
// failed partway (it lives on one server, which may die): what was handed over is
// exact, and the leader reads on after it.
//
// The consumer is made with ctx and pulled from directly. nats.go's ordered consumer,
// used before, made one consumer when asked and then, on the first fetch, deleted it
// and made another, trying that one again with no end and without ctx while the
// servers refused it: a subscriber's replay stood silent, with no heartbeat and no
// error, for as long as a server's death lasted.
func (s *Store) eventsByConsumer(ctx context.Context, next uint64, limit int, fn func(intentd.Event) error) (got int, last uint64, err error) {
	making, cancel := context.WithTimeout(ctx, pageConsumerWait)
	defer cancel()
	cons, err := s.eventConsumer(making, next)
	if err != nil {
		if ctx.Err() != nil {
			return 0, 0, err
		}
		s.log.Debug("nats store: a page of events is read from the leader: its consumer was refused", "error", err)
		return 0, 0, nil
	}
	// failed hands the rest of the page to the leader's reads, unless ctx ended.
	failed := func(err error) (int, uint64, error) {
		if ctx.Err() != nil {
			return got, last, ctx.Err()
		}
		s.log.Debug("nats store: the rest of a page of events is read from the leader: its consumer failed", "error", err)
		return got, last, nil
	}
	// The page's consumer is deleted once the page is read, so that replays do not
	// pile consumers up on the stream; one whose delete fails goes by itself.
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = s.stream.DeleteConsumer(dctx, cons.CachedInfo().Name)
		cancel()
	}()
	// A fetch that does not wait answers with what the server has ready at once, which
	// for a consumer just made can be part of what there is, or nothing. Fetches go on
	// until the page is full or the consumer says nothing more is pending.
	var delivered uint64 // the consumer sequence of the last record, to see one lost
	for got < limit {
		batch, err := cons.FetchNoWait(limit - got)
		if err != nil {
			return failed(err)
		}
		n, pending := 0, uint64(1)
		for m := range batch.Messages() {
			meta, err := m.Metadata()
			if err != nil {
				return failed(err)
			}
			if meta.Sequence.Consumer != delivered+1 {
				// A record lost on the way: the leader reads on from the last one
				// handed over. The rest of the batch is buffered, not waited for.
				return got, last, nil
			}
			delivered = meta.Sequence.Consumer
			ev, err := intentd.DecodeEvent(meta.Sequence.Stream, meta.Timestamp, m.Data())
			if err != nil {
				return got, last, err
			}
			ev.Decided = decidedOf(m.Headers())
			if err := fn(ev); err != nil {
				return got, last, kept{err}
			}
			n, got, pending, last = n+1, got+1, meta.NumPending, meta.Sequence.Stream
		}
		if err := batch.Error(); err != nil {
			return failed(err)
		}
		if n > 0 && pending == 0 {
			return got, last, nil
		}
		if n == 0 {
			info, err := cons.Info(ctx)
			if err != nil {
				return failed(err)
			}
			if info.NumPending == 0 {
				return got, last, nil
			}
			select { // the server has more but did not hand it over yet
			case <-ctx.Done():
				return got, last, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return got, last, nil
}

// EventBounds reports the oldest retained event id (0 for none) and the last assigned.
// The newest event is never deleted, only hidden below the floor, so that the last id
// survives a prune of everything.
func (s *Store) EventBounds(ctx context.Context) (first, last uint64, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer end(&err)
	m, err := s.last(ctx, s.eventSubject())
	if errors.Is(err, intentd.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	last = m.Sequence
	floor, _, err := s.floorNow(ctx)
	if err != nil {
		return 0, 0, err
	}
	fm, err := s.getMsg(ctx, max(floor, 1), s.eventSubject())
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, last, nil
	}
	if err != nil {
		return 0, 0, err
	}
	return fm.Sequence, last, nil
}

// PruneEvents keeps the newest keep events and none older than olderThan. The events
// are purged from the stream, all but the newest, which is hidden by raising the floor
// when it is pruned too. The floor is written before anything is purged, so that a
// reader resuming meanwhile finds either the events or the floor that says they went,
// never a gap it cannot tell. Its cost does not grow with the events kept: the count
// comes from the stream's state, the newest event of those to go is found by a search
// over the stream's sequences, and the walk by age reads only the events it prunes.
func (s *Store) PruneEvents(ctx context.Context, keep uint64, olderThan time.Time) (n int, err error) {
	first, last, err := s.EventBounds(ctx)
	if err != nil || first == 0 {
		return 0, err
	}
	ctx, end, err := s.call(ctx)
	if err != nil {
		return 0, err
	}
	defer end(&err)
	before, err := s.eventCount(ctx)
	if err != nil {
		return 0, err
	}
	cut := first      // events below cut are pruned
	var pruned uint64 // the newest event below cut
	var uncounted error
	switch {
	case keep == 0:
		cut, pruned = last+1, last
	case before > keep:
		// The newest of those to go: its id is what a reader must have seen to have
		// missed nothing.
		p, ok, err := s.newestToGo(ctx, keep, first, last)
		switch {
		case ctx.Err() != nil:
			return 0, err
		case err != nil:
			// No count without consumers (the servers refuse them): the events
			// past their age still go, and the caller hears why the count did not.
			uncounted = fmt.Errorf("prune events by count: %w", err)
		case ok:
			cut, pruned = p+1, p
		}
	}
	// Events are written in time order, so the old ones are a prefix of the log.
	for cut <= last {
		m, err := s.getMsg(ctx, cut, s.eventSubject())
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			cut = last + 1
			break
		}
		if err != nil {
			return 0, err
		}
		if !m.Time.Before(olderThan) {
			cut = m.Sequence
			break
		}
		cut, pruned = m.Sequence+1, m.Sequence
	}
	if cut > first {
		if err := s.raiseFloor(ctx, cut, pruned); err != nil {
			return 0, err
		}
		if s.beforePurge != nil {
			s.beforePurge()
		}
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.eventSubject()), jetstream.WithPurgeSequence(min(cut, last))); err != nil {
			return 0, err
		}
	}
	after, err := s.eventCount(ctx)
	if err != nil {
		return 0, err
	}
	return int(before - min(after, before)), uncounted
}

// newestToGo is the event with keep events after it, among those from first to last:
// the newest event a prune that keeps keep removes, with ok false when no more than keep
// are counted from first. It is the last sequence from which a consumer of the events
// counts more than keep, found by halving [first, last], one consumer a step (at most 64,
// a few milliseconds each). A consumer on a replica behind the stream's leader counts
// fewer, and so finds an older event, or none: the prune then keeps more than keep
// events, never fewer.
func (s *Store) newestToGo(ctx context.Context, keep, first, last uint64) (seq uint64, ok bool, err error) {
	lo, hi := first, last
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		n, err := s.eventsFrom(ctx, mid)
		if err != nil {
			return 0, false, err
		}
		if n > keep {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == first {
		// Never counted: the stream's count of retained events said there were more
		// than keep, but a count is what decides.
		n, err := s.eventsFrom(ctx, first)
		if err != nil || n <= keep {
			return 0, false, err
		}
	}
	return lo, true, nil
}

// raiseFloor writes the floor record at cut, unless the stream holds one at cut or
// above already. Every node prunes on its own clock, and the floor record replaces the one
// before it: a prune that read the stream before another wrote a higher floor must not
// write a lower one, or a reader would be told less was pruned than was. So the write is
// fenced on the floor record read, and the record read again when another prune's came
// between.
func (s *Store) raiseFloor(ctx context.Context, cut, pruned uint64) error {
	for try := 1; ; try++ {
		floor, at, err := s.floorRecord(ctx)
		if err != nil {
			return err
		}
		if floor >= cut {
			return nil
		}
		if s.beforeFloorWrite != nil {
			s.beforeFloorWrite()
		}
		_, err = s.publish(ctx, fenced(floorMsg(s.floorSubject(), cut, pruned), at))
		if isWrongSeq(err) && try < raiseFloorTries {
			continue
		}
		if err != nil {
			return err
		}
		s.setFloor(cut, pruned)
		return nil
	}
}

// raiseFloorTries bounds how many times a prune reads the floor again after another
// node's prune wrote one between its read and its write; nodes prune once a minute.
const raiseFloorTries = 5

// eventsFrom counts the events stored at sequence seq or after it, as a consumer that
// starts there counts them.
func (s *Store) eventsFrom(ctx context.Context, seq uint64) (uint64, error) {
	cons, err := s.eventConsumer(ctx, seq)
	if err != nil {
		return 0, err
	}
	info := cons.CachedInfo()
	// One whose delete fails goes by itself, unused, after pageConsumerLife.
	deleting, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = s.stream.DeleteConsumer(deleting, info.Name)
	return info.NumPending, nil
}

// eventConsumer makes a consumer of the events from sequence from on: in memory, on one
// server, acknowledging nothing, and removed by the server once unused for
// pageConsumerLife if whoever made it does not delete it first.
func (s *Store) eventConsumer(ctx context.Context, from uint64) (jetstream.Consumer, error) {
	return s.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubject:     s.eventSubject(),
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: pageConsumerLife,
		Replicas:          1,
		MemoryStorage:     true,
	})
}

// eventCount is the number of retained events: those stored, less the one kept below
// the floor only for its id, if any.
func (s *Store) eventCount(ctx context.Context) (uint64, error) {
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(s.eventSubject()))
	if err != nil {
		return 0, err
	}
	n := info.State.Subjects[s.eventSubject()]
	if n == 0 {
		return 0, nil
	}
	s.mu.Lock()
	floor := s.floor
	s.mu.Unlock()
	if floor > 0 {
		// At most one event is below the floor, and it is the oldest stored.
		m, err := s.getMsg(ctx, 1, s.eventSubject())
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, err
		}
		if err == nil && m.Sequence < floor {
			n--
		}
	}
	return n, nil
}

func (s *Store) setFloor(f, pruned uint64) {
	s.mu.Lock()
	if f > s.floor {
		s.floor, s.pruned = f, pruned
	}
	s.mu.Unlock()
}

// PrunedThrough reports the id of the newest event pruned, 0 when none was. Ids skip
// the sequences of other records, so the oldest retained id does not tell whether a
// reader who saw event N missed any: one did only when N is older than this.
func (s *Store) PrunedThrough(ctx context.Context) (_ uint64, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return 0, err
	}
	defer end(&err)
	_, pruned, err := s.floorNow(ctx)
	return pruned, err
}

// floorNow reads the floor record from the stream's leader, raises the index's floor to
// it, and returns the index's. The index takes a prune another member made up to its
// window later (200 ms by default), and a reader who resumes meanwhile must be told
// that its events are gone rather than be handed, as the oldest retained, the event kept
// below the floor only for its id. One read of the leader a call: its callers are a
// subscription's start, a page of replayed events, the event log's bounds, a webhook's
// delivery of an event by id and the console's marks of time (a read per step of their
// search), not the path of a command.
func (s *Store) floorNow(ctx context.Context) (floor, pruned uint64, err error) {
	if _, _, err := s.floorRecord(ctx); err != nil {
		return 0, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.floor, s.pruned, nil
}

// floorRecord reads the stream's floor record through its leader: the floor it holds,
// which this store's own floor is raised to, and its sequence, the fence of the next
// write of it; 0 and 0 while there is none.
func (s *Store) floorRecord(ctx context.Context) (floor, seq uint64, err error) {
	m, err := s.last(ctx, s.floorSubject())
	if errors.Is(err, intentd.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if f, p, ok := floorOf(m.Header); ok {
		s.setFloor(f, p)
		floor = f
	}
	return floor, m.Sequence, nil
}

// pageConsumerLife is how long the server keeps the consumer of a page of events that
// its reader could not delete: a page takes milliseconds, and the client's default, five
// minutes, kept a consumer for every page every subscriber read. A stream holds at most 1,000 consumers
// by default: under clients that reconnected and read the stream again, pages were
// refused with "maximum consumers limit reached".
const pageConsumerLife = 10 * time.Second
