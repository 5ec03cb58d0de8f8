package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// A mandate actor owns the steps that change one mandate's record: taking a purchase,
// deciding one, revoking. It takes them one at a time, so that the check of the totals
// and the commit of a success are one step: of two purchases decided at once, the
// second is decided against the totals the first left.
//
// Every write is fenced on the record's revision (intentd.MandateStore). On one node
// the actor is the record's only writer and the fence never turns it away; in a
// cluster each member has its own actor of a mandate, and the fence is what serializes
// them: a step whose record another member wrote since it was read is taken again on
// the record read anew, so that the totals stay exact whichever members decide and
// whichever of them die.

// The messages of a mandate actor. Each is a request (registry.go) answered by a reply.
type (
	// mTake takes a purchase: the mandate lists its intent, which is then created.
	mTake struct {
		intentID string
		at       time.Time
	}
	// mDecide decides a purchase on its evidence, and commits a success.
	mDecide struct {
		intentID string
		p        *policy.Policy
		attrs    policy.Attrs
		evidence map[string]any
		evJSON   json.RawMessage
	}
	// mRelease takes back the success of a purchase whose receipt could not be made:
	// its intent ends in a failure of kind proof, which must cost the mandate nothing.
	mRelease struct{ intentID string }
	// mRevoke records the author's revocation.
	mRevoke struct {
		authored json.RawMessage
		at       time.Time
	}
)

// verdict is a purchase's decision under its mandate.
type verdict struct {
	failures  []policy.Failure
	before    mandateTotals
	at        time.Time
	amount    int64
	evidence  json.RawMessage // the evidence decided on: a success's as recorded
	amountErr error           // the amount could not be had: no decision
	digest    string          // the digest of the authored mandate
}

// mandateActor is the actor of one mandate on this member.
type mandateActor struct {
	e   *Engine
	id  string
	rec *mandateRecord // nil: not read
	rev uint64
}

func (a *mandateActor) Receive(ctx actor.Context) {
	defer guard(ctx, a.e.log.Error)
	req, ok := ctx.Message().(*request)
	if !ok {
		return
	}
	switch m := req.msg.(type) {
	case mTake:
		answer(ctx, a.step(func(r *mandateRecord) (bool, any, error) { return a.take(r, m) }))
	case mDecide:
		answer(ctx, a.step(func(r *mandateRecord) (bool, any, error) { return a.decide(r, m) }))
	case mRelease:
		answer(ctx, a.step(func(r *mandateRecord) (bool, any, error) { return release(r, m.intentID) }))
	case mRevoke:
		answer(ctx, a.step(func(r *mandateRecord) (bool, any, error) {
			if r.Revoked != nil {
				return false, nil, nil
			}
			r.Revoked = &mandateRevocation{At: m.at, Authored: m.authored}
			return true, nil, nil
		}))
	}
}

// maxStaleSteps bounds how often one step is taken again because another member wrote
// the record first; each retry follows a write that succeeded, so the bound is met only
// when a mandate is written faster than this member can read it.
const maxStaleSteps = 64

// step applies fn to a copy of the record, read first when the actor holds none, and
// writes the copy when fn changed it, fenced on the revision read.
func (a *mandateActor) step(fn func(r *mandateRecord) (changed bool, value any, err error)) reply {
	ms := a.e.mandateStore
	if a.e.cfg.Cluster != nil {
		// Another member may have written the record since this actor read it; a step
		// that writes nothing (a failure) must be decided on the totals as they are.
		a.rec = nil
	}
	for range maxStaleSteps {
		if a.rec == nil {
			data, rev, err := ms.Mandate(a.e.ctx, a.id)
			if errors.Is(err, intentd.ErrNotFound) {
				return reply{err: mandateNotFound(a.id)}
			}
			if err != nil {
				return reply{err: storeFailed("read mandate: %w", err)}
			}
			rec, err := decodeMandateRecord(data)
			if err != nil {
				return reply{err: intentd.Internal("decode mandate: %w", err)}
			}
			a.rec, a.rev = rec, rev
		}
		next := a.rec.clone()
		changed, value, err := fn(next)
		if err != nil || !changed {
			return reply{value: value, err: err}
		}
		data, err := next.encode()
		if err != nil {
			return reply{err: intentd.Internal("encode mandate: %w", err)}
		}
		rev, err := ms.UpdateMandate(a.e.ctx, a.id, data, a.rev)
		if errors.Is(err, intentd.ErrStale) {
			a.rec = nil // another member wrote it: the step is taken again on its record
			continue
		}
		if err != nil {
			a.rec = nil // what the store holds is not known: read it again
			return reply{err: storeFailed("write mandate: %w", err)}
		}
		a.rec, a.rev = next, rev
		return reply{value: value}
	}
	return reply{err: intentd.Internal("write mandate: %w", fmt.Errorf("%s: the record kept changing under %d tries", a.id, maxStaleSteps))}
}

// take lists a purchase's intent, unless the mandate takes no purchase. A purchase it
// lists already (a try again after a lost answer) is taken again, whatever the state.
func (a *mandateActor) take(r *mandateRecord, m mTake) (bool, any, error) {
	if r.purchase(m.intentID) != nil {
		return false, nil, nil
	}
	p, err := a.e.mandatePolicy(a.e.ctx, r.PolicyID)
	if err != nil {
		return false, nil, err
	}
	parts, err := r.parts()
	if err != nil {
		return false, nil, intentd.Internal("read mandate: %w", err)
	}
	if st := r.state(p, parts.attrs, m.at); st != intentd.MandateActive {
		return false, nil, intentd.Errorf(intentd.KindConflict, intentd.CodeForMandateState(st),
			"mandate %s is %s: it takes no purchase", r.ID, st)
	}
	r.Purchases = append(r.Purchases, mandatePurchase{IntentID: m.intentID, TakenAt: m.at})
	return true, nil, nil
}

// decide decides a purchase against the totals, and adds a success to them. A purchase
// decided before (a proof cut short by a crash, run again) gets its recorded decision.
func (a *mandateActor) decide(r *mandateRecord, m mDecide) (bool, any, error) {
	pu := r.purchase(m.intentID)
	if pu == nil {
		return false, nil, intentd.Internal("decide purchase: %w", fmt.Errorf("mandate %s did not take intent %s", r.ID, m.intentID))
	}
	digest, err := crypto.Digest(r.Authored)
	if err != nil {
		return false, nil, intentd.Internal("digest of the mandate: %w", err)
	}
	if s := pu.Success; s != nil {
		return false, &verdict{before: s.Before, at: s.At, amount: s.Amount, evidence: s.Evidence, digest: digest}, nil
	}
	at := a.e.cfg.Now()
	before := r.totals(m.p, at)
	v := &verdict{before: before, at: at, evidence: m.evJSON, digest: digest}
	v.failures = m.p.EvaluateIn(m.attrs, m.evidence, before.context(at))
	amount, _, err := m.p.Amount(m.attrs, m.evidence)
	if len(v.failures) > 0 {
		return false, v, nil
	}
	if err == nil && amount > math.MaxInt64-r.Spent {
		err = fmt.Errorf("the mandate's total %d and this purchase's %d overflow", r.Spent, amount)
	}
	if err != nil {
		v.amountErr = err
		return false, v, nil
	}
	v.amount = amount
	pu.Success = &mandateDecision{At: at, Amount: amount, Before: before, Evidence: m.evJSON}
	r.Spent += amount
	r.Count++
	return true, v, nil
}

// release takes back a purchase's success.
func release(r *mandateRecord, intentID string) (bool, any, error) {
	pu := r.purchase(intentID)
	if pu == nil || pu.Success == nil {
		return false, nil, nil
	}
	r.Spent -= pu.Success.Amount
	r.Count--
	pu.Success = nil
	return true, nil, nil
}

func mandateNotFound(id string) *intentd.Error {
	return intentd.Errorf(intentd.KindNotFound, intentd.CodeMandateNotFound, "mandate %s not found", id)
}

// mandateActors are this member's live mandate actors. A mandate's actor lives while
// it is asked, and stops once idle for the engine's PassivateAfter; the next call
// starts another, which reads the record again. Two actors of one mandate may overlap
// for a moment (a call that timed out while its actor worked on): the store's fence
// keeps them exact, as it does the members of a cluster.
type mandateActors struct {
	mu   sync.Mutex
	live map[string]*mandateRef
}

type mandateRef struct {
	pid   *actor.PID
	calls int
	last  time.Time
}

// mandateCall asks mandate id's actor msg and waits for its answer.
func (e *Engine) mandateCall(ctx context.Context, id string, msg any) (any, error) {
	if e.closed() {
		return nil, intentd.Errorf(intentd.KindBusy, intentd.CodeShuttingDown, "the service is shutting down")
	}
	m := &e.mandates
	m.mu.Lock()
	ref := m.live[id]
	if ref == nil {
		props := actor.PropsFromProducer(func() actor.Actor { return &mandateActor{e: e, id: id} })
		ref = &mandateRef{pid: e.system.Root.Spawn(props)}
		if m.live == nil {
			m.live = make(map[string]*mandateRef)
		}
		m.live[id] = ref
	}
	ref.calls++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		ref.calls--
		ref.last = time.Now()
		m.mu.Unlock()
	}()
	req := &request{msg: msg, reply: make(chan reply, 1)}
	e.system.Root.Send(ref.pid, req)
	timeout := time.NewTimer(callTimeout)
	defer timeout.Stop()
	select {
	case rep := <-req.reply:
		return rep.value, rep.err
	case <-timeout.C:
		return nil, intentd.Internal("ask mandate actor: %w", fmt.Errorf("%s: no answer in %v", id, callTimeout))
	case <-ctx.Done():
		return nil, intentd.Canceled(ctx.Err())
	}
}

// passivateMandates stops the mandate actors idle for longer than idle.
func (e *Engine) passivateMandates(idle time.Duration) {
	m := &e.mandates
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, ref := range m.live {
		if ref.calls == 0 && time.Since(ref.last) > idle {
			delete(m.live, id)
			e.system.Root.Stop(ref.pid)
		}
	}
}

// binding is what the receipt of a purchase of mandate id binds of its verdict.
func (v *verdict) binding(id string) *crypto.ReceiptMandate {
	return &crypto.ReceiptMandate{ID: id, AuthoredMandateDigest: v.digest,
		Spent: v.before.Spent, Purchases: v.before.Purchases, PeriodSpent: v.before.PeriodSpent,
		PeriodPurchases: v.before.PeriodPurchases, Amount: v.amount, DecidedAt: v.at.UTC()}
}
