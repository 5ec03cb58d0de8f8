package actors

import (
	"context"
	"encoding/json"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/persistence"
)

func previewOf(h *harness, id, solution string) (intentd.Preview, error) {
	return h.e.Preview(context.Background(), id, intentd.Proposal{Solution: solution})
}

// TestPreview checks that a preview answers what the proposal would decide, and each
// of its refusals.
func TestPreview(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPreviewsPerIntent = 3 })
	id := h.submit("M", 5000)

	pv, err := previewOf(h, id, "M-cheap")
	if err != nil {
		t.Fatal(err)
	}
	if pv.Outcome.State != intentd.StateSuccess || pv.PreviewsLeft != 2 || string(pv.Outcome.Evidence) != `{"price_cents":1999,"size":"M"}` {
		t.Fatalf("preview of a passing solution = %+v (evidence %s)", pv, pv.Outcome.Evidence)
	}
	pv, err = previewOf(h, id, "M-dear")
	if err != nil {
		t.Fatal(err)
	}
	if pv.Outcome.State != intentd.StateFailure || pv.Outcome.FailureKind != intentd.FailureConstraints ||
		len(pv.Outcome.Failures) != 1 || pv.Outcome.Failures[0].Index != 1 || pv.PreviewsLeft != 1 {
		t.Fatalf("preview of a solution over budget = %+v", pv)
	}
	body, err := json.Marshal(pv)
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	json.Unmarshal(body, &wire)
	if wire["outcome"] != "failure" || wire["proof"] != false || wire["note"] != intentd.PreviewNote || wire["previews_left"] != 1.0 {
		t.Fatalf("preview JSON = %s", body)
	}
	if pv, err = previewOf(h, id, "fail:down"); err != nil || pv.Outcome.FailureKind != intentd.FailureExtraction {
		t.Fatalf("preview of a solution without evidence = %+v, %v", pv, err)
	}
	_, err = previewOf(h, id, "M-cheap")
	wantCode(t, err, intentd.KindTooMany, intentd.CodePreviewLimit)
	if got := h.status(id).State; got != intentd.StateOpen {
		t.Fatalf("after previews the intent is %s, want open", got)
	}

	_, err = previewOf(h, "7b0a4c5e-0000-4000-8000-000000000000", "M-cheap")
	wantCode(t, err, intentd.KindNotFound, intentd.CodeIntentNotFound)
	_, err = previewOf(h, "not-a-uuid", "M-cheap")
	wantCode(t, err, intentd.KindInvalid, intentd.CodeInvalidID)
	_, err = previewOf(h, id, "")
	wantCode(t, err, intentd.KindUnprocessable, intentd.CodeInvalidProposal)

	other := h.submit("M", 5000)
	if err := proposeTo(h, other, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	_, err = previewOf(h, other, "M-cheap")
	wantCode(t, err, intentd.KindConflict, intentd.CodeProposalExists)
	h.waitState(other, intentd.StateSuccess)
	h.e.previewMu.Lock()
	n := len(h.e.previewed)
	h.e.previewMu.Unlock()
	if n != 1 {
		t.Fatalf("%d intents have preview counts, want 1 (the open one)", n)
	}
}

// TestPreviewExpired checks that an intent past its deadline is refused as expired,
// and that the preview does not write the expiry itself.
func TestPreviewExpired(t *testing.T) {
	now := time.Now()
	// The expiry scheduler reads the clock on its own goroutine, woken by the create.
	var ahead atomic.Int64
	h := newHarness(t, func(c *Config) {
		c.Now = func() time.Time { return now.Add(time.Duration(ahead.Load())) }
		c.ExpiryInterval = time.Hour // the scheduler stays out of the way
	})
	id := h.submit("M", 5000)
	ahead.Store(int64(25 * time.Hour))
	_, err := previewOf(h, id, "M-cheap")
	wantCode(t, err, intentd.KindConflict, intentd.CodeIntentExpired)
}

// TestPreviewCapacity checks that previews have a share of their own: a full share is
// a 503 that proposals do not see, and previews are refused while proposals wait.
func TestPreviewCapacity(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.MaxPreviewing = 1
		c.MaxProving = 1
		c.ProvingQueue = 1
	})
	id := h.submit("M", 5000)
	done := make(chan error, 1)
	go func() {
		_, err := previewOf(h, id, "block:M-cheap")
		done <- err
	}()
	<-h.ext.started
	_, err := previewOf(h, id, "M-cheap")
	wantCode(t, err, intentd.KindBusy, intentd.CodeCapacityExceeded)
	// A proposal is not held back by the preview's place.
	p1 := h.submit("M", 5000)
	if err := proposeTo(h, p1, "block:M-cheap"); err != nil {
		t.Fatalf("a proposal beside a running preview: %v", err)
	}
	close(h.ext.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.waitState(p1, intentd.StateSuccess)
	stats, _ := h.e.ProvingStats()
	if stats.Previews != 0 {
		t.Fatalf("previews running after the last one ended: %d", stats.Previews)
	}
	// The refused preview was not counted against the intent.
	h.e.previewMu.Lock()
	n := h.e.previewed[id]
	h.e.previewMu.Unlock()
	if n != 1 {
		t.Fatalf("%d previews counted, want 1 (the refused one is not)", n)
	}
}

// TestPreviewWaitsBehindNoProposal checks that previews are refused while proposals
// wait for a proving slot.
func TestPreviewWaitsBehindNoProposal(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.MaxProving = 1
		c.ProvingQueue = 2
	})
	a, b, c := h.submit("M", 5000), h.submit("M", 5000), h.submit("M", 5000)
	for _, id := range []string{a, b} {
		if err := proposeTo(h, id, "block:M-cheap"); err != nil {
			t.Fatal(err)
		}
	}
	<-h.ext.started
	_, err := previewOf(h, c, "M-cheap")
	wantCode(t, err, intentd.KindBusy, intentd.CodeCapacityExceeded)
	close(h.ext.release)
	h.waitState(b, intentd.StateSuccess)
	if _, err := previewOf(h, c, "M-cheap"); err != nil {
		t.Fatalf("a preview once the queue drained: %v", err)
	}
}

// TestPreviewChangesNothing checks that a thousand previews leave the store (its
// digest), the event log and the intent's status as they were.
func TestPreviewChangesNothing(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPreviewsPerIntent = 0 })
	decided := h.submit("M", 5000)
	if err := proposeTo(h, decided, "M-dear"); err != nil {
		t.Fatal(err)
	}
	h.waitState(decided, intentd.StateFailure)
	id := h.submit("M", 5000)
	store := h.store.(*persistence.Store)

	digestBefore, err := store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	eventsBefore := h.events(0, 1)
	statusBefore := h.status(id)
	for i := range 1000 {
		solution := []string{"M-cheap", "M-dear", "L-dear", "M-no-size", "fail:x"}[i%5]
		if _, err := previewOf(h, id, solution); err != nil {
			t.Fatalf("preview %d: %v", i, err)
		}
	}
	digestAfter, err := store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if digestAfter != digestBefore {
		t.Fatalf("the store's digest changed: %x, then %x", digestBefore, digestAfter)
	}
	if eventsAfter := h.events(0, 1); !reflect.DeepEqual(eventsAfter, eventsBefore) {
		t.Fatalf("the event log changed: %v, then %v", eventsBefore, eventsAfter)
	}
	if statusAfter := h.status(id); !reflect.DeepEqual(statusAfter, statusBefore) {
		t.Fatalf("the status changed: %+v, then %+v", statusBefore, statusAfter)
	}
}

// TestSubscribeLive checks that a subscription from SubscribeLive replays nothing and
// gets the next event.
func TestSubscribeLive(t *testing.T) {
	h := newHarness(t, nil)
	first := h.submit("M", 5000)
	if err := proposeTo(h, first, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(first, intentd.StateSuccess)
	// The outcome is durable, and its status read, a moment before the bus publishes
	// its event; an event read through a subscription is one the bus has published, so
	// the live subscription below comes after it.
	h.events(0, 1)
	sub, err := h.e.Subscribe(context.Background(), intentd.SubscribeLive, intentd.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	second := h.submit("M", 5000)
	if err := proposeTo(h, second, "M-dear"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev, err := sub.Next(ctx)
	if err != nil || ev.IntentID != second || ev.ID != 2 {
		t.Fatalf("first event of a live subscription = %+v, %v; want event 2 of %s", ev, err, second)
	}
}
