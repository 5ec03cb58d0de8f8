package actors

import (
	"context"
	"time"

	"github.com/intentd/intentd"
)

// observer is the Config's Observer with a no-op in every field left empty, so that the
// engine calls it without asking first.
func observer(o *intentd.Observer) intentd.Observer {
	var obs intentd.Observer
	if o != nil {
		obs = *o
	}
	if obs.Transition == nil {
		obs.Transition = func(intentd.State, intentd.FailureKind) {}
	}
	if obs.Extraction == nil {
		obs.Extraction = func(time.Duration, error) {}
	}
	if obs.Proving == nil {
		obs.Proving = func(time.Duration, intentd.State, intentd.FailureKind) {}
	}
	if obs.Published == nil {
		obs.Published = func() {}
	}
	if obs.RemoteCall == nil {
		obs.RemoteCall = func(time.Duration, error) {}
	}
	return obs
}

// timedStore tells the observer how long each call of the store it wraps took. The
// engine wraps its store only when someone listens, so that an engine without metrics
// pays nothing.
type timedStore struct {
	s    intentd.Store
	call func(op string, write bool, d time.Duration)
}

var _ intentd.Store = timedStore{}

func (t timedStore) write(op string, start time.Time) { t.call(op, true, time.Since(start)) }
func (t timedStore) read(op string, start time.Time)  { t.call(op, false, time.Since(start)) }

func (t timedStore) PutPolicy(ctx context.Context, id string, bytecode, source []byte) (bool, error) {
	defer t.write("put_policy", time.Now())
	return t.s.PutPolicy(ctx, id, bytecode, source)
}

func (t timedStore) Policy(ctx context.Context, id string) ([]byte, []byte, error) {
	defer t.read("policy", time.Now())
	return t.s.Policy(ctx, id)
}

func (t timedStore) PolicyBytecode(ctx context.Context, id string) ([]byte, error) {
	defer t.read("policy_bytecode", time.Now())
	return t.s.PolicyBytecode(ctx, id)
}

func (t timedStore) DeletePolicy(ctx context.Context, id string) error {
	defer t.write("delete_policy", time.Now())
	return t.s.DeletePolicy(ctx, id)
}

func (t timedStore) CreateIntent(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) error {
	defer t.write("create_intent", time.Now())
	return t.s.CreateIntent(ctx, id, policyID, snapshot, expiresAt)
}

func (t timedStore) Intent(ctx context.Context, id string) ([]byte, error) {
	defer t.read("intent", time.Now())
	return t.s.Intent(ctx, id)
}

// nearby times a NearbyReader's reads as the store's own.
func (t timedStore) nearby(r intentd.NearbyReader) func(context.Context, string) ([]byte, error) {
	return func(ctx context.Context, id string) ([]byte, error) {
		defer t.read("intent_nearby", time.Now())
		return r.IntentNearby(ctx, id)
	}
}

func (t timedStore) BeginProcessing(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) error {
	defer t.write("begin_processing", time.Now())
	return t.s.BeginProcessing(ctx, id, policyID, snapshot, expiresAt)
}

func (t timedStore) Finish(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time, ev intentd.Event) (uint64, error) {
	defer t.write("finish", time.Now())
	return t.s.Finish(ctx, id, policyID, snapshot, expiresAt, ev)
}

func (t timedStore) Processing(ctx context.Context) ([]string, error) {
	defer t.read("processing", time.Now())
	return t.s.Processing(ctx)
}

func (t timedStore) DueExpiries(ctx context.Context, now time.Time, limit int) ([]string, error) {
	defer t.read("due_expiries", time.Now())
	return t.s.DueExpiries(ctx, now, limit)
}

func (t timedStore) NextExpiry(ctx context.Context) (time.Time, bool, error) {
	defer t.read("next_expiry", time.Now())
	return t.s.NextExpiry(ctx)
}

func (t timedStore) SetEventSink(fn func(intentd.Event)) { t.s.SetEventSink(fn) }

func (t timedStore) Events(ctx context.Context, after uint64, limit int, fn func(intentd.Event) error) error {
	defer t.read("events", time.Now())
	return t.s.Events(ctx, after, limit, fn)
}

func (t timedStore) EventBounds(ctx context.Context) (uint64, uint64, error) {
	defer t.read("event_bounds", time.Now())
	return t.s.EventBounds(ctx)
}

func (t timedStore) PrunedThrough(ctx context.Context) (uint64, error) {
	defer t.read("pruned_through", time.Now())
	return t.s.PrunedThrough(ctx)
}

func (t timedStore) PruneEvents(ctx context.Context, keep uint64, olderThan time.Time) (int, error) {
	defer t.write("prune_events", time.Now())
	return t.s.PruneEvents(ctx, keep, olderThan)
}

func (t timedStore) SpendNonce(ctx context.Context, key, nonce string, until time.Time) error {
	defer t.write("spend_nonce", time.Now())
	return t.s.SpendNonce(ctx, key, nonce, until)
}
