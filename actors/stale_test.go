package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// TestStaleWriter runs two engines on one NATS stream, as two nodes of a cluster, and
// lets the one whose view of an intent is old write to it: the store refuses the write,
// and the engine answers from what the other wrote instead of failing or retrying.
func TestStaleWriter(t *testing.T) {
	var openNATS func(*testing.T) func(*testing.T) storetest.Store
	for _, s := range stores {
		if s.name == "nats" {
			openNATS = s.backend
		}
	}
	t.Run("proposal", func(t *testing.T) {
		shared := openNATS(t)
		a, b := newHarnessWith(t, shared, nil), newHarnessWith(t, shared, nil)
		id := a.submit("M", 2500)
		a.status(id) // a's actor now holds the open intent
		if err := proposeTo(b, id, "M-cheap"); err != nil {
			t.Fatal(err)
		}
		b.waitState(id, intentd.StateSuccess)
		err := proposeTo(a, id, "M-dear")
		if intentd.ErrorCode(err) != intentd.CodeProposalExists {
			t.Fatalf("second proposal through the stale node = %v, want %s", err, intentd.CodeProposalExists)
		}
		if got := a.status(id); got.State != intentd.StateSuccess || got.Proposal.Solution != "M-cheap" {
			t.Fatalf("stale node reports %s of %+v, want the other node's success", got.State, got.Proposal)
		}
	})
	t.Run("resume", func(t *testing.T) {
		// a's actor holds the intent open while b accepts a proposal for it; b's proof
		// hangs, as if b had died with it. Told to resume, as a member is when its
		// owner changes, a reads the intent again and proves it.
		shared := openNATS(t)
		a, b := newHarnessWith(t, shared, nil), newHarnessWith(t, shared, nil)
		id := a.submit("M", 2500)
		a.status(id)
		if err := proposeTo(b, id, "block:M-dear"); err != nil {
			t.Fatal(err)
		}
		<-b.ext.started
		close(a.ext.release)
		if _, err := a.e.registry.call(context.Background(), id, resume{}); err != nil {
			t.Fatal(err)
		}
		a.waitState(id, intentd.StateFailure)
		close(b.ext.release)
	})
	t.Run("expiry", func(t *testing.T) {
		// a's actor holds the intent open; b accepts a proposal for it and is still
		// proving when a's clock passes the deadline. An expiry decided from a's cache
		// would end an intent whose proposal was accepted: the store refuses it, and a
		// answers what b wrote.
		shared := openNATS(t)
		var late atomic.Bool
		a := newHarnessWith(t, shared, func(c *Config) {
			c.Now = func() time.Time {
				if late.Load() {
					return time.Now().Add(30 * 24 * time.Hour)
				}
				return time.Now()
			}
		})
		b := newHarnessWith(t, shared, nil)
		id := a.submit("M", 2500)
		// An expiry before the deadline changes nothing and leaves a's actor holding
		// the open snapshot.
		if res, err := a.e.registry.call(context.Background(), id, expire{}); err != nil || res.(*snapshot).State != intentd.StateOpen {
			t.Fatalf("an early expiry answered %v, %v; want the open intent", res, err)
		}
		if err := proposeTo(b, id, "block:M-dear"); err != nil {
			t.Fatal(err)
		}
		<-b.ext.started
		late.Store(true)
		res, err := a.e.registry.call(context.Background(), id, expire{})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.(*snapshot).State; got != intentd.StateProcessing {
			t.Fatalf("the stale node's expiry left the intent %s, want it processing", got)
		}
		close(b.ext.release)
		b.waitState(id, intentd.StateFailure)
		a.waitState(id, intentd.StateFailure)
		if evs := b.events(0, 1); evs[0].Type != intentd.StateFailure {
			t.Fatalf("event %+v, want the proposal's outcome", evs[0])
		}
	})
	t.Run("outcome", func(t *testing.T) {
		shared := openNATS(t)
		var finishes atomic.Int32
		a := newHarnessWith(t, shared, func(c *Config) {
			c.Observer = &intentd.Observer{StoreCall: func(op string, _ bool, _ time.Duration) {
				if op == "finish" {
					finishes.Add(1)
				}
			}}
		})
		id := a.submit("M", 2500)
		if err := proposeTo(a, id, "block:M-dear"); err != nil {
			t.Fatal(err)
		}
		<-a.ext.started
		// b starts while the intent is processing and proves it again, as a node that
		// takes over would; its extractor does not block.
		b := newHarnessWith(t, shared, nil)
		close(b.ext.release)
		b.waitState(id, intentd.StateFailure)
		close(a.ext.release) // a's proof now ends, and its terminal write is stale
		a.waitState(id, intentd.StateFailure)
		// An engine that took the refusal for a passing fault would write again and again.
		time.Sleep(100 * time.Millisecond)
		if n := finishes.Load(); n != 1 {
			t.Fatalf("the stale node tried its terminal write %d times, want 1", n)
		}
		if evs := a.events(0, 1); evs[0].IntentID != id {
			t.Fatalf("event of %s, want the one of %s", evs[0].IntentID, id)
		}
	})
}

// TestTruncatedOnlyWhenEventsWereMissed prunes the event log and resumes from several
// ids: the stream says events are no longer retained only to a reader who missed one.
// On NATS ids skip the sequences of other records, so the oldest retained id alone
// would also flag a reader who saw the newest pruned event.
func TestTruncatedOnlyWhenEventsWereMissed(t *testing.T) {
	eachStore(t, func(t *testing.T, backend storetest.Backend) {
		h := newHarnessOn(t, backend, nil)
		var ids []uint64
		for range 3 {
			id := h.submit("M", 2500)
			if err := proposeTo(h, id, "M-cheap"); err != nil {
				t.Fatal(err)
			}
			h.waitState(id, intentd.StateSuccess)
		}
		for _, ev := range h.events(0, 3) {
			ids = append(ids, ev.ID)
		}
		if _, err := h.store.PruneEvents(context.Background(), 1, time.Time{}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			from uint64
			want bool
		}{
			{0, true},
			{ids[0], true},
			{ids[1] - 1, true},
			{ids[1], false}, // saw the newest pruned event
			{ids[2], false},
		} {
			sub, err := h.e.Subscribe(context.Background(), tc.from, intentd.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if got := sub.(*Subscription).Truncated(); got != tc.want {
				t.Errorf("resume after %d (events %v, %d kept): truncated %v, want %v", tc.from, ids, ids[2], got, tc.want)
			}
			sub.Close()
		}
	})
}
