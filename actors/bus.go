package actors

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/intentd/intentd"
)

// The event bus's messages.
type (
	// publish carries a durable event from the store's committer, in id order.
	publish struct{ ev intentd.Event }
	// subscribe adds a subscriber; the answer is a subscribed, or an error when the
	// subscribers are at their limit.
	subscribe struct{ sub *Subscription }
	// subscribed is where a new subscriber starts: the id of the last event published
	// before it. Its position in the feed, after that event, the bus sets on it.
	subscribed struct{ last uint64 }
	// unsubscribe removes a subscriber.
	unsubscribe struct{ sub *Subscription }
	// closeBus ends every subscription, for Close.
	closeBus struct{}
	// busStats asks for the number of subscribers.
	busStats struct{}
)

// bus hands events to subscribers, and counts and ends them. Events arrive in id order
// from one sender. A subscriber without a filter reads them from the feed, where the
// bus puts each event once; one with a filter is handed those it matches, one by one,
// into a buffer of its own, so that a subscriber waiting for one intent's outcome is
// woken by that outcome and not by every other. A subscriber learns from the bus where
// its live events start, in the same order as the events, so that nothing is read twice
// or missed between its replay and them; one whose buffer is full is cut off at once
// rather than let it slow the others.
type bus struct {
	last uint64
	max  int
	// shown is the limit a refusal names: max less the service's own places.
	shown int
	feed  *feed
	subs  map[*Subscription]struct{}
	// picky are the subscribers with a filter, also in subs.
	picky  map[*Subscription]struct{}
	closed bool
	// prompt counts the subscribers in subs that are not patient (intentd.Filter), and
	// pacer, when the store is one, hears when it leaves or comes back to 0.
	prompt int
	pacer  intentd.EventPacer
	// follower, when the store is one, hears when the subscribers leave 0 and come
	// back to it: a store that stopped following the events while nobody here read
	// them follows them again before the first subscriber is answered.
	follower intentd.EventFollower
	// published counts each event published (intentd.Observer.Published).
	published func()
}

func newBus(last uint64, max, own int, f *feed, pacer intentd.EventPacer, follower intentd.EventFollower, published func()) *bus {
	return &bus{last: last, max: max + own, shown: max, feed: f, subs: make(map[*Subscription]struct{}), picky: make(map[*Subscription]struct{}),
		pacer: pacer, follower: follower, published: published}
}

// add counts sub in.
func (b *bus) add(sub *Subscription) {
	b.subs[sub] = struct{}{}
	if sub.live != nil {
		b.picky[sub] = struct{}{}
	}
	if !sub.filter.Patient {
		b.prompt++
		if b.prompt == 1 && b.pacer != nil {
			b.pacer.EventsAwaited(true)
		}
	}
}

// remove counts sub out, if it is in.
func (b *bus) remove(sub *Subscription) {
	if _, ok := b.subs[sub]; !ok {
		return
	}
	delete(b.subs, sub)
	delete(b.picky, sub)
	if len(b.subs) == 0 && b.follower != nil {
		b.follower.UnwantEvents()
	}
	if !sub.filter.Patient {
		b.prompt--
		if b.prompt == 0 && b.pacer != nil {
			b.pacer.EventsAwaited(false)
		}
	}
}

func (b *bus) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case publish:
		if m.ev.ID <= b.last {
			// Events come in id order: one at or before the last is one the store
			// handed on as it stopped following, and subscribers since read it from
			// the log (wantEvents).
			break
		}
		b.last = m.ev.ID
		b.published()
		b.feed.append(m.ev)
		// One event, shared by every filtered subscriber's buffer: a buffer of
		// pointers costs 8 bytes a place, so ten thousand subscribers do not reserve
		// a gigabyte.
		ev := &m.ev
		for sub := range b.picky {
			if !sub.filter.Match(*ev) {
				continue
			}
			select {
			case sub.live <- ev:
				if sub.halfHanded() {
					select {
					case sub.filling <- struct{}{}:
					default:
					}
				}
			default:
				sub.end(intentd.ErrSubscriberTooSlow)
				b.remove(sub)
			}
		}
	case subscribe:
		switch {
		case b.closed:
			ctx.Respond(intentd.Errorf(intentd.KindBusy, intentd.CodeShuttingDown, "the service is shutting down"))
		case len(b.subs) >= b.max && b.dropOverrun() == 0:
			ctx.Respond(intentd.Errorf(intentd.KindBusy, intentd.CodeTooManySubscribers, "the event stream has its maximum of %d subscribers; retry later", b.shown))
		default:
			if err := b.wantEvents(m.sub.ctx); err != nil {
				ctx.Respond(err)
				break
			}
			b.add(m.sub)
			// Set here, before any event after it is appended and before dropOverrun
			// can read it.
			m.sub.pos.Store(b.feed.head.Load())
			ctx.Respond(subscribed{last: b.last})
		}
	case unsubscribe:
		b.remove(m.sub)
	case closeBus:
		b.closed = true
		for sub := range b.subs {
			sub.end(intentd.ErrEngineClosed)
			b.remove(sub)
		}
		ctx.Respond(true)
	case busStats:
		// A subscriber the feed has gone past is cut off when it next reads; until
		// then it is not counted as one, so that the gauge shows the streams that
		// still receive.
		n := 0
		for sub := range b.subs {
			if !b.passed(sub) {
				n++
			}
		}
		ctx.Respond(n)
	}
}

// wantEventsTimeout bounds how long the bus waits for a store to follow the events
// again: while NATS elects a leader (4 to 9 s), the subscriber is answered 503 and the
// next one tries again, rather than hold the bus, and every subscriber behind it, for
// the store's whole time-out.
const wantEventsTimeout = 2 * time.Second

// wantEvents has a store that may have stopped following the events follow them again
// before the first subscriber is counted in. The events the store did not hand on
// meanwhile are in the log: the subscriber's replay reads up to the last of them, and
// its live events start after it. It blocks the bus for a read of the stream and a
// consumer's start (wantEventsTimeout at most), each time the subscribers come back
// from none, which a store that follows still answers from memory.
func (b *bus) wantEvents(ctx context.Context) error {
	if len(b.subs) > 0 || b.follower == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, wantEventsTimeout)
	defer cancel()
	skipped, err := b.follower.WantEvents(ctx)
	if err != nil {
		return storeFailed("follow the events: %w", err)
	}
	b.last = max(b.last, skipped)
	return nil
}

// dropOverrun ends the subscribers without a filter that the feed has gone past, and
// reports how many. Such a subscriber learns it when it next reads, but one whose
// stream is stuck writing to a slow client may not read for as long as the write
// time-out, and until then it held a place that new subscribers were refused for. The
// bus looks only when it is at its limit: a walk of every subscriber per event is the
// cost the feed removed.
func (b *bus) dropOverrun() int {
	n := 0
	for sub := range b.subs {
		if b.passed(sub) {
			sub.end(intentd.ErrSubscriberTooSlow)
			b.remove(sub)
			n++
		}
	}
	return n
}

// passed reports whether sub reads the feed and the feed has gone past it.
func (b *bus) passed(sub *Subscription) bool {
	return sub.live == nil && b.feed.head.Load()-sub.pos.Load() > b.feed.size()
}

// Subscription is one reader of the event stream: the retained events after its
// starting id, then live ones, with no gap and no duplicate.
type Subscription struct {
	e      *Engine
	ctx    context.Context // the subscription's, for the store reads of Pending
	filter intentd.Filter
	// pos is the feed position of the next live event to read, for a subscriber
	// without a filter. The reader moves it; the bus reads it to find a subscriber the
	// feed has gone past (dropOverrun).
	pos atomic.Uint64
	// live is where a subscriber with a filter is handed its events; nil without one.
	// The events are shared between subscribers: never modified.
	live chan *intentd.Event
	// filling has a value when live was last seen half full or more.
	filling chan struct{}
	done    chan struct{} // closed by end
	reason  error         // why it ended; written before done is closed

	after     uint64 // the last id delivered or skipped
	replayTo  uint64 // replay from the store up to this id, then go live
	replay    []intentd.Event
	truncated bool
}

func (s *Subscription) end(reason error) {
	s.reason = reason
	close(s.done)
}

// replayPage is how many stored events one read of the log brings.
const replayPage = 256

// Subscribe starts a subscription after the event id from (0: from the oldest retained
// event). ctx also bounds the reads of the log that Pending makes while the
// subscription lasts. Close it when done.
func (e *Engine) Subscribe(ctx context.Context, from uint64, f intentd.Filter) (intentd.Subscription, error) {
	ids := make([]string, len(f.IntentIDs))
	for i, id := range f.IntentIDs {
		canon, ok := intentd.CanonicalIntentID(id)
		if !ok {
			return nil, intentd.Errorf(intentd.KindInvalid, intentd.CodeInvalidID, "intent_id: %q is not a UUID", id)
		}
		ids[i] = canon
	}
	f.IntentIDs = ids
	sub := &Subscription{
		e:      e,
		ctx:    ctx,
		filter: f,
		done:   make(chan struct{}),
		after:  from,
	}
	if len(f.IntentIDs) > 0 || len(f.Types) > 0 {
		sub.live = make(chan *intentd.Event, e.cfg.SubscriberBuffer)
		sub.filling = make(chan struct{}, 1)
	}
	res, err := e.ask(ctx, e.bus, subscribe{sub: sub})
	if err != nil {
		sub.Close() // the bus may have taken it before ctx ended
		return nil, err
	}
	switch v := res.(type) {
	case error:
		return nil, v
	case subscribed:
		sub.replayTo = v.last
		if from == intentd.SubscribeLive {
			sub.after = v.last
			return sub, nil
		}
	}
	pruned, err := e.store.PrunedThrough(ctx)
	if err != nil {
		sub.Close()
		return nil, storeFailed("read event bounds: %w", err)
	}
	sub.truncated = from < pruned && from < sub.replayTo
	return sub, nil
}

// Truncated reports whether events after the starting id were no longer retained, so
// that the stream starts at the oldest retained one.
func (s *Subscription) Truncated() bool { return s.truncated }

// Next returns the next event. It ends with ErrSubscriberTooSlow when the reader fell
// behind, ErrEngineClosed when the engine closes, or the context's error.
func (s *Subscription) Next(ctx context.Context) (intentd.Event, error) {
	if ok, err := s.skipReplay(ctx); err != nil {
		return intentd.Event{}, err
	} else if ok {
		ev := s.replay[0]
		s.replay = s.replay[1:]
		s.after = ev.ID
		return ev, nil
	}
	if s.live != nil {
		return s.nextHanded(ctx)
	}
	ended := false
	for {
		if err := ctx.Err(); err != nil {
			return intentd.Event{}, err
		}
		// The waiter is taken before the feed is read, so that an event appended
		// after the read still ends the wait.
		wake := s.e.feed.waiter()
		ev, err := s.nextLive()
		switch {
		case err != nil:
			return intentd.Event{}, err
		case ev != nil:
			return *ev, nil
		case ended:
			// The reader has read what the feed held for it, including events the
			// store put there while the engine closed; it resumes after the last.
			return intentd.Event{}, s.reason
		}
		select {
		case <-wake:
		case <-s.done:
			ended = true
		case <-ctx.Done():
			return intentd.Event{}, ctx.Err()
		}
	}
}

// nextHanded is Next's live part for a subscriber with a filter: the events the bus
// handed it.
func (s *Subscription) nextHanded(ctx context.Context) (intentd.Event, error) {
	for {
		// An event already waiting is taken without the three-way select: a stream
		// that gathers the events of a moment reads several in a row, and the select
		// locks every channel it waits on. Once ctx has ended, the select below
		// decides.
		if ctx.Err() == nil {
			select {
			case ev := <-s.live:
				if s.take(ev) {
					return *ev, nil
				}
				continue
			default:
			}
		}
		select {
		case ev := <-s.live:
			if s.take(ev) {
				return *ev, nil
			}
		case <-s.done:
			// Events queued before the cut are still delivered; the reader
			// resumes after the last one.
			select {
			case ev := <-s.live:
				if s.take(ev) {
					return *ev, nil
				}
				continue
			default:
			}
			return intentd.Event{}, s.reason
		case <-ctx.Done():
			return intentd.Event{}, ctx.Err()
		}
	}
}

// skipReplay reads the replay on past the events the filter leaves out, so that the
// next one it matches, if the replay has one, is first in s.replay. Next takes that
// event; Pending only looks, and what both skip is skipped once.
func (s *Subscription) skipReplay(ctx context.Context) (bool, error) {
	for s.after < s.replayTo {
		if len(s.replay) == 0 {
			if err := s.fill(ctx); err != nil {
				return false, err
			}
			continue
		}
		if s.filter.Match(s.replay[0]) {
			return true, nil
		}
		s.after = s.replay[0].ID
		s.replay = s.replay[1:]
	}
	return false, nil
}

// peekLive reads the feed on past the events the replay delivered already, to the next
// one for this subscriber: nil when none is there yet, and overrun true when the feed
// has gone past the subscriber.
func (s *Subscription) peekLive() (e *fedEvent, overrun bool) {
	for {
		e, overrun = s.e.feed.at(s.pos.Load())
		if e == nil || e.ev.ID > s.after {
			return e, overrun
		}
		s.pos.Store(e.pos + 1) // only the reader moves it: no locked add
	}
}

// nextLive takes the next event of the feed for this subscriber: nil when there is
// none yet, ErrSubscriberTooSlow when the feed has gone past the subscriber.
func (s *Subscription) nextLive() (*intentd.Event, error) {
	e, overrun := s.peekLive()
	if overrun {
		return nil, intentd.ErrSubscriberTooSlow
	}
	if e == nil {
		return nil, nil
	}
	s.pos.Store(e.pos + 1)
	s.after = e.ev.ID
	return &e.ev, nil
}

// take takes a handed event unless the replay delivered it or skipped past it already.
func (s *Subscription) take(ev *intentd.Event) bool {
	if ev.ID <= s.after {
		return false
	}
	s.after = ev.ID
	return true
}

func (s *Subscription) fill(ctx context.Context) error {
	s.replay = s.replay[:0]
	err := s.e.store.Events(ctx, s.after, replayPage, func(ev intentd.Event) error {
		if ev.ID > s.replayTo {
			return errStopReplay
		}
		s.replay = append(s.replay, ev)
		return nil
	})
	if err != nil && !errors.Is(err, errStopReplay) {
		return storeFailed("replay events: %w", err)
	}
	if len(s.replay) == 0 {
		// replayTo is an event the bus heard of, so the log holds it unless it was
		// pruned meanwhile: only then is the replay over. Otherwise the store read less
		// than it has, and skipping to the live events would leave a gap; the stream
		// ends instead, and its reader resumes from its last id.
		pruned, err := s.e.store.PrunedThrough(ctx)
		if err != nil {
			return storeFailed("replay events: %w", err)
		}
		if pruned < s.replayTo {
			return intentd.Internal("replay events: %w", fmt.Errorf("no event after %d up to %d, none of them pruned", s.after, s.replayTo))
		}
		s.after = s.replayTo
	}
	return nil
}

var errStopReplay = errors.New("end of replay")

// Pending reports whether an event can be had from Next without waiting, so that a
// writer can batch its flushes. A subscriber the feed has gone past has none: its
// writer sends what it holds, and Next then says it was cut off.
func (s *Subscription) Pending() bool {
	// The replay is read on past the events the filter leaves out, as Next would: a
	// writer told that more is coming would otherwise hold the event it has, an
	// agent's outcome say, until the next matching event or heartbeat. Pages of the
	// log are read with the context the subscription was made with.
	if ok, err := s.skipReplay(s.ctx); ok || err != nil {
		return true // an error, Next meets and says
	}
	if s.live != nil {
		return len(s.live) > 0
	}
	e, _ := s.peekLive()
	return e != nil
}

// Filling is closed, or receives, once the live events waiting for this subscriber
// fill half its buffer: a writer that gathers events waits for the earlier of its time
// and this, and is not cut off for a wait.
func (s *Subscription) Filling() <-chan struct{} {
	if s.live == nil {
		return s.e.feed.mark(s.pos.Load() + max(s.e.feed.size()/2, 1))
	}
	// A word from before the reader read on is stale.
	select {
	case <-s.filling:
	default:
	}
	if s.halfHanded() {
		return closedChan
	}
	return s.filling
}

// halfHanded reports whether the events handed to a subscriber with a filter fill half
// its buffer, the point at which Filling tells its writer.
func (s *Subscription) halfHanded() bool { return len(s.live) >= cap(s.live)/2 }

// Close ends the subscription.
func (s *Subscription) Close() {
	s.e.system.Root.Send(s.e.bus, unsubscribe{sub: s})
}

// Subscribers reports the number of event subscribers.
func (e *Engine) Subscribers() int {
	res, err := e.ask(context.Background(), e.bus, busStats{})
	if err != nil {
		return 0
	}
	return res.(int)
}
