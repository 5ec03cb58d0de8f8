package natsstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// follow starts the watcher that keeps the indexes: an ordered consumer of the headers of
// the intent, policy and floor subjects, first the last record of each, then every new
// one, in stream order. It returns once the first pass is applied. Writes of other nodes
// reach the index only through it; this store's own writes are applied at once as well,
// so that a read follows a write without waiting.
func (s *Store) follow(ctx context.Context) error {
	cons, err := retryTries(ctx, func(try context.Context) (jetstream.Consumer, error) {
		return s.js.OrderedConsumer(try, s.name, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{s.prefix + ".intent.*", s.prefix + ".policy.*", s.floorSubject()},
			DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
			HeadersOnly:    true,
		})
	})
	if err != nil {
		return fmt.Errorf("nats store: follow the stream: %w", err)
	}
	loaded := make(chan struct{})
	var once bool
	s.watch, err = cons.Consume(func(m jetstream.Msg) {
		meta, err := m.Metadata()
		if err != nil {
			return
		}
		s.applyWatched(m.Subject(), meta.Sequence.Stream, m.Headers())
		if meta.NumPending == 0 && !once {
			once = true
			close(loaded)
		}
	}, followOpts...)
	if err != nil {
		return err
	}
	// An empty index delivers nothing to wait for: the consumer's state says so. Its
	// first answer may be slow on a stream just created, so it is asked again.
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		info, err := cons.Info(try)
		cancel()
		if err == nil {
			if info.NumPending == 0 && info.Delivered.Stream == 0 {
				return nil
			}
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("nats store: load the indexes: %w", err)
		}
	}
	select {
	case <-loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("nats store: load the indexes: %w", ctx.Err())
	}
}

func (s *Store) applyWatched(subject string, seq uint64, h map[string][]string) {
	get := func(k string) string {
		if v := h[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	kind, id, _ := strings.Cut(strings.TrimPrefix(subject, s.prefix+"."), ".")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case "intent":
		id = untoken(id)
		cur, ok := s.intents[id]
		if ok && cur.seq > seq {
			break
		}
		phase := get(hdrPhase)
		if phase == phaseDone || phase == "" {
			// A finished intent leaves the indexes; nothing older than it can come.
			delete(s.intents, id)
			break
		}
		e := entryOf(seq, nats.Header(h))
		s.intents[id] = &e
	case "policy":
		id = untoken(id)
		if cur, ok := s.policies[id]; !ok || cur.seq < seq {
			s.policies[id] = policyState{seq: seq, live: get(hdrOp) != opDelete}
		}
	case "meta":
		if f, err := strconv.ParseUint(get(hdrFloor), 10, 64); err == nil && f > s.floor {
			s.floor, s.pruned = f, f-1 // a floor record older than hdrPruned
			if p, err := strconv.ParseUint(get(hdrPruned), 10, 64); err == nil {
				s.pruned = p
			}
		}
	}
	if seq > s.applied {
		s.applied = seq
		close(s.advanced)
		s.advanced = make(chan struct{})
	}
}

// retryTries calls fn with a short time-out of its own until it succeeds, fails for a
// reason other than an unanswered request, or ctx ends. A stream whose leader is being
// elected (a NATS server just died) leaves a request unanswered, and one try that waited
// for ctx would leave no time for the next, answered one.
func retryTries[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := fn(try)
		cancel()
		if err == nil || ctx.Err() != nil || !unreachable(err) && !jetStreamNotReady(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// followOpts make a follower notice a lost server within seconds: a pull that brings
// nothing ends after a few seconds, and heartbeats missed for half of it make the
// ordered consumer start again after the last message it had, on whichever server
// answers. The default waits 30 s, while the index and the event stream stand still.
var followOpts = []jetstream.PullConsumeOpt{jetstream.PullExpiry(4 * time.Second)}

// waitApplied waits until the watcher has applied the record at seq, and so every record
// of its subjects before it.
func (s *Store) waitApplied(ctx context.Context, seq uint64) error {
	for {
		s.mu.Lock()
		applied, advanced := s.applied, s.advanced
		s.mu.Unlock()
		if applied >= seq {
			return nil
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
	cons, err := retryTries(ctx, func(try context.Context) (jetstream.Consumer, error) {
		return s.js.OrderedConsumer(try, s.name, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{s.eventSubject()},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    lastSeq + 1,
		})
	})
	if err != nil {
		return err
	}
	s.events, err = cons.Consume(func(m jetstream.Msg) {
		meta, err := m.Metadata()
		if err != nil {
			return
		}
		ev, err := intentd.DecodeEvent(meta.Sequence.Stream, meta.Timestamp, m.Data())
		if err != nil {
			s.log.Error("skip a corrupt event", "error", err)
			return
		}
		s.sinkMu.RLock()
		sink := s.sink
		s.sinkMu.RUnlock()
		if sink != nil {
			sink(ev)
		}
	}, followOpts...)
	return err
}
