package natsstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/intentd/intentd"
)

// TestCreateCutOffStillWithdraws puts a delete in the window before a create's write,
// and cancels the create's caller right after the write: the create's second look at
// its policy still runs, and withdraws the intent, so no open intent is left naming a
// deleted policy.
func TestCreateCutOffStillWithdraws(t *testing.T) {
	a, b := twoStoresWithPolicy(t)
	bg := context.Background()
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	b.beforeFirstStep = func() {
		if err := a.DeletePolicy(bg, "P"); err != nil {
			t.Errorf("delete in the window: %v", err)
		}
	}
	b.afterFirstStep = cancel
	err := b.CreateIntent(ctx, "late", "P", []byte("o"), time.Now().Add(time.Hour))
	if !errors.Is(err, intentd.ErrPolicyNotFound) {
		t.Fatalf("a create cut off after its write = %v, want intentd.ErrPolicyNotFound", err)
	}
	for name, s := range map[string]*Store{"creator": b, "deleter": a} {
		if _, err := s.Intent(bg, "late"); !errors.Is(err, intentd.ErrNotFound) {
			t.Errorf("%s: the intent reads %v, want it withdrawn", name, err)
		}
	}
}

// TestDeleteCutOffStillRestores puts a create in the window before a delete's
// tombstone, and cancels the delete's caller right after the tombstone: the delete's
// second step still runs and puts the policy back, so the open intent's policy is
// there to prove it.
func TestDeleteCutOffStillRestores(t *testing.T) {
	a, b := twoStoresWithPolicy(t)
	bg := context.Background()
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	a.beforeFirstStep = func() {
		if err := b.CreateIntent(bg, "early", "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
			t.Errorf("create in the window: %v", err)
		}
	}
	a.afterFirstStep = cancel
	if err := a.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("a delete cut off after its tombstone = %v, want intentd.ErrPolicyInUse", err)
	}
	if _, _, err := a.Policy(bg, "P"); err != nil {
		t.Fatalf("the policy after the refused delete: %v, want it back", err)
	}
	if _, err := b.Intent(bg, "early"); err != nil {
		t.Fatalf("the intent: %v", err)
	}
}

// twoStoresWithPolicy opens two stores on one server, as two nodes, and stores policy P
// through the first once the second sees it; both are closed when the test ends.
func twoStoresWithPolicy(t *testing.T) (a, b *Store) {
	t.Helper()
	url := embed(t).URL()
	a, b = open(t, url), open(t, url)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx := context.Background()
	if _, err := a.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		ps, err := b.policyState(ctx, "P", false)
		return err == nil && ps.live
	}, "the other store sees the policy")
	return a, b
}

// TestStrandedTombstoneRepaired ends a delete's store right after its tombstone, as a
// crash between the steps would, while an intent created before the tombstone names the
// policy: the other store finds the tombstone stranded and puts the policy back as it
// was, so the intent's policy is there to prove it.
func TestStrandedTombstoneRepaired(t *testing.T) {
	bg := context.Background()
	url := embed(t).URL()
	a := open(t, url)
	b, err := Open(bg, Options{URLs: []string{url}, repairAfter: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	if _, err := a.PutPolicy(bg, "P", []byte{1, 2}, []byte("source")); err != nil {
		t.Fatal(err)
	}
	a.beforeFirstStep = func() {
		if err := b.CreateIntent(bg, "early", "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
			t.Errorf("create in the window: %v", err)
		}
	}
	a.afterFirstStep = func() { a.Close() }
	if err := a.DeletePolicy(bg, "P"); !errors.Is(err, intentd.ErrStoreClosed) {
		t.Fatalf("a delete whose store closed after its tombstone = %v, want intentd.ErrStoreClosed", err)
	}
	eventuallyWithin(t, 4*checkEvery, func() bool {
		_, _, err := b.Policy(bg, "P")
		return err == nil
	}, "the other store puts the policy back")
	if bc, src, err := b.Policy(bg, "P"); err != nil || string(bc) != "\x01\x02" || string(src) != "source" {
		t.Fatalf("the policy put back = %q, %q, %v; want it as it was", bc, src, err)
	}
	if _, err := b.Intent(bg, "early"); err != nil {
		t.Fatalf("the intent: %v", err)
	}
	if err := b.DeletePolicy(bg, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("a delete of the policy put back = %v, want intentd.ErrPolicyInUse", err)
	}
}

// TestDeleteNotUndone deletes a policy no intent names, then refuses a delete of one an
// intent names, through one store, while another checks for stranded tombstones: the
// delete that succeeded stays done, and the refused one is put back once.
func TestDeleteNotUndone(t *testing.T) {
	bg := context.Background()
	url := embed(t).URL()
	a := open(t, url)
	b, err := Open(bg, Options{URLs: []string{url}, repairAfter: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	for _, p := range []string{"gone", "used"} {
		if _, err := a.PutPolicy(bg, p, []byte(p), nil); err != nil {
			t.Fatal(err)
		}
	}
	a.beforeFirstStep = func() {
		a.beforeFirstStep = nil
		if err := b.CreateIntent(bg, "i", "used", []byte("o"), time.Now().Add(time.Hour)); err != nil {
			t.Errorf("create in the window: %v", err)
		}
	}
	if err := a.DeletePolicy(bg, "used"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("delete of a policy an intent created in the window names = %v, want intentd.ErrPolicyInUse", err)
	}
	back, err := a.last(bg, a.policySubject("used"))
	if err != nil || isTombstone(back.Header) {
		t.Fatalf("the refused delete's policy: %v, %v; want it back", back, err)
	}
	if err := a.DeletePolicy(bg, "gone"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*checkEvery + 500*time.Millisecond)
	if _, _, err := b.Policy(bg, "gone"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("a deleted policy reads %v after the checks, want intentd.ErrNotFound", err)
	}
	if m, err := b.last(bg, b.policySubject("used")); err != nil || m.Sequence != back.Sequence {
		t.Fatalf("the refused delete's policy: %v, %v; want only the record its delete put back, %d", m, err, back.Sequence)
	}
}

// eventuallyWithin waits up to d for ok.
func eventuallyWithin(t *testing.T, d time.Duration, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: not true that %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStrandedCreateWithdrawn ends a create's store right after its intent, written
// after the tombstone of a delete that found no intent, as a crash between the steps
// would: the other store finds the open intent naming the deleted policy and withdraws
// it, as the create's second step would have.
func TestStrandedCreateWithdrawn(t *testing.T) {
	bg := context.Background()
	url := embed(t).URL()
	a := open(t, url)
	b, err := Open(bg, Options{URLs: []string{url}, repairAfter: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	if _, err := a.PutPolicy(bg, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	a.beforeFirstStep = func() {
		if err := b.DeletePolicy(bg, "P"); err != nil {
			t.Errorf("delete in the window: %v", err)
		}
	}
	a.afterFirstStep = func() { a.Close() }
	if err := a.CreateIntent(bg, "late", "P", []byte("o"), time.Now().Add(time.Hour)); !errors.Is(err, intentd.ErrStoreClosed) {
		t.Fatalf("a create whose store closed after its intent = %v, want intentd.ErrStoreClosed", err)
	}
	eventuallyWithin(t, 4*checkEvery, func() bool {
		_, err := b.Intent(bg, "late")
		return errors.Is(err, intentd.ErrNotFound)
	}, "the other store withdraws the intent")
	// The index hears of the withdrawal a moment after the stream has it.
	eventually(t, func() bool {
		ids, err := b.DueExpiries(bg, time.Now().Add(2*time.Hour), 10)
		return err == nil && len(ids) == 0
	}, "no intent is open after the withdrawal")
	if _, _, err := b.Policy(bg, "P"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("the deleted policy reads %v, want it deleted still", err)
	}
}
