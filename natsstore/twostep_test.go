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
	testHookBeforeCreate = func() {
		if err := a.DeletePolicy(bg, "P"); err != nil {
			t.Errorf("delete in the window: %v", err)
		}
	}
	testHookAfterCreate = cancel
	defer func() { testHookBeforeCreate, testHookAfterCreate = nil, nil }()
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
	testHookDelete = func(point string) {
		switch point {
		case "before the tombstone":
			testHookDelete = func(point string) {
				if point == "after the tombstone" {
					cancel()
				}
			}
			if err := b.CreateIntent(bg, "early", "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
				t.Errorf("create in the window: %v", err)
			}
		}
	}
	defer func() { testHookDelete = nil }()
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
