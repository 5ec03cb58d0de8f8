package natsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// openNarrowed opens a store told it does not scan the index, narrowed at once, and
// narrowed again at every check after a use: every call that needs the index loads it
// first.
func openNarrowed(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{URLs: []string{url}, indexLinger: time.Nanosecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s.KeepIndex(false)
	if err := s.narrow(context.Background(), 0); err != nil {
		t.Fatalf("narrow: %v", err)
	}
	if !s.isPartial() {
		t.Fatal("the store did not narrow")
	}
	return s
}

// TestStoreNarrowed runs the store's promises on a store that does not keep the index:
// each answer from the index loads it, and the store narrows again within a second.
func TestStoreNarrowed(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func(*testing.T) storetest.Store {
		srv := embed(t)
		return func(t *testing.T) storetest.Store { return stepped{openNarrowed(t, srv.URL())} }
	})
}

// TestNarrowedFollowsThePoliciesAlone: a store that does not keep the index applies
// none of another store's intents, holds only the fences of what it wrote or read, and
// still writes every transition against the right record; asked for the processing
// list, it loads the index, answers with the other store's intent, and narrows again.
func TestNarrowedFollowsThePoliciesAlone(t *testing.T) {
	ctx := context.Background()
	url := embed(t).URL()
	a := open(t, url)
	defer a.Close()
	b := openNarrowed(t, url)
	defer b.Close()
	if _, err := a.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := a.CreateIntent(ctx, fmt.Sprint("a", i), "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.BeginProcessing(ctx, "a0", "P", []byte("p"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// b follows the policies: it sees the policy, and its create checks it.
	if err := b.CreateIntent(ctx, "b0", "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := b.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	indexed, fenced := len(b.intents), b.fences.len()
	b.mu.Unlock()
	if indexed != 0 || fenced != 1 {
		t.Fatalf("narrowed: %d intents indexed and %d fenced, want 0 and 1 (its own create)", indexed, fenced)
	}
	// A proposal taken on b: the read, then the write against the record read.
	if _, err := b.Intent(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.BeginAndFinish(ctx, b, "a1", "P", []byte("t"), time.Now(), storetest.Event("a1")); err != nil {
		t.Fatalf("a proposal decided on the narrowed store: %v", err)
	}
	// A stale write from b's fence is refused: a moved a2 on after b read it.
	if _, err := b.Intent(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	if err := a.BeginProcessing(ctx, "a2", "P", []byte("p"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := b.BeginProcessing(ctx, "a2", "P", []byte("p2"), time.Now().Add(time.Hour)); err == nil {
		t.Fatal("a write from a stale fence was accepted")
	}

	ids, err := b.Processing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"a0", "a2"}) {
		t.Fatalf("Processing on the narrowed store = %v, want [a0 a2]", ids)
	}
	if b.isPartial() {
		t.Fatal("the store answered from the index without following every intent")
	}
	if err := b.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("delete on the narrowed store = %v, want ErrPolicyInUse", err)
	}
	eventually(t, b.isPartial, "the store narrows again after its use")
	b.KeepIndex(true)
	eventually(t, func() bool { return !b.isPartial() }, "the store told to keep the index follows every intent again")
	next, ok, err := b.NextExpiry(ctx)
	if err != nil || !ok || next.Before(time.Now()) {
		t.Fatalf("NextExpiry = %v, %v, %v; want an hour from now", next, ok, err)
	}
}
