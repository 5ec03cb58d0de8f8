package actors

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// pacedStore is a store that paces its events (intentd.EventPacer): it keeps what the
// engine tells it.
type pacedStore struct {
	storetest.Store
	mu   sync.Mutex
	told []bool
}

func (s *pacedStore) EventsAwaited(awaited bool) {
	s.mu.Lock()
	s.told = append(s.told, awaited)
	s.mu.Unlock()
}

func (s *pacedStore) heard() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.told)
}

// TestEventsAwaitedFollowsSubscribers: a store that paces its events hears that nobody
// waits for them at the engine's start, that someone does with the first subscriber that
// is not patient, and that nobody does again once the last has gone, however it went:
// closed, or cut off for falling behind. Patient subscribers change nothing.
func TestEventsAwaitedFollowsSubscribers(t *testing.T) {
	paced := &pacedStore{}
	h := newHarnessWith(t, func(t *testing.T) storetest.Store {
		paced.Store = stores[0].backend(t)(t)
		return paced
	}, func(c *Config) { c.SubscriberBuffer = 4 })
	want := func(what string, told ...bool) {
		t.Helper()
		// A subscription's end reaches the bus by a message; an ask made after it is
		// answered after the bus took it.
		h.e.Subscribers()
		if got := paced.heard(); !slices.Equal(got, told) {
			t.Fatalf("%s: the store heard %v, want %v", what, got, told)
		}
	}
	want("at the start", false)

	patient := subscribeLive(t, h, intentd.Filter{Patient: true})
	want("a patient subscriber", false)

	everything := subscribeLive(t, h, intentd.Filter{})
	want("the first subscriber that waits", false, true)
	one := subscribeLive(t, h, intentd.Filter{Types: []intentd.State{intentd.StateSuccess}})
	want("a second", false, true)
	everything.Close()
	want("one of two gone", false, true)
	one.Close()
	want("the last gone", false, true, false)

	// One that falls behind its buffer is cut off with the next event it has no room
	// for, and counts no more.
	slow := subscribeLive(t, h, intentd.Filter{Types: []intentd.State{intentd.StateSuccess}})
	want("a subscriber again", false, true, false, true)
	for range 5 {
		h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
	}
	// An outcome's event reaches the bus from the store's committer, which may be
	// after the intent's status says it is decided: the cut-off is waited for.
	for deadline := time.Now().Add(5 * time.Second); len(paced.heard()) < 5 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	want("the subscriber cut off", false, true, false, true, false)
	if !slow.Pending() {
		t.Error("the slow subscriber has nothing pending")
	}
	patient.Close()
	want("the patient one gone", false, true, false, true, false)

	// The engine closed with a subscriber: nobody waits any more.
	subscribeLive(t, h, intentd.Filter{})
	want("one more", false, true, false, true, false, true)
	h.close()
	if got, want := paced.heard(), []bool{false, true, false, true, false, true, false}; !slices.Equal(got, want) {
		t.Fatalf("the engine closed: the store heard %v, want %v", got, want)
	}
}

// TestEventsAwaitedWhenAPlaceIsTaken: a subscriber the feed has gone past, let go for a
// new one at the subscribers' limit, counts no more, and the new one does.
func TestEventsAwaitedWhenAPlaceIsTaken(t *testing.T) {
	paced := &pacedStore{}
	h := newHarnessWith(t, func(t *testing.T) storetest.Store {
		paced.Store = stores[0].backend(t)(t)
		return paced
	}, func(c *Config) { c.SubscriberBuffer, c.MaxSubscribers = 4, 1 })
	behind := subscribeLive(t, h, intentd.Filter{})
	for range 6 {
		h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
	}
	h.e.Subscribers()
	if got, want := paced.heard(), []bool{false, true}; !slices.Equal(got, want) {
		t.Fatalf("one subscriber behind: the store heard %v, want %v", got, want)
	}
	subscribeLive(t, h, intentd.Filter{})
	if got, want := paced.heard(), []bool{false, true, false, true}; !slices.Equal(got, want) {
		t.Fatalf("a new subscriber in its place: the store heard %v, want %v", got, want)
	}
	if _, err := behind.Next(context.Background()); !errors.Is(err, intentd.ErrSubscriberTooSlow) {
		t.Fatalf("the subscriber let go: %v, want cut off", err)
	}
}
