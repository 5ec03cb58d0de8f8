package natsstore

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// follow starts the watcher that keeps the indexes: a follower of the headers of
// the intent, policy and floor subjects, first the last record of each, then every new
// one, in stream order. It returns once the first pass is applied. Writes of other nodes
// reach the index only through it; this store's own writes are applied at once as well,
// so that a read follows a write without waiting.
func (s *Store) follow(ctx context.Context) error {
	loaded := make(chan struct{})
	var once bool
	f := s.indexFollower(s.indexSubjects())
	apply := f.handle
	f.handle = func(m jetstream.Msg, meta *jetstream.MsgMetadata) {
		apply(m, meta)
		if meta.NumPending == 0 && !once {
			once = true
			close(loaded)
		}
	}
	cons, err := f.start(ctx, jetstream.DeliverLastPerSubjectPolicy, 0)
	if err != nil {
		return fmt.Errorf("nats store: follow the stream: %w", err)
	}
	s.mu.Lock()
	s.watch = f
	s.mu.Unlock()
	if err := s.firstPass(ctx, f, cons, loaded); err != nil {
		return err
	}
	return s.indexCaughtUp(ctx, f)
}

// firstPassTick is how often firstPass looks at a first pass under way.
const firstPassTick = 250 * time.Millisecond

// firstPass returns once f's consumer has handed over the last record of each of its
// subjects (loaded closes), or says it holds none. Meanwhile it watches the follower:
// one that hands over nothing for stallAfter while the stream's leader holds a record
// after its last is replaced, after that record. The store's checks of its followers
// (check) start only once Open returns; before this watch, a consumer that stood still
// at a start, just after a NATS server came back, held the start until its time ran
// out, and said nothing. One that moves, however slowly, is left to finish: a large
// index takes a while, and its first pass takes the last record of each subject alone.
func (s *Store) firstPass(ctx context.Context, f *follower, cons jetstream.Consumer, loaded <-chan struct{}) error {
	tick := time.NewTicker(firstPassTick)
	defer tick.Stop()
	// An empty index delivers nothing to wait for: the consumer's state says so. Its
	// first answer may be slow on a stream just created, so it is asked again at each
	// tick, whatever the error, until it answers.
	asked := false
	seen, since := f.lastHandled(), time.Now()
	for {
		if !asked {
			try, cancel := context.WithTimeout(ctx, probeTimeout)
			info, err := cons.Info(try)
			cancel()
			if err == nil {
				asked = true
				if info.NumPending == 0 && info.Delivered.Consumer == 0 {
					return nil
				}
			}
		}
		select {
		case <-loaded:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("nats store: load the indexes: the first pass stood at record %d: %w", f.lastHandled(), ctx.Err())
		case now := <-tick.C:
			last := f.lastHandled()
			if last != seen {
				seen, since = last, now
				continue
			}
			if now.Sub(since) < stallAfter {
				continue
			}
			probe, cancel := context.WithTimeout(ctx, probeTimeout)
			next, err := f.next(probe, last)
			cancel()
			switch {
			case err != nil:
				continue // the leader does not answer; it is being elected
			case next == 0:
				return nil // nothing after the last record handled: indexCaughtUp checks again
			}
			s.log.Warn("nats store: the index's first pass stands still behind the stream's leader; a new follower takes over",
				"last", last, "next", next, "since", since)
			f.mu.Lock()
			policy, from := f.run.resumeAt(last)
			f.mu.Unlock()
			c, err := f.start(ctx, policy, from)
			if err != nil {
				return fmt.Errorf("nats store: load the indexes: replace the first pass's follower: %w", err)
			}
			f.replaced.Add(1)
			cons, asked, since = c, false, now
		}
	}
}

// indexFollower is a follower of the headers of subjects, the indexes' or the
// policies' alone (scope.go), that applies each record to the indexes.
func (s *Store) indexFollower(subjects []string) *follower {
	return &follower{s: s, what: "the indexes", headersOnly: true, hurry: make(chan struct{}, 1), window: s.patientWindow,
		subjects: subjects,
		handle: func(m jetstream.Msg, meta *jetstream.MsgMetadata) {
			s.applyWatched(m.Subject(), meta.Sequence.Stream, m.Headers())
		}}
}

// indexCaughtUp returns once the stream's leader has no record of the index's subjects
// after the last one the follower handled. The follower's consumer may be served by a
// replica that is behind the leader, one just restarted and catching up: it says it
// has handed over everything while the stream has more, and an index loaded from it
// alone would miss intents, whose proposals would then never be resumed. A follower
// that does not reach the leader's records within stallAfter is replaced.
func (s *Store) indexCaughtUp(ctx context.Context, f *follower) error {
	for {
		f.mu.Lock()
		last := f.last
		f.mu.Unlock()
		next, err := retryTries(ctx, func(try context.Context) (uint64, error) { return f.next(try, last) })
		if err != nil {
			return fmt.Errorf("nats store: load the indexes: ask the stream's leader for a record after %d: %w", last, err)
		}
		if next == 0 {
			return nil
		}
		wait, cancel := context.WithTimeout(ctx, stallAfter)
		err = s.waitApplied(wait, next)
		cancel()
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("nats store: load the indexes: the stream's leader has record %d, the index reached %d: %w", next, last, ctx.Err())
		}
		s.log.Warn("nats store: the index stands behind the stream's leader at start; a new follower takes over", "last", last, "next", next)
		if _, err := f.start(ctx, jetstream.DeliverByStartSequencePolicy, last+1); err != nil {
			return fmt.Errorf("nats store: load the indexes: replace the follower behind the leader: %w", err)
		}
	}
}

// applyWatched applies a record of the indexes' subjects, at seq, to the indexes.
func (s *Store) applyWatched(subject string, seq uint64, h nats.Header) {
	kind, id, _ := s.parseSubject(subject)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case kindIntent:
		if !s.indexing {
			break // a record the follower before a narrowing handed on late
		}
		cur, ok := s.intents[id]
		if ok && cur.seq > seq {
			break
		}
		e := entryOf(seq, h)
		if e.phase == phaseDone || e.phase == "" {
			// A finished intent leaves the indexes; nothing older than it can come.
			s.forgetIntent(id)
			break
		}
		s.putIntent(id, &e)
	case kindPolicy:
		if cur, ok := s.policies[id]; !ok || cur.seq < seq {
			s.policies[id] = policyState{seq: seq, live: !isTombstone(h)}
			s.noteTombstone(id, seq, isTombstone(h))
		}
	case kindMeta:
		if f, pruned, ok := floorOf(h); ok && f > s.floor {
			s.floor, s.pruned = f, pruned
		}
	}
	if seq > s.applied {
		s.applied = seq
		s.advance()
	}
}

// catchUp waits until the watcher has applied every record of its subjects that the
// stream held when catchUp was called, or later ones.
func (s *Store) catchUp(ctx context.Context) error {
	for {
		s.mu.Lock()
		applied := s.applied
		s.mu.Unlock()
		next, err := s.watch.next(ctx, applied)
		if err != nil || next == 0 {
			return err
		}
		if err := s.waitApplied(ctx, next); err != nil {
			return err
		}
	}
}

// waitApplied waits until the watcher has applied the record at seq, and so every record
// of its subjects before it. It hurries the watcher, which would otherwise let its
// window pass first: every create waits so for its own record (checkPolicyAfter).
func (s *Store) waitApplied(ctx context.Context, seq uint64) error {
	return s.waitFollower(ctx, seq, nil)
}

// waitFollower waits until the follower has applied the record at seq, hurrying it.
// enough, when given, is asked on each look while the follower is narrowed (scope.go)
// whether what is applied already answers the caller: a narrowed follower may never
// apply seq itself.
func (s *Store) waitFollower(ctx context.Context, seq uint64, enough func(applied uint64) (bool, error)) error {
	for {
		s.mu.Lock()
		applied, advanced, watch, partial := s.applied, s.advanced, s.watch, s.partial
		s.mu.Unlock()
		if applied >= seq {
			return nil
		}
		if partial && enough != nil {
			if ok, err := enough(applied); ok || err != nil {
				return err
			}
		}
		if watch != nil {
			watch.hurryUp()
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// followEvents starts the consumer that tells the sink of each event after the stream's
// last sequence at open, in stream order, once each.
func (s *Store) followEvents(ctx context.Context, lastSeq uint64) error {
	f := &follower{s: s, what: "the events", subjects: []string{s.eventSubject()}, hurry: s.eventsHurry, window: s.eventsWindow,
		handle: func(m jetstream.Msg, meta *jetstream.MsgMetadata) {
			ev, err := intentd.DecodeEvent(meta.Sequence.Stream, meta.Timestamp, m.Data())
			if err != nil {
				s.log.Error("skip a corrupt event", "error", err)
				return
			}
			ev.Decided = decidedOf(m.Headers())
			s.sinkMu.RLock()
			sink := s.sink
			s.sinkMu.RUnlock()
			if sink != nil {
				sink(ev)
			}
		}}
	f.last = lastSeq
	if _, err := f.start(ctx, jetstream.DeliverByStartSequencePolicy, lastSeq+1); err != nil {
		return err
	}
	s.mu.Lock()
	s.events = f
	s.mu.Unlock()
	return nil
}
