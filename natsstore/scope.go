package natsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/compactmap"
)

// What the index follows. Every node's follower of the indexes read every record of
// every intent (three for each intent decided), to keep an index that only the member
// scanning for expiries and resuming proposals reads: in a cluster of N members, N
// times the work of one. A store told by its engine that it does not scan the index
// (KeepIndex(false)) narrows its follower to the policies and the floor once nothing
// has needed the index for indexLinger: its intents' entries are then the fences of
// what it wrote or read lately (fences.go), and the processing list, the due
// expiries and a policy's delete widen the follower again, loading the index from the
// last record of each intent, as Open does, before they answer.
//
// The follower's states, under s.mu: following every intent (indexing, not partial);
// narrowed (partial, not indexing); widening (partial and indexing: the index loads
// while the fences still serve the writes).

var _ intentd.IndexKeeper = (*Store)(nil)

// indexLinger is how long a store told not to keep the index keeps it after its last
// use: long enough that a node's start (which lists the processing intents) and a
// burst of policy deletes need one load, short enough that a member follows what it
// does not read for seconds at most.
const indexLinger = 5 * time.Second

// KeepIndex says whether this node scans the index (intentd.IndexKeeper). A store is
// opened keeping it; one told false narrows its follower at the next check after the
// index was last used (checkFollowers), one told true widens it there.
func (s *Store) KeepIndex(keep bool) {
	s.keep.Store(keep)
	s.mu.Lock()
	s.lastNeed = time.Now()
	s.mu.Unlock()
}

// useIndex has the index follow every intent, loading it first when it was narrowed,
// and holds it so until release is called.
func (s *Store) useIndex(ctx context.Context) (release func(), err error) {
	s.mu.Lock()
	s.needs++
	s.lastNeed = time.Now()
	partial := s.partial
	s.mu.Unlock()
	release = func() {
		s.mu.Lock()
		s.needs--
		s.lastNeed = time.Now()
		s.mu.Unlock()
	}
	if partial {
		ctx, cancel := s.loadBound(ctx)
		defer cancel()
		if err := s.widen(ctx); err != nil {
			release()
			return nil, s.answer(ctx, err) // a load cut off by the servers is a busy store's 503
		}
	}
	return release, nil
}

// loadBound bounds the load of the index when ctx has no deadline, as Open's is: a load
// from servers that do not answer would otherwise wait for ever.
func (s *Store) loadBound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, max(s.timeout, startTimeout))
}

// scope narrows or widens the follower as the engine wants it, at each check.
func (s *Store) scope(ctx context.Context, now time.Time) {
	linger := s.indexLinger
	if linger == 0 {
		linger = indexLinger
	}
	s.mu.Lock()
	partial, idle := s.partial, s.needs == 0 && now.Sub(s.lastNeed) >= linger
	s.mu.Unlock()
	switch keep := s.keep.Load(); {
	case keep && partial:
		if err := s.widen(ctx); err != nil {
			s.log.Warn("nats store: follow every intent again for the index", "error", err)
		}
	case !keep && !partial && idle:
		if err := s.narrow(ctx, linger); err != nil {
			s.log.Warn("nats store: follow the policies alone", "error", err)
		}
	}
}

// narrow has the follower follow the policies and the floor alone, from the record
// after the last it applied, unless the index was used within linger or is kept. The
// follower of the policies starts before the index stops taking the intents' records,
// and the switch is made only if nothing asked for the index meanwhile: until it, the
// index stays whole, so that a start that fails, or a caller that came, leaves it as
// it was.
func (s *Store) narrow(ctx context.Context, linger time.Duration) error {
	s.scopeMu.Lock()
	defer s.scopeMu.Unlock()
	// unused reports, under s.mu, whether the index may go.
	unused := func() bool {
		return !s.partial && !s.closed && !s.keep.Load() && s.needs == 0 && time.Since(s.lastNeed) >= linger
	}
	s.mu.Lock()
	ok, from := unused(), s.applied
	s.mu.Unlock()
	if !ok {
		return nil
	}
	f := s.indexFollower(s.policyIndexSubjects())
	f.last = from
	if _, err := f.start(ctx, jetstream.DeliverByStartSequencePolicy, from+1); err != nil {
		return err
	}
	s.mu.Lock()
	if !unused() {
		s.mu.Unlock()
		f.stop()
		return nil
	}
	old := s.watch
	s.partial, s.indexing, s.watch = true, false, f
	f.replaced.Store(old.replaced.Load()) // the metric counts the node's replacements
	n := len(s.intents)
	s.intents, s.intentsSize = make(map[string]*entry), compactmap.Tracker{}
	s.advance()
	s.mu.Unlock()
	old.stop()
	s.log.Info("nats store: this node does not scan the index; it follows the policies alone", "intents_dropped", n)
	return nil
}

// widen has the follower follow every intent again, and returns once the index is
// loaded from the last record of each, and caught up with the stream.
func (s *Store) widen(ctx context.Context) error {
	s.scopeMu.Lock()
	defer s.scopeMu.Unlock()
	s.mu.Lock()
	if !s.partial {
		s.mu.Unlock()
		return nil
	}
	if s.closed {
		s.mu.Unlock()
		return intentd.ErrStoreClosed
	}
	s.indexing = true
	old := s.watch
	s.mu.Unlock()
	if err := s.follow(ctx); err != nil {
		s.mu.Lock()
		failed := s.watch
		s.watch, s.indexing = old, false
		s.intents, s.intentsSize = make(map[string]*entry), compactmap.Tracker{}
		s.mu.Unlock()
		if failed != old {
			failed.stop()
		}
		return fmt.Errorf("load the index: %w", err)
	}
	s.mu.Lock()
	s.partial = false
	s.fences.clear()
	n := len(s.intents)
	s.advance()
	s.watch.replaced.Add(old.replaced.Load()) // the metric counts the node's replacements
	s.mu.Unlock()
	old.stop()
	s.indexLoads.Add(1)
	s.log.Info("nats store: this node follows every intent for the index again", "intents", n)
	return nil
}

// isPartial reports whether the follower follows the policies alone.
func (s *Store) isPartial() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.partial
}

// advance wakes those waiting for the follower (waitApplied, waitPolicy), to look
// again. s.mu is held.
func (s *Store) advance() {
	close(s.advanced)
	s.advanced = make(chan struct{})
}

// waitPolicy waits until the follower has applied every record of policy up to seq.
// Following every intent, it waits for the record at seq itself, the intent of the
// create that waits so: every record before it is then applied. Narrowed, it asks the
// stream for the policy's first record after the last the follower applied (one read),
// and waits for that one while it is at or below seq.
func (s *Store) waitPolicy(ctx context.Context, policy string, seq uint64) error {
	return s.waitFollower(ctx, seq, func(applied uint64) (bool, error) {
		m, err := s.getMsg(ctx, applied+1, s.policySubject(policy))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return m.Sequence > seq, nil
	})
}

// fenceRead keeps e, the entry of intent id just read, as the fence of its next write
// while the follower is narrowed: the write that follows a read then needs no read of
// its own.
func (s *Store) fenceRead(id string, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partial {
		s.fences.put(id, e)
	}
}

// entryIn returns the entry of intent id: from the index, or narrowed from the fences.
// s.mu is held.
func (s *Store) entryIn(id string) (entry, bool) {
	if s.partial {
		return s.fences.get(id)
	}
	if e, ok := s.intents[id]; ok {
		return *e, true
	}
	return entry{}, false
}
