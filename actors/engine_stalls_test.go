package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/storetest"
)

// slowStore holds every CreateIntent until release is closed.
type slowStore struct {
	*persistence.Store
	release chan struct{}
	entered chan struct{} // when not nil, told of each create held
}

func (s *slowStore) CreateIntent(ctx context.Context, id, policyID string, snap []byte, at time.Time) error {
	if s.entered != nil {
		s.entered <- struct{}{}
	}
	<-s.release
	return s.Store.CreateIntent(ctx, id, policyID, snap, at)
}

// slowHarness opens an engine on a slowStore, whose creates wait for release and are
// each announced on entered.
func slowHarness(t *testing.T) (*harness, *slowStore) {
	t.Helper()
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	slow := &slowStore{Store: store, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	cfg := DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Verify.AllowUnsigned = slow, newFakeExtractor(), true
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h := &harness{t: t, e: e, store: store}
	if h.policy, err = e.PutPolicy(context.Background(), testPolicy); err != nil {
		t.Fatal(err)
	}
	return h, slow
}

// TestCallerGivesUp checks that an engine call returns when the caller's ctx ends, with
// the canceled code, and that what the engine was doing meanwhile is done all the same:
// the intent is stored once the write goes through.
func TestCallerGivesUp(t *testing.T) {
	h, slow := slowHarness(t)
	e := h.e
	id := uuid.NewString()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := submitRaw(ctx, e, h.intentJSON(id, "M", 2500), crypto.Authorship{})
	wantCode(t, err, intentd.KindBusy, intentd.CodeCanceled)

	close(slow.release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := e.GetIntent(context.Background(), id)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the intent was never stored after its caller gave up: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProposalDuringCreate checks that a proposal which comes while its intent's create
// is being written, with no actor live for it, waits for the write and is taken, rather
// than answered 404 by an actor that read the store too early.
func TestProposalDuringCreate(t *testing.T) {
	h, slow := slowHarness(t)
	e := h.e
	id := uuid.NewString()
	created := make(chan error, 1)
	go func() {
		created <- submitRaw(context.Background(), e, h.intentJSON(id, "M", 2500), crypto.Authorship{})
	}()
	<-slow.entered
	proposed := make(chan error, 1)
	go func() { proposed <- e.Propose(context.Background(), id, intentd.Proposal{Solution: "M-cheap"}, nil) }()
	select {
	case err := <-proposed:
		t.Fatalf("the proposal was answered before its intent was written: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(slow.release)
	if err := <-created; err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := <-proposed; err != nil {
		t.Fatalf("the proposal made during the create: %v", err)
	}
	h.waitState(id, intentd.StateSuccess)
}

// TestProposalBehindAStalledCreate proposes to an intent whose create the store holds
// up: the proposal waits for the write, but no longer than its caller's deadline.
func TestProposalBehindAStalledCreate(t *testing.T) {
	h, slow := slowHarness(t)
	id := uuid.NewString()
	created := make(chan error, 1)
	go func() {
		created <- submitRaw(context.Background(), h.e, h.intentJSON(id, "M", 2500), crypto.Authorship{})
	}()
	<-slow.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	proposed := make(chan error, 1)
	go func() { proposed <- h.e.Propose(ctx, id, intentd.Proposal{Solution: "M-cheap"}, nil) }()
	select {
	case err := <-proposed:
		wantCode(t, err, intentd.KindBusy, intentd.CodeCanceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the proposal outlived its deadline behind a stalled create")
	}
	close(slow.release)
	if err := <-created; err != nil {
		t.Fatalf("create: %v", err)
	}
	if s := h.status(id); s.State != intentd.StateOpen {
		t.Fatalf("state %s after a proposal that gave up, want open", s.State)
	}
}

// awayStore answers "retry later" to its first reads of the event bounds and of an
// intent, as a store on a NATS cluster does while its servers elect their leaders.
type awayStore struct {
	storetest.Store
	left atomic.Int32 // how many more reads fail
}

func (a *awayStore) away() error {
	if a.left.Add(-1) >= 0 {
		return &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStoreUnavailable, Message: "the store is unreachable; retry later"}
	}
	return nil
}

func (a *awayStore) EventBounds(ctx context.Context) (uint64, uint64, error) {
	if err := a.away(); err != nil {
		return 0, 0, err
	}
	return a.Store.EventBounds(ctx)
}

func (a *awayStore) Intent(ctx context.Context, id string) ([]byte, error) {
	if err := a.away(); err != nil {
		return nil, err
	}
	return a.Store.Intent(ctx, id)
}

// TestStartWaitsForTheStore restarts the engine with proposals interrupted while its
// store asks to retry later for a while: the start waits for the store rather than
// failing, and the proposals are resumed to their outcomes.
func TestStartWaitsForTheStore(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.interruptProposals(3)
	open := h.openStore
	var away *awayStore
	h.openStore = func(t *testing.T) storetest.Store {
		away = &awayStore{Store: open(t)}
		away.left.Store(6)
		return away
	}
	h.open()
	if left := away.left.Load(); left > 0 {
		t.Fatalf("the start made only %d of the reads that fail", 6-left)
	}
	for _, id := range ids {
		h.waitState(id, intentd.StateSuccess)
	}
}
