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
	// An empty index delivers nothing to wait for: the consumer's state says so. Its
	// first answer may be slow on a stream just created, so it is asked again, whatever
	// the error, until ctx ends.
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		info, err := cons.Info(try)
		cancel()
		if err == nil {
			if info.NumPending == 0 && info.Delivered.Consumer == 0 {
				return s.indexCaughtUp(ctx, f)
			}
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nats store: load the indexes: %w", err)
		case <-time.After(100 * time.Millisecond): // an error that comes at once is not asked again at once
		}
	}
	select {
	case <-loaded:
		return s.indexCaughtUp(ctx, f)
	case <-ctx.Done():
		return fmt.Errorf("nats store: load the indexes: %w", ctx.Err())
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
			return fmt.Errorf("nats store: load the indexes: %w", err)
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
			return fmt.Errorf("nats store: load the indexes: %w", err)
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
	for {
		s.mu.Lock()
		applied, advanced, watch := s.applied, s.advanced, s.watch
		s.mu.Unlock()
		if applied >= seq {
			return nil
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
