package actors

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/natsstore"
)

// TestSubscribersAfterTheEventsWentUnfollowed: an engine on NATS with no subscriber has
// its store stop following the events. Intents decided meanwhile reach no bus; a
// subscriber that comes then reads them from the log and the ones after live, each once
// and in order, whether it starts from the oldest event or from now.
func TestSubscribersAfterTheEventsWentUnfollowed(t *testing.T) {
	h := newHarnessOn(t, stores[1].backend, nil) // NATS
	s, ok := h.store.(*natsstore.Store)
	if !ok {
		t.Fatalf("the store is a %T, not the NATS store", h.store)
	}
	followed := func(want int) error {
		exp := "# HELP intentd_store_events_followed 1 while this node follows the stream's events, 0 while nobody on it reads them.\n" +
			"# TYPE intentd_store_events_followed gauge\n" +
			"intentd_store_events_followed " + strconv.Itoa(want) + "\n"
		return testutil.CollectAndCompare(s.Collector(), strings.NewReader(exp), "intentd_store_events_followed")
	}
	decide := func(n int) {
		for range n {
			id := h.submit("M", 2500)
			if err := proposeTo(h, id, "M-cheap"); err != nil {
				t.Fatal(err)
			}
			h.waitState(id, intentd.StateSuccess)
		}
	}

	decide(3) // followed: nobody reads them, but the linger has not run out
	deadline := time.Now().Add(15 * time.Second)
	for followed(0) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the events are still followed 15 s after the engine opened with no subscriber: %v", followed(0))
		}
		time.Sleep(50 * time.Millisecond)
	}
	decide(4) // while nobody follows the events

	live := subscribeLive(t, h, intentd.Filter{})
	if err := followed(1); err != nil {
		t.Fatalf("a subscriber is answered before the events are followed again: %v", err)
	}
	all := h.events(0, 7)
	wantIncreasing(t, all)
	decide(2)
	all = append(all, h.events(all[len(all)-1].ID, 2)...)
	wantIncreasing(t, all)

	var logged []uint64
	if err := h.store.Events(context.Background(), 0, 100, func(ev intentd.Event) error {
		logged = append(logged, ev.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(logged) != len(all) {
		t.Fatalf("the log holds %d events, the subscriber from the oldest read %d", len(logged), len(all))
	}
	for i := range logged {
		if logged[i] != all[i].ID {
			t.Fatalf("event %d: the subscriber read id %d, the log holds %d", i, all[i].ID, logged[i])
		}
	}
	// The subscriber from now reads the two decided after it came, and nothing before.
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ev, err := live.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("the live subscriber's event %d: %v", i, err)
		}
		if want := all[7+i].ID; ev.ID != want {
			t.Fatalf("the live subscriber's event %d is %d, want %d", i, ev.ID, want)
		}
	}
}
