package actors

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// TestSubscribeNoGapNoDuplicate subscribes while events are being produced and checks the
// subscriber sees every event once, in order.
func TestSubscribeNoGapNoDuplicate(t *testing.T) { eachStore(t, testSubscribeNoGapNoDuplicate) }

func testSubscribeNoGapNoDuplicate(t *testing.T, backend storetest.Backend) {
	h := newHarnessOn(t, backend, nil)
	const n = 60
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.submit("M", 2500)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, id := range ids {
			proposeTo(h, id, "M-cheap")
		}
	}()
	time.Sleep(time.Millisecond)
	evs := h.events(0, n)
	wg.Wait()
	wantIncreasing(t, evs)
	// The event log holds exactly what the subscriber saw.
	var logged []uint64
	h.store.Events(context.Background(), 0, 2*n, func(ev intentd.Event) error {
		logged = append(logged, ev.ID)
		return nil
	})
	if len(logged) != n {
		t.Fatalf("the log holds %d events, the subscriber saw %d", len(logged), n)
	}
	for i, ev := range evs {
		if logged[i] != ev.ID {
			t.Fatalf("event %d: the subscriber saw id %d, the log holds %d", i, ev.ID, logged[i])
		}
	}
	// Resuming from the middle gives the rest, and so does resuming from an id between
	// two events on a store whose ids skip numbers.
	if rest := h.events(evs[n/2-1].ID, n/2); rest[0].ID != evs[n/2].ID {
		t.Fatalf("resume from %d starts at %d", evs[n/2-1].ID, rest[0].ID)
	}
	if evs[n/2].ID > evs[n/2-1].ID+1 {
		if rest := h.events(evs[n/2].ID-1, n/2); rest[0].ID != evs[n/2].ID {
			t.Fatalf("resume from %d starts at %d", evs[n/2].ID-1, rest[0].ID)
		}
	}
}

// wantIncreasing fails unless event ids strictly increase: the order every store
// promises; Pebble's are also gapless, NATS's skip numbers.
func wantIncreasing(t *testing.T, evs []intentd.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].ID <= evs[i-1].ID {
			t.Fatalf("event %d has id %d after %d", i, evs[i].ID, evs[i-1].ID)
		}
	}
}

// subscriberKinds are the two ways the bus serves a subscriber: from the shared feed
// (no filter), or handed its matching events one by one (a filter that every outcome
// of the tests below passes).
var subscriberKinds = []struct {
	name   string
	filter intentd.Filter
}{
	{"every event", intentd.Filter{}},
	{"by type", intentd.Filter{Types: []intentd.State{intentd.StateSuccess}}},
}

// TestSlowSubscriber cuts off a subscriber that stops reading, with or without a filter,
// after what it read, and lets it resume with nothing lost.
func TestSlowSubscriber(t *testing.T) {
	for _, tt := range subscriberKinds {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SubscriberBuffer = 4 })
			sub := subscribeLive(t, h, tt.filter)
			next := func() (intentd.Event, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				return sub.Next(ctx)
			}
			// Read while the first events come...
			var first uint64
			for i := range 2 {
				h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
				ev, err := next()
				if err != nil {
					t.Fatalf("event %d: %v", i+1, err)
				}
				if first == 0 {
					first = ev.ID
				}
			}
			// ...then stop reading while more than the buffer holds come.
			const more = 10
			for range more {
				h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
			}
			last := first + 1
			for {
				ev, err := next()
				if errors.Is(err, intentd.ErrSubscriberTooSlow) {
					break
				}
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				if ev.ID != last+1 {
					t.Fatalf("event %d after %d: a gap before the cut", ev.ID, last)
				}
				last = ev.ID
			}
			if last >= first+1+more {
				t.Fatalf("a subscriber that stopped reading read on to the end (%d), uncut", last)
			}
			rest := h.events(last, int(first+1+more-last))
			if rest[0].ID != last+1 || rest[len(rest)-1].ID != first+1+more {
				t.Fatalf("resumed %d..%d, want %d..%d", rest[0].ID, rest[len(rest)-1].ID, last+1, first+1+more)
			}
		})
	}
}

// subscribeFrom subscribes to the events after from, closed when the test ends.
func subscribeFrom(t *testing.T, h *harness, from uint64, f intentd.Filter) intentd.Subscription {
	t.Helper()
	sub, err := h.e.Subscribe(context.Background(), from, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// subscribeLive subscribes to the events from now on, closed when the test ends.
func subscribeLive(t *testing.T, h *harness, f intentd.Filter) intentd.Subscription {
	t.Helper()
	return subscribeFrom(t, h, intentd.SubscribeLive, f)
}

// TestSlowSubscriberAmongOthers cuts off only the subscriber that fell behind: one that
// kept up, and one whose filter left out the events, read on.
func TestSlowSubscriberAmongOthers(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SubscriberBuffer = 4 })
	ctx := context.Background()
	slow := subscribeLive(t, h, intentd.Filter{})
	keen := subscribeLive(t, h, intentd.Filter{})
	picky := subscribeLive(t, h, intentd.Filter{Types: []intentd.State{intentd.StateExpired}})
	const n = 10
	for i := range n {
		h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ev, err := keen.Next(rctx)
		cancel()
		if err != nil {
			t.Fatalf("the subscriber that kept up, event %d: %v", i+1, err)
		}
		if ev.Type != intentd.StateSuccess {
			t.Fatalf("event %d is %s", ev.ID, ev.Type)
		}
		if picky.Pending() {
			t.Fatalf("a success is pending for a subscriber of expiries")
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := slow.Next(rctx); !errors.Is(err, intentd.ErrSubscriberTooSlow) {
		t.Fatalf("the subscriber that never read: %v, want cut off", err)
	}
	// The picky one was handed none of the successes, so none counted towards its
	// cut: it waits for an expiry.
	pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer pcancel()
	if _, err := picky.Next(pctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the subscriber of expiries: %v, want to wait", err)
	}
}

// TestSubscriberLimit fills the subscribers' places with one that does not read and one
// that does, publishes events, and asks for a third place: only a subscriber the feed
// has gone past gives its place up, and it is told it was too slow.
func TestSubscriberLimit(t *testing.T) {
	tests := []struct {
		name    string
		filter  intentd.Filter
		events  int
		dropped bool
	}{
		{"a subscriber the feed has gone past gives its place up", intentd.Filter{}, 5, true},
		{"one behind but not passed keeps it", intentd.Filter{}, 3, false},
		{"one whose filter left the events out keeps it", intentd.Filter{Types: []intentd.State{intentd.StateExpired}}, 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SubscriberBuffer, c.MaxSubscribers = 4, 2 })
			idle := subscribeLive(t, h, tt.filter)
			keen := subscribeLive(t, h, intentd.Filter{})
			for range tt.events {
				h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
				// Read through a subscription, the event is one the bus has published.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := keen.Next(ctx)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
			}
			// The count, which /metrics shows, leaves out a subscriber the feed has
			// gone past.
			wantCount := 2
			if tt.dropped {
				wantCount = 1
			}
			if n := h.e.Subscribers(); n != wantCount {
				t.Errorf("Subscribers() = %d, want %d", n, wantCount)
			}
			third, err := h.e.Subscribe(context.Background(), intentd.SubscribeLive, intentd.Filter{})
			if !tt.dropped {
				wantCode(t, err, intentd.KindBusy, intentd.CodeTooManySubscribers)
				if unfiltered := len(tt.filter.Types) == 0; idle.Pending() != unfiltered {
					t.Fatalf("the subscriber that kept its place has events pending: %v, want %v", !unfiltered, unfiltered)
				}
				return
			}
			if err != nil {
				t.Fatalf("a third subscriber: %v, want a place", err)
			}
			defer third.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if _, err := idle.Next(ctx); !errors.Is(err, intentd.ErrSubscriberTooSlow) {
				t.Fatalf("the subscriber that gave its place up: %v, want cut off", err)
			}
		})
	}
}

// TestSubscriptionFilling checks that what Filling gives fires once the unread events
// reach half the buffer, and not before, counted from what was read, with or without a
// filter; a word of filling from before the reader read on is stale.
func TestSubscriptionFilling(t *testing.T) {
	for _, tt := range subscriberKinds {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SubscriberBuffer = 4 })
			ctx := context.Background()
			sub := subscribeLive(t, h, tt.filter).(*Subscription)
			// outcome decides an intent and waits until the bus has given sub its
			// event: only then can sub's count have moved.
			unread := 0
			outcome := func() {
				t.Helper()
				h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
				unread++
				deadline := time.Now().Add(5 * time.Second)
				for waiting(sub) < unread {
					if time.Now().After(deadline) {
						t.Fatalf("the bus did not give the subscriber its event %d", unread)
					}
					time.Sleep(time.Millisecond)
				}
			}
			read := func() {
				t.Helper()
				for ; unread > 0; unread-- {
					if _, err := sub.Next(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			var filling <-chan struct{}
			notYet := func() {
				t.Helper()
				select {
				case <-filling:
					t.Fatalf("filling with %d of 4 events unread", unread)
				default:
				}
			}
			waitFilling := func() {
				t.Helper()
				select {
				case <-filling:
				case <-time.After(5 * time.Second):
					t.Fatalf("no word of filling with %d of 4 events unread", unread)
				}
			}
			// Asked for, it fires at the second unread event of four, not the first.
			fillHalf := func() {
				t.Helper()
				filling = sub.Filling()
				notYet()
				outcome()
				notYet()
				outcome()
				waitFilling()
			}
			fillHalf()
			read()
			// Half the buffer fills again while nobody listens, and is read.
			outcome()
			outcome()
			read()
			// Asked again after reading, it counts from there.
			fillHalf()
		})
	}
}

// waiting is how many live events wait for the subscriber.
func waiting(s *Subscription) int {
	if s.live != nil {
		return len(s.live)
	}
	return int(s.e.feed.head.Load() - s.pos.Load())
}

// TestPendingSkipsWhatTheFilterLeavesOut checks that Pending reads a filtered
// subscriber's replay on past the events its filter leaves out: a stream told that
// more is coming holds the event it has, so a true answer with nothing to come kept
// an agent's outcome back until the next heartbeat.
func TestPendingSkipsWhatTheFilterLeavesOut(t *testing.T) {
	h := newHarness(t, nil)
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
	}
	// An outcome is read as decided once it is stored, and reaches the bus a moment
	// later; until the last one has, a subscriber whose filter takes only it has
	// nothing pending, rightly. Reading the three from a stream waits for that.
	h.events(0, len(ids))
	tests := []struct {
		name         string
		filter       intentd.Filter
		before, left bool // Pending before the first Next, and after it
	}{
		{"the first intent's", intentd.Filter{IntentIDs: ids[:1]}, true, false},
		{"the last intent's", intentd.Filter{IntentIDs: ids[2:]}, true, false},
		{"two intents'", intentd.Filter{IntentIDs: []string{ids[0], ids[2]}}, true, true},
		{"a type none has", intentd.Filter{Types: []intentd.State{intentd.StateExpired}}, false, false},
		{"every event", intentd.Filter{}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := subscribeFrom(t, h, 0, tt.filter)
			if got := sub.Pending(); got != tt.before {
				t.Fatalf("Pending before the first event: %v, want %v", got, tt.before)
			}
			if !tt.before {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := sub.Next(ctx); err != nil {
				t.Fatal(err)
			}
			if got := sub.Pending(); got != tt.left {
				t.Fatalf("Pending after the first event: %v, want %v", got, tt.left)
			}
		})
	}
}

// TestFilter checks that the intent and type filters select events.
func TestFilter(t *testing.T) {
	h := newHarness(t, nil)
	ok, bad := h.submit("M", 2500), h.submit("M", 2500)
	proposeTo(h, ok, "M-cheap")
	proposeTo(h, bad, "L-dear")
	h.waitState(ok, intentd.StateSuccess)
	h.waitState(bad, intentd.StateFailure)
	tests := []struct {
		name string
		f    intentd.Filter
		want string
	}{
		{"by intent", intentd.Filter{IntentIDs: []string{strings.ToUpper(bad)}}, bad},
		{"by type", intentd.Filter{Types: []intentd.State{intentd.StateSuccess}}, ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := h.e.Subscribe(context.Background(), 0, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			ev, err := sub.Next(context.Background())
			if err != nil || ev.IntentID != tt.want {
				t.Fatalf("first event = %+v, %v; want intent %s", ev, err, tt.want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			if ev, err := sub.Next(ctx); err == nil {
				t.Fatalf("filter let through %+v", ev)
			}
		})
	}
}
