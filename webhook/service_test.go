package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentd/intentd"
)

// receiver records the webhook-ids it takes, in order, and the most deliveries it
// ever had under way at once.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	ids     []uint64
	now     atomic.Int32
	most    atomic.Int32
	delay   time.Duration
	failing atomic.Bool
}

func newReceiver(t *testing.T, delay time.Duration) *receiver {
	rc := &receiver{delay: delay}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := rc.now.Add(1)
		defer rc.now.Add(-1)
		for {
			m := rc.most.Load()
			if n <= m || rc.most.CompareAndSwap(m, n) {
				break
			}
		}
		_, _ = io.ReadAll(r.Body)
		time.Sleep(rc.delay)
		if rc.failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		id, _ := strconv.ParseUint(r.Header.Get("webhook-id"), 10, 64)
		rc.mu.Lock()
		rc.ids = append(rc.ids, id)
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	return rc
}

// firsts are the ids taken, each at its first taking.
func (rc *receiver) firsts() []uint64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	seen := map[uint64]bool{}
	var out []uint64
	for _, id := range rc.ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func (rc *receiver) waitFor(t *testing.T, want []uint64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := rc.firsts()
		if len(got) >= len(want) {
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("events taken, in the order first taken: %v, want %v", got, want)
				}
			}
			if len(got) > len(want) {
				t.Fatalf("events taken: %v, want only %v", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("within %v the receiver took %v, want %v", within, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// partitionable wraps a store so that a member can be cut off from it.
type partitionable struct {
	intentd.WebhookStore
	cut atomic.Bool
}

var errCut = errors.New("cut off from the store")

func (p *partitionable) Webhook(ctx context.Context, id string) ([]byte, uint64, error) {
	if p.cut.Load() {
		return nil, 0, errCut
	}
	return p.WebhookStore.Webhook(ctx, id)
}

func (p *partitionable) Webhooks(ctx context.Context, fn func(string, []byte, uint64) error) error {
	if p.cut.Load() {
		return errCut
	}
	return p.WebhookStore.Webhooks(ctx, fn)
}

func (p *partitionable) UpdateWebhook(ctx context.Context, id string, b []byte, rev uint64) (uint64, error) {
	if p.cut.Load() {
		return 0, errCut
	}
	return p.WebhookStore.UpdateWebhook(ctx, id, b, rev)
}

func newMember(t *testing.T, name string, store intentd.WebhookStore, log *memLog) (*Service, context.CancelFunc, chan struct{}) {
	t.Helper()
	s := New(Options{Store: store, Source: log, Log: log, Member: name, AllowPrivate: true,
		LeaseTTL: 600 * time.Millisecond, Schedule: []time.Duration{0, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, cancel, done
}

// TestLeaseMovesBetweenMembers: two members share an endpoint's record; one delivers
// at a time, and when it leaves, cleanly or cut off from the store, the other goes on
// from where the record stands, nothing skipped, never both at once.
func TestLeaseMovesBetweenMembers(t *testing.T) {
	for _, leave := range []string{"clean stop", "cut off"} {
		t.Run(leave, func(t *testing.T) {
			store, log := newMemStore(), newMemLog()
			rc := newReceiver(t, 3*time.Millisecond)
			cutA := &partitionable{WebhookStore: store}
			a, stopA, doneA := newMember(t, "a", cutA, log)
			wh, err := a.CreateWebhook(context.Background(), intentd.WebhookSpec{URL: rc.URL})
			if err != nil {
				t.Fatal(err)
			}
			waitDeliverer(t, store, wh.ID, "a")
			newMember(t, "b", store, log)
			var want []uint64
			for i := range 60 {
				want = append(want, log.add(intentd.StateSuccess, "P", ""))
				time.Sleep(5 * time.Millisecond)
				if i == 20 {
					if leave == "clean stop" {
						stopA()
						<-doneA
					} else {
						cutA.cut.Store(true)
					}
				}
			}
			rc.waitFor(t, want, 20*time.Second)
			if m := rc.most.Load(); m > 1 {
				t.Fatalf("the receiver had %d deliveries under way at once: two members delivered together", m)
			}
			waitDeliverer(t, store, wh.ID, "b")
		})
	}
}

// waitDeliverer waits until the endpoint's record names member as its deliverer.
func waitDeliverer(t *testing.T, store intentd.WebhookStore, id, member string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var r record
		b, _, err := store.Webhook(context.Background(), id)
		if err == nil {
			r, err = decodeRecord(id, b)
		}
		if err == nil && r.Lease != nil && r.Lease.Owner == member {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the endpoint's lease is %+v (%v), want it held by %s", r.Lease, err, member)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFilters(t *testing.T) {
	store, log := newMemStore(), newMemLog()
	rc := newReceiver(t, 0)
	s, _, _ := newMember(t, "a", store, log)
	wh, err := s.CreateWebhook(context.Background(), intentd.WebhookSpec{URL: rc.URL,
		Types: []intentd.State{intentd.StateSuccess, intentd.StateFailure}, PolicyIDs: []string{"P1"}, MandateIDs: []string{"M1", "M2"}})
	if err != nil {
		t.Fatal(err)
	}
	var want []uint64
	for _, ev := range []struct {
		typ             intentd.State
		policy, mandate string
		selected        bool
	}{
		{intentd.StateSuccess, "P1", "M1", true},
		{intentd.StateExpired, "P1", "M1", false},
		{intentd.StateFailure, "P2", "M1", false},
		{intentd.StateFailure, "P1", "", false},
		{intentd.StateFailure, "P1", "M2", true},
		{intentd.StateSuccess, "P1", "M3", false},
		{intentd.StateSuccess, "P1", "M1", true},
		{intentd.StateExpired, "P9", "", false},
	} {
		id := log.add(ev.typ, ev.policy, ev.mandate)
		if ev.selected {
			want = append(want, id)
		}
	}
	rc.waitFor(t, want, 10*time.Second)
	// The events passed over move the cursor too, but for a trailing one of another
	// type, which the subscription never gives.
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := s.Webhook(context.Background(), wh.ID)
		if err == nil && got.Delivered >= 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivered_through %d, want 7 or more", got.Delivered)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDisableAndEnable: an event failing its whole schedule disables the endpoint at
// that event; enabled again, it is delivered, then the rest.
func TestDisableAndEnable(t *testing.T) {
	store, log := newMemStore(), newMemLog()
	rc := newReceiver(t, 0)
	rc.failing.Store(true)
	s, _, _ := newMember(t, "a", store, log)
	ctx := context.Background()
	wh, err := s.CreateWebhook(ctx, intentd.WebhookSpec{URL: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	first := log.add(intentd.StateSuccess, "P", "")
	deadline := time.Now().Add(10 * time.Second)
	var got intentd.Webhook
	for got.Status != intentd.WebhookDisabled {
		if got, err = s.Webhook(ctx, wh.ID); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint %+v, want it disabled", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got.Delivered != first-1 || got.DisabledReason == "" || len(got.Attempts) != 4 {
		t.Fatalf("disabled endpoint: delivered_through %d, reason %q, %d attempts; want %d, a reason, 4 attempts",
			got.Delivered, got.DisabledReason, len(got.Attempts), first-1)
	}
	second := log.add(intentd.StateFailure, "P", "")
	time.Sleep(100 * time.Millisecond)
	if ids := rc.firsts(); len(ids) != 0 {
		t.Fatalf("a disabled endpoint was delivered %v", ids)
	}
	rc.failing.Store(false)
	if _, err := s.SetWebhookEnabled(ctx, wh.ID, true); err != nil {
		t.Fatal(err)
	}
	rc.waitFor(t, []uint64{first, second}, 10*time.Second)
}

// TestAdminChangeKeepsPosition: a disable sent to another member than the one
// delivering, before the deliverer wrote its position, neither moves the position back
// nor makes the events delivered go again once the endpoint is enabled.
func TestAdminChangeKeepsPosition(t *testing.T) {
	store, log := newMemStore(), newMemLog()
	rc := newReceiver(t, 0)
	a, _, _ := newMember(t, "a", store, log)
	ctx := context.Background()
	wh, err := a.CreateWebhook(ctx, intentd.WebhookSpec{URL: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	waitDeliverer(t, store, wh.ID, "a")
	b, _, _ := newMember(t, "b", store, log)
	var want []uint64
	for range 5 {
		want = append(want, log.add(intentd.StateSuccess, "P", ""))
	}
	rc.waitFor(t, want, 10*time.Second)
	if _, err := b.SetWebhookEnabled(ctx, wh.ID, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := b.Webhook(ctx, wh.ID)
		if err == nil && got.Status == intentd.WebhookDisabled && got.Delivered == want[4] && got.Deliverer == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a disable through another member: %+v (%v); want disabled, delivered through %d, no deliverer", got, err, want[4])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := b.SetWebhookEnabled(ctx, wh.ID, true); err != nil {
		t.Fatal(err)
	}
	want = append(want, log.add(intentd.StateSuccess, "P", ""))
	rc.waitFor(t, want, 10*time.Second)
	rc.mu.Lock()
	n := len(rc.ids)
	rc.mu.Unlock()
	if n != len(want) {
		t.Fatalf("the receiver took %d deliveries of %d events: the disable moved the position back", n, len(want))
	}
}
