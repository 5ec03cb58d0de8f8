package actors

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// laggingStore answers IntentNearby as a replica behind the store would: with the
// snapshots it was given, whatever the store holds since.
type laggingStore struct {
	storetest.Store
	mu     sync.Mutex
	behind map[string][]byte
	reads  atomic.Int64
}

func (s *laggingStore) IntentNearby(ctx context.Context, id string) ([]byte, error) {
	s.reads.Add(1)
	s.mu.Lock()
	old, ok := s.behind[id]
	s.mu.Unlock()
	if ok {
		return old, nil
	}
	return s.Store.Intent(ctx, id)
}

// TestProposalAfterANearbyReadBehind: two nodes on one NATS stream; the second reads
// an intent, before a proposal, from a replica that still holds it open after the first
// node decided it. The second node's write is refused as stale, it reads the intent
// again from the store, and answers as it would have with the store's snapshot: the
// intent already has a proposal, and its outcome is the first node's.
func TestProposalAfterANearbyReadBehind(t *testing.T) {
	open := stores[1].backend(t) // the NATS store: its writes are fenced by sequence
	a := newHarnessWith(t, open, nil)
	lagging := &laggingStore{behind: map[string][]byte{}}
	b := newHarnessWith(t, func(t *testing.T) storetest.Store {
		lagging.Store = open(t)
		return lagging
	}, nil)
	if b.e.nearby == nil {
		t.Fatal("the engine does not read through its store's IntentNearby")
	}

	id := a.submit("M", 2500)
	opened, err := a.store.Intent(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	lagging.mu.Lock()
	lagging.behind[id] = opened
	lagging.mu.Unlock()
	if err := proposeTo(a, id, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	decided := a.waitState(id, intentd.StateSuccess)

	wantCode(t, proposeTo(b, id, "M-dear"), intentd.KindConflict, intentd.CodeProposalExists)
	if n := lagging.reads.Load(); n != 1 {
		t.Errorf("%d nearby reads, want the proposal's one", n)
	}
	if got := b.status(id); got.State != intentd.StateSuccess || got.Proposal == nil || got.Proposal.Solution != decided.Proposal.Solution {
		t.Errorf("the second node sees %+v, want the first node's outcome %+v", got, decided)
	}

	// An intent the replica holds as the store does is proposed to as ever.
	fresh := a.submit("M", 2500)
	if err := proposeTo(b, fresh, "M-cheap"); err != nil {
		t.Fatalf("a proposal through the second node after a nearby read: %v", err)
	}
	b.waitState(fresh, intentd.StateSuccess)
	if n := lagging.reads.Load(); n != 2 {
		t.Errorf("%d nearby reads, want one for each proposal", n)
	}
}
