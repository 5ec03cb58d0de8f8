package natsstore

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// Whether the events are followed. Every node followed every event to hand it to its
// engine's bus, whoever read them there: in a cluster whose members keep no log and
// serve no subscriber, each of them still took and decoded every event, for nobody
// (docs/cluster.md, "Members that nobody reads the events on"). A store told by its
// engine that nobody on this node reads the events (UnwantEvents) stops its events'
// follower once nobody has wanted them for eventsLinger; told they are wanted again
// (WantEvents), it follows them from the newest event written, and says which that is,
// so that the bus starts its new readers there and they read what came before from the
// stream, as every reader reads what came before it subscribed.
//
// The states: following (eventsHalted false), halted (true). eventsMu holds one change
// at a time; eventsWanted and unwantedAt are what the engine last said, read without
// the lock by the checks.

var _ intentd.EventFollower = (*Store)(nil)

// eventsLinger is how long a store follows the events after the last reader on its
// node left: a reader that comes and goes (an MCP call waiting for an outcome, a page of
// the event stream read now and then) does not make a consumer each time.
const eventsLinger = 5 * time.Second

// UnwantEvents says nobody on this node reads the events (intentd.EventFollower); the
// follower halts at the first check eventsLinger later, unless they are wanted again.
func (s *Store) UnwantEvents() {
	s.unwantedAt.Store(time.Now().UnixNano())
	s.eventsWanted.Store(false)
}

// WantEvents says somebody on this node reads the events (intentd.EventFollower). A
// halted follower starts again after the newest event the stream's leader holds, which
// it returns; one that never halted goes on, and 0 is returned.
func (s *Store) WantEvents(ctx context.Context) (skipped uint64, err error) {
	s.eventsMu.Lock()
	defer s.eventsMu.Unlock()
	s.eventsWanted.Store(true)
	f := s.eventFollower()
	if f == nil || !s.eventsHalted.Load() {
		return 0, nil // following: nothing to ask the servers, whether they answer or not
	}
	// A call begun after Close is refused; one begun before it is waited for by Close,
	// which holds eventsMu to stop the follower.
	ctx, end, err := s.call(ctx)
	if err != nil {
		return 0, err
	}
	defer end(&err)
	m, err := s.getLastMsg(ctx, s.eventSubject())
	switch {
	case err == nil:
		skipped = m.Sequence
	case errors.Is(err, jetstream.ErrMsgNotFound):
		// None is retained: every event to come is after the first sequence.
	default:
		return 0, err
	}
	f.mu.Lock()
	f.last, f.owed, f.owedSince, f.interruptedAt = skipped, 0, time.Time{}, time.Time{}
	f.mu.Unlock()
	if _, err := f.start(ctx, jetstream.DeliverByStartSequencePolicy, skipped+1); err != nil {
		return 0, err
	}
	s.eventsHalted.Store(false)
	s.log.Info("nats store: a reader of the events came; following them again", "after", skipped)
	return skipped, nil
}

// scopeEvents halts the events' follower, at a check at now, when nobody has wanted the
// events for eventsLinger. It holds the follower's check while it halts it, so that no
// replacement starts it again after that; the checks then leave it alone. One under a
// check is halted at a later one.
func (s *Store) scopeEvents(now time.Time) {
	linger := s.eventsLinger
	if linger == 0 {
		linger = eventsLinger
	}
	unwanted := func() bool {
		return !s.eventsWanted.Load() && now.Sub(time.Unix(0, s.unwantedAt.Load())) >= linger
	}
	if !unwanted() || s.eventsHalted.Load() {
		return
	}
	s.eventsMu.Lock()
	defer s.eventsMu.Unlock()
	f := s.eventFollower()
	if f == nil || !unwanted() || s.eventsHalted.Load() {
		return
	}
	if !f.checking.CompareAndSwap(false, true) {
		return // a check is under way, which may replace the consumer: the next check halts it
	}
	defer f.checking.Store(false)
	f.stop()
	s.eventsHalted.Store(true)
	s.log.Info("nats store: nobody on this node reads the events; they are no longer followed", "last", f.lastHandled())
}

// eventFollower is the events' follower, nil before Open started it.
func (s *Store) eventFollower() *follower {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events
}
