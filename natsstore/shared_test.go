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

// TestTwoStoresShareOneStream opens two stores on one server, as two nodes would: each
// sees the other's intents in its indexes, an id taken on one is refused on the other,
// a policy in use through one cannot be deleted through the other, and a stale writer
// is refused.
func TestTwoStoresShareOneStream(t *testing.T) {
	ctx := context.Background()
	url := embed(t).URL()
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	heard := make(chan intentd.Event, 10)
	b.SetEventSink(func(e intentd.Event) { heard <- e })

	if _, err := a.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	if created, err := b.PutPolicy(ctx, "P", []byte{1}, nil); err != nil || created {
		t.Fatalf("PutPolicy through the other store = %v, %v; want it found stored", created, err)
	}
	if err := a.CreateIntent(ctx, "x", "P", []byte("o"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateIntent(ctx, "x", "P", []byte("o2"), time.Now()); !errors.Is(err, intentd.ErrExists) {
		t.Fatalf("create of a taken id through the other store = %v, want intentd.ErrExists", err)
	}
	eventually(t, func() bool {
		ids, _ := b.DueExpiries(ctx, time.Now(), 10)
		return slices.Equal(ids, []string{"x"})
	}, "the other store's expiry index lists x")
	if err := b.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("delete through the other store = %v, want intentd.ErrPolicyInUse", err)
	}
	if err := a.BeginProcessing(ctx, "x", "P", []byte("p"), time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		ids, _ := b.Processing(ctx)
		return slices.Equal(ids, []string{"x"})
	}, "the other store's processing set lists x")
	// b saw a's write, so b may finish; a, which wrote before, is now stale.
	id, err := b.Finish(ctx, "x", "P", []byte("done"), time.Now(), storetest.Event("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Finish(ctx, "x", "P", []byte("again"), time.Now(), storetest.Event("x")); err == nil {
		t.Fatal("a second terminal write by a stale writer was accepted")
	}
	if got, _ := a.Intent(ctx, "x"); string(got) != "done" {
		t.Fatalf("snapshot = %q, want the first terminal write", got)
	}
	select {
	case e := <-heard:
		if e.ID != id || e.IntentID != "x" {
			t.Fatalf("sink heard %+v, want event %d of x", e, id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the sink did not hear the event")
	}
	eventually(t, func() bool {
		ids, _ := a.Processing(ctx)
		return len(ids) == 0
	}, "the first store's processing set is empty")
	if err := a.DeletePolicy(ctx, "P"); err != nil {
		t.Fatalf("delete once the intent finished: %v", err)
	}
}

func eventually(t *testing.T, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: not true that %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCreateAfterDeleteIsWithdrawn puts a delete, through another store, in the window
// between a create's look at its policy and its write: the delete finds no reference,
// so the create's intent comes after the tombstone and must be withdrawn. The id can
// then be created once the policy is stored again.
func TestCreateAfterDeleteIsWithdrawn(t *testing.T) {
	ctx := context.Background()
	a, b := twoStoresWithPolicy(t)
	b.beforeFirstStep = func() {
		if err := a.DeletePolicy(ctx, "P"); err != nil {
			t.Errorf("delete in the window: %v", err)
		}
	}
	err := b.CreateIntent(ctx, "late", "P", []byte("o"), time.Now().Add(time.Hour))
	b.beforeFirstStep = nil
	if !errors.Is(err, intentd.ErrPolicyNotFound) {
		t.Fatalf("create after the tombstone = %v, want intentd.ErrPolicyNotFound", err)
	}
	for name, s := range map[string]*Store{"creator": b, "deleter": a} {
		if _, err := s.Intent(ctx, "late"); !errors.Is(err, intentd.ErrNotFound) {
			t.Errorf("%s: withdrawn intent reads %v, want intentd.ErrNotFound", name, err)
		}
		eventually(t, func() bool {
			at, found, err := s.NextExpiry(ctx)
			return err == nil && !found && at.IsZero()
		}, name+"'s expiry index is empty")
	}
	if _, err := a.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateIntent(ctx, "late", "P", []byte("o2"), time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("create of the withdrawn id once the policy is back: %v", err)
	}
	if got, err := a.Intent(ctx, "late"); err != nil || string(got) != "o2" {
		t.Fatalf("recreated intent reads %q, %v; want o2", got, err)
	}
	if err := a.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("delete with the recreated intent open = %v, want intentd.ErrPolicyInUse", err)
	}
}

// TestPutAfterAnotherStoresDelete: a policy deleted through one store and put again
// through another at once is stored again, though the other's index, which follows the
// stream a long window at a time, still holds it live.
func TestPutAfterAnotherStoresDelete(t *testing.T) {
	ctx := context.Background()
	a, b := storeAndSlowFollower(t)
	for i := range 3 {
		// b's index takes b's own record alone, and then lets its window pass.
		if _, err := b.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
			t.Fatal(err)
		}
		if err := a.DeletePolicy(ctx, "P"); err != nil {
			t.Fatal(err)
		}
		created, err := b.PutPolicy(ctx, "P", []byte{1}, nil)
		if err != nil || !created {
			t.Fatalf("round %d: put after the other store's delete = %v, %v; want it stored again", i, created, err)
		}
		if _, _, err := a.Policy(ctx, "P"); err != nil {
			t.Fatalf("round %d: the policy put again, read through the other store: %v", i, err)
		}
		if err := b.DeletePolicy(ctx, "P"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPruneSeenAtOnceByAnotherStore prunes through one store while another's index waits
// out its window: the other tells at once what was pruned, serves none of it, and hides
// the event kept below the floor only for its id.
func TestPruneSeenAtOnceByAnotherStore(t *testing.T) {
	ctx := context.Background()
	a, b := storeAndSlowFollower(t)
	if _, err := a.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, id := range []string{"a", "b", "c"} {
		if err := a.CreateIntent(ctx, id, "P", nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		ev, err := storetest.BeginAndFinish(ctx, a, id, "P", nil, time.Now(), storetest.Event(id))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev)
	}
	read := func() []uint64 {
		t.Helper()
		var got []uint64
		if err := b.Events(ctx, 0, 10, func(ev intentd.Event) error { got = append(got, ev.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	stale := 0 // the cases whose prune b's index had not taken when b was asked
	for _, c := range []struct {
		keep   uint64
		pruned uint64
		first  uint64 // b's oldest retained event, 0 for none
		events []uint64
	}{
		{keep: 1, pruned: ids[1], first: ids[2], events: ids[2:]},
		{keep: 0, pruned: ids[2], first: 0, events: nil},
	} {
		// A record of the index just before the prune: b's index takes it at once, after
		// a quiet spell, and then lets its window (500 ms) pass, with the floor's record
		// in it.
		if err := a.CreateIntent(ctx, fmt.Sprint("x", c.keep), "P", nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if _, err := a.PruneEvents(ctx, c.keep, time.Time{}); err != nil {
			t.Fatal(err)
		}
		b.mu.Lock()
		if b.pruned < c.pruned {
			stale++
		}
		b.mu.Unlock()
		if p, err := b.PrunedThrough(ctx); err != nil || p != c.pruned {
			t.Errorf("keep %d: the other store's PrunedThrough = %d, %v; want %d", c.keep, p, err, c.pruned)
		}
		if first, _, err := b.EventBounds(ctx); err != nil || first != c.first {
			t.Errorf("keep %d: the other store's oldest retained event = %d, %v; want %d", c.keep, first, err, c.first)
		}
		if got := read(); !slices.Equal(got, c.events) {
			t.Errorf("keep %d: the other store serves events %v; want %v", c.keep, got, c.events)
		}
	}
	if stale == 0 {
		t.Fatal("the other store's index had taken every prune before it was asked: the test checked nothing")
	}
}

// storeAndSlowFollower opens two stores on one new server: the second follows the
// stream with the longest window, so that its index takes the first's writes up to
// 500 ms later. Both close with the test.
func storeAndSlowFollower(t *testing.T) (a, b *Store) {
	t.Helper()
	url := embed(t).URL()
	a = open(t, url)
	t.Cleanup(func() { a.Close() })
	b, err := Open(context.Background(), Options{URLs: []string{url}, FollowWindow: MaxFollowWindow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}
