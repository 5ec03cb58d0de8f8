package natsstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// TestEventsHaltWhileUnwanted: a store told that nobody on its node reads the events
// stops following them after the linger, and hands the sink none of what another store
// writes meanwhile; told they are wanted again, it says which event it starts after,
// the newest written, and hands the sink every event after it, once each and in order.
// Wanted while it follows, it goes on and says it skipped none.
func TestEventsHaltWhileUnwanted(t *testing.T) {
	ctx := context.Background()
	w, f, got := writerAndUnwanted(t)
	followed := func() float64 {
		if f.eventsHalted.Load() {
			return 0
		}
		return 1
	}
	if _, err := w.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}

	writeDecided(t, w, "a")
	eventually(t, func() bool { return len(got()) == 1 }, "the first event heard")
	if skipped, err := f.WantEvents(ctx); err != nil || skipped != 0 {
		t.Fatalf("WantEvents while following: %d, %v; want 0, nil", skipped, err)
	}

	f.UnwantEvents()
	eventually(t, func() bool { return followed() == 0 }, "the events' follower halted")
	checkFollowed(t, f, 0)
	writeDecided(t, w, "b")
	writeDecided(t, w, "c")
	var last uint64
	if err := w.Events(ctx, 0, 10, func(ev intentd.Event) error { last = ev.ID; return nil }); err != nil {
		t.Fatal(err)
	}
	// A follower halted wrongly, or started again by a check's replacement (which
	// comes stallAfter after a check finds it behind), would hand b and c on by now.
	time.Sleep(stallAfter + 3*checkEvery)
	if h := got(); len(h) != 1 {
		t.Fatalf("the sink heard %v while nobody wanted the events, want the first event alone", h)
	}
	if n := f.events.replaced.Load(); n != 0 {
		t.Errorf("the halted follower was replaced %d times", n)
	}

	skipped, err := f.WantEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if skipped != last {
		t.Errorf("WantEvents after a halt skipped through %d, want %d, the newest event written", skipped, last)
	}
	checkFollowed(t, f, 1)
	writeDecided(t, w, "d")
	writeDecided(t, w, "e")
	eventually(t, func() bool { return len(got()) == 3 }, "the events after the skipped ones heard")
	h := got()
	if !slices.IsSorted(h) || h[1] <= skipped {
		t.Errorf("the sink heard %v; want the first event, then the two written after %d, in order", h, skipped)
	}
	time.Sleep(2 * checkEvery) // wanted: the checks leave the follower alone
	if followed() != 1 || len(got()) != 3 {
		t.Errorf("after two checks, wanted: followed %v, heard %v", followed(), got())
	}
}

// checkFollowed checks the metric that says whether s follows the events.
func checkFollowed(t *testing.T, s *Store, want int) {
	t.Helper()
	exp := fmt.Sprintf(`# HELP intentd_store_events_followed 1 while this node follows the stream's events, 0 while nobody on it reads them.
# TYPE intentd_store_events_followed gauge
intentd_store_events_followed %d
`, want)
	if err := testutil.CollectAndCompare(s.Collector(), strings.NewReader(exp), "intentd_store_events_followed"); err != nil {
		t.Error(err)
	}
}

// TestEventsWantedWhileWritten: writes go on, through another store, while the events go
// unfollowed and while they are wanted again. The sink hears, once each and in order,
// exactly the events after the one WantEvents says it skipped through, as the stream
// holds them: none written meanwhile falls between the two.
func TestEventsWantedWhileWritten(t *testing.T) {
	ctx := context.Background()
	w, f, heard := writerAndUnwanted(t)
	if _, err := w.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	f.UnwantEvents()
	eventually(t, func() bool { return f.eventsHalted.Load() }, "the events' follower halted")

	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			id := fmt.Sprint("i", n)
			if err := w.CreateIntent(ctx, id, "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
				t.Error(err)
				<-stop
				done <- n
				return
			}
			if _, err := storetest.BeginAndFinish(ctx, w, id, "P", []byte("t"), time.Now(), storetest.Event(id)); err != nil {
				t.Error(err)
				<-stop
				done <- n
				return
			}
			n++
		}
	}()
	time.Sleep(300 * time.Millisecond)
	skipped, err := f.WantEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	written := <-done

	var want []uint64
	if err := w.Events(ctx, skipped, 10*written, func(ev intentd.Event) error {
		want = append(want, ev.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if skipped == 0 || len(want) == 0 {
		t.Fatalf("%d decided: WantEvents skipped through %d, and the stream holds %d events after it; want writes on both sides", written, skipped, len(want))
	}
	var got []uint64
	eventually(t, func() bool {
		got = heard()
		return len(got) >= len(want)
	}, "the events written after the skipped ones heard")
	if !slices.Equal(got, want) {
		t.Fatalf("the sink heard %v; the stream holds %v after %d, the event WantEvents skipped through", got, want, skipped)
	}
	t.Logf("%d intents decided; the sink heard the %d events after %d", written, len(want), skipped)
}

// writerAndUnwanted opens two stores on one server: w, to write, and f, whose events
// linger no time once unwanted; heard lists the ids of the events f's sink heard.
func writerAndUnwanted(t *testing.T) (w, f *Store, heard func() []uint64) {
	t.Helper()
	url := embed(t).URL()
	w = open(t, url)
	f, err := Open(context.Background(), Options{URLs: []string{url}, eventsLinger: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); f.Close() })
	var mu sync.Mutex
	var ids []uint64
	f.SetEventSink(func(ev intentd.Event) {
		mu.Lock()
		ids = append(ids, ev.ID)
		mu.Unlock()
	})
	return w, f, func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ids)
	}
}
