package actors

import (
	"context"
	"crypto/ed25519"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/storetest"
)

// TestDecidedActorsRetire checks that the actor of a decided or expired intent stops
// without waiting for passivation, and that the intent still answers afterwards.
func TestDecidedActorsRetire(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PassivateAfter = time.Hour; c.IntentTTL = 300 * time.Millisecond })
	decided := h.submit("M", 2500)
	expiring := h.submit("M", 2500)
	if err := proposeTo(h, decided, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(decided, intentd.StateSuccess)
	h.waitState(expiring, intentd.StateExpired)
	h.waitNoActors(time.Now().Add(5*time.Second), "an hour before their passivation")
	for _, id := range []string{decided, expiring} {
		if err := proposeTo(h, id, "M-cheap"); intentd.ErrorKind(err) != intentd.KindConflict {
			t.Fatalf("a proposal to the ended intent %s: %v, want a conflict", id, err)
		}
	}
}

// acquiredIntent submits an intent on an engine that does not passivate within a test,
// and counts a call to its actor in flight, as the registry does for each call.
func acquiredIntent(t *testing.T) (*harness, string, *actor.PID) {
	t.Helper()
	h := newHarness(t, func(c *Config) { c.PassivateAfter = time.Hour })
	id := h.submit("M", 2500)
	pid, err := h.e.registry.acquire(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return h, id, pid
}

// TestRetireWaitsForCallsInFlight checks that an actor whose intent ends while another
// call is in flight (as a proposal's own call can be when proving is quick) is not
// stopped under that call, and stops when it finishes rather than an hour later.
func TestRetireWaitsForCallsInFlight(t *testing.T) {
	h, id, pid := acquiredIntent(t)
	if err := proposeTo(h, id, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, intentd.StateSuccess)
	s := h.e.registry.shard(id)
	ended := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		la := s.m[id]
		return la != nil && la.ended
	}
	deadline := time.Now().Add(5 * time.Second)
	for !ended() {
		if time.Now().After(deadline) {
			t.Fatal("the actor of a decided intent was not marked to stop")
		}
		time.Sleep(time.Millisecond)
	}
	if n := h.e.registry.live(); n != 1 {
		t.Fatalf("%d actors live while a call is in flight, want 1", n)
	}
	h.e.registry.release(id, pid, false, false)
	h.waitNoActors(deadline, "after the last call in flight finished")
}

// TestCallFindsItsActorGone stops an intent actor behind the registry's back: the next
// call lands in protoactor's dead letters, is answered from there, and is sent again
// to an actor spawned from the snapshot, rather than waiting out its time-out.
func TestCallFindsItsActorGone(t *testing.T) {
	h, id, pid := acquiredIntent(t)
	h.e.registry.release(id, pid, false, false)
	if err := h.e.system.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	res, err := h.e.registry.localCall(ctx, id, expire{})
	if err != nil {
		t.Fatalf("a call to the intent of a stopped actor: %v", err)
	}
	if snap, ok := res.(*snapshot); !ok || snap.ID != id || snap.State != intentd.StateOpen {
		t.Fatalf("the call answered %#v, want the open intent's snapshot", res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the call took %v", d)
	}
	if err := proposeTo(h, id, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, intentd.StateSuccess)
}

// heldStore holds every BeginProcessing until release is closed.
type heldStore struct {
	storetest.Store
	release chan struct{}
}

func (s *heldStore) BeginProcessing(ctx context.Context, id, policyID string, snap []byte, at time.Time) error {
	<-s.release
	return s.Store.BeginProcessing(ctx, id, policyID, snap, at)
}

// TestCallerLeavesActorCall checks that a caller whose ctx ends while the intent's actor
// is writing is answered at once, that the actor is not passivated under the message it
// still holds, and that the write it was making goes through and the call is given
// back once it answers.
func TestCallerLeavesActorCall(t *testing.T) {
	open := stores[0].backend(t)
	held := make(chan struct{})
	h := newHarnessWith(t, func(t *testing.T) storetest.Store {
		return &heldStore{Store: open(t), release: held}
	}, func(c *Config) { c.PassivateAfter = 20 * time.Millisecond })
	id := h.submit("M", 2500)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := h.e.Propose(ctx, id, intentd.Proposal{Solution: "M-cheap"}, nil)
	wantCode(t, err, intentd.KindBusy, intentd.CodeCanceled)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the caller was answered after %v", d)
	}
	time.Sleep(100 * time.Millisecond) // several passivation periods
	if n := h.e.registry.live(); n != 1 {
		t.Fatalf("%d actors live while one holds a write, want 1", n)
	}
	close(held)
	h.waitState(id, intentd.StateSuccess)
	h.waitNoActors(time.Now().Add(5*time.Second), "after the actor answered the call its caller left")
}

// TestPassivation checks that idle actors stop and come back from their snapshot.
func TestPassivation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PassivateAfter = 20 * time.Millisecond })
	var ids []string
	for range 50 {
		ids = append(ids, h.submit("M", 2500))
	}
	h.waitNoActors(time.Now().Add(5*time.Second), "after 20 ms idle")
	for _, id := range ids {
		if err := proposeTo(h, id, "M-cheap"); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		h.waitState(id, intentd.StateSuccess)
	}
	wantCode(t, proposeTo(h, ids[0], "M-cheap"), intentd.KindConflict, intentd.CodeProposalExists)
}

// panickyStore makes the first Finish panic inside the intent actor.
type panickyStore struct {
	*persistence.Store
	once sync.Once
}

func (p *panickyStore) Finish(ctx context.Context, id, policyID string, snap []byte, at time.Time, ev intentd.Event) (uint64, error) {
	p.once.Do(func() { panic("disk controller on fire") })
	return p.Store.Finish(ctx, id, policyID, snap, at, ev)
}

// TestActorPanic panics an intent actor mid-transition: the acknowledged state survives
// and the intent still reaches its terminal state, once.
func TestActorPanic(t *testing.T) {
	fs := persistence.NewMemFS()
	store, err := persistence.Open("db", persistence.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := DefaultConfig()
	cfg.Store, cfg.Extractor = &panickyStore{Store: store}, newFakeExtractor()
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h := &harness{t: t, e: e, store: store}
	_, h.key, _ = ed25519.GenerateKey(nil)
	h.policy, _ = e.PutPolicy(context.Background(), testPolicy)
	id := h.submit("M", 2500)
	if err := proposeTo(h, id, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, intentd.StateSuccess)
	if evs := h.events(0, 1); evs[0].IntentID != id {
		t.Fatalf("event = %+v", evs[0])
	}
}
