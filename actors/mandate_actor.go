package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
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
	// mTake takes a purchase, whose intent is then created. It answers a *taken.
	mTake struct {
		intentID string
		at       time.Time
		by       *intentd.AgentSignature // the purchase's signature, nil for none
	}
	// mDecide decides a purchase on its evidence, and commits it: the mandate lists it,
	// and a success adds to the totals.
	mDecide struct {
		intentID string
		takenAt  time.Time // when its intent was created
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
	amountErr error // the amount could not be had: no decision
	// evidenceChanged: the purchase was counted as a success on other evidence than
	// this proof's (decide): no decision, and the success stays counted.
	evidenceChanged bool
	digest          string // the digest of the authored mandate
	evDigest        string // the digest of the evidence decided on
}

// taken is what a purchase needs of its mandate, once taken, to create its intent.
type taken struct {
	rec   *mandateRecord // the record as the take left it; not to be changed
	parts mandateParts
}

// mandateActor is the actor of one mandate on this member.
type mandateActor struct {
	e     *Engine
	id    string
	rec   *mandateRecord // nil: not read
	rev   uint64
	parts *mandateParts // the authored mandate's attrs, decoded once: they never change
	// pending are the steps asked since the batch began; flushing, whether the actor
	// has asked itself to run them.
	pending  []pendingStep
	flushing bool
}

// Receive gathers the requests that reach the actor while it works into one batch:
// each request joins the batch, and the first asks the actor itself to run it, which it
// does after every request already in its mailbox. The steps of a batch run in order on
// one copy of the record, each on what the ones before it left, and one write commits
// them all: decisions made at once share one write rather than queue for one each.
func (a *mandateActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *request:
		st, ok := a.stepOf(msg.msg)
		if !ok {
			msg.answer(reply{err: intentd.Internal("mandate actor: %w", fmt.Errorf("no step %T", msg.msg))})
			return
		}
		st.req = msg
		a.pending = append(a.pending, st)
		if !a.flushing {
			a.flushing = true
			ctx.Send(ctx.Self(), runBatch{})
		}
	case runBatch:
		a.flushing = false
		batch := a.pending
		a.pending = nil
		a.run(batch)
	}
}

// runBatch asks the actor to run the steps gathered so far.
type runBatch struct{}

// pendingStep is a request's step: fn changes the record it is given and says whether
// it did; sync, whether the write that commits it must be durable before it is
// answered.
type pendingStep struct {
	req  *request
	sync bool
	fn   func(r *mandateRecord) (changed bool, value any, err error)
}

// stepOf is the step of a request's message. A take and a decision are written
// without an fsync of their own: the purchase's intent is written, synced, after each
// (intentd.MandateStore.UpdateMandate).
func (a *mandateActor) stepOf(msg any) (pendingStep, bool) {
	switch m := msg.(type) {
	case mTake:
		return pendingStep{fn: func(r *mandateRecord) (bool, any, error) { return a.take(r, m) }}, true
	case mDecide:
		return pendingStep{fn: func(r *mandateRecord) (bool, any, error) { return a.decide(r, m) }}, true
	case mRelease:
		return pendingStep{sync: true, fn: func(r *mandateRecord) (bool, any, error) { return release(r, m.intentID) }}, true
	case mRevoke:
		return pendingStep{sync: true, fn: func(r *mandateRecord) (bool, any, error) {
			if r.Revoked != nil {
				return false, nil, nil
			}
			r.Revoked = &mandateRevocation{At: m.at, Authored: m.authored}
			return true, nil, nil
		}}, true
	}
	return pendingStep{}, false
}

// maxStaleSteps bounds how often one batch is run again because another member wrote
// the record first; each retry follows a write that succeeded, so the bound is met only
// when a mandate is written faster than this member can read it.
const maxStaleSteps = 64

// run runs a batch's steps on a copy of the record, read first when the actor holds
// none, writes the copy when a step changed it, fenced on the revision read, and
// answers each request. When the write fails, every step is answered with the
// failure. A panic answers
// every request of the batch before it goes on to the supervisor.
func (a *mandateActor) run(batch []pendingStep) {
	answered := false
	defer func() {
		if r := recover(); r != nil {
			a.e.log.Error("mandate actor panicked", "mandate_id", a.id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			a.rec = nil
			if !answered {
				for _, st := range batch {
					st.req.answer(reply{err: intentd.Internal("mandate actor: %w", fmt.Errorf("panic: %v", r))})
				}
			}
			panic(r)
		}
	}()
	replies := a.runSteps(batch)
	answered = true
	for i, st := range batch {
		st.req.answer(replies[i])
	}
}

// runSteps is run's work: the reply of each step.
func (a *mandateActor) runSteps(batch []pendingStep) []reply {
	ms := a.e.mandateStore
	replies := make([]reply, len(batch))
	all := func(err error) []reply {
		for i := range replies {
			replies[i] = reply{err: err}
		}
		return replies
	}
	if a.e.cfg.Cluster != nil {
		// Another member may have written the record since this actor read it; a step
		// that writes nothing (a refusal) must be decided on the record as it is.
		a.rec = nil
	}
	for range maxStaleSteps {
		if a.rec == nil {
			if err := a.load(); err != nil {
				return all(err)
			}
		}
		next := a.rec.clone()
		changed, sync := make([]bool, len(batch)), false
		for i, st := range batch {
			c, value, err := st.fn(next)
			replies[i], changed[i] = reply{value: value, err: err}, c
			sync = sync || c && st.sync
		}
		if !slices.Contains(changed, true) {
			return replies
		}
		data, err := next.encode()
		if err != nil {
			return all(intentd.Internal("encode mandate: %w", err))
		}
		rev, err := ms.UpdateMandate(a.e.ctx, a.id, data, a.rev, sync)
		if errors.Is(err, intentd.ErrStale) {
			a.rec = nil // another member wrote it: the batch is run again on its record
			continue
		}
		if err != nil {
			// What the store holds is not known: read it again. Every step's answer
			// goes, the refusals too: they rest on the steps before them, unwritten.
			a.rec = nil
			return all(storeFailed("write mandate: %w", err))
		}
		a.rec, a.rev = next, rev
		return replies
	}
	return all(intentd.Internal("write mandate: %w", fmt.Errorf("%s: the record kept changing under %d tries", a.id, maxStaleSteps)))
}

// load reads the record from the store.
func (a *mandateActor) load() error {
	rec, rev, err := a.e.loadMandate(a.e.ctx, a.id)
	if err != nil {
		return err
	}
	a.rec, a.rev = rec, rev
	return nil
}

// take takes a purchase, unless the mandate takes no purchase or its policy does not
// delegate to the purchase's signer; it writes nothing. The mandate lists a purchase
// once it is decided (decide): a purchase taken is an intent created and proposed to,
// both written, synced, before the purchase is answered, and its proposal is decided
// whatever comes, after a crash too. A purchase decided already (a try again after a
// lost answer) is taken again, whatever the state.
func (a *mandateActor) take(r *mandateRecord, m mTake) (bool, any, error) {
	parts, err := a.partsOf(r)
	if err != nil {
		return false, nil, err
	}
	if r.purchase(m.intentID) != nil {
		return false, &taken{rec: r, parts: parts}, nil
	}
	p, err := a.e.Policy(a.e.ctx, r.PolicyID)
	if intentd.ErrorCode(err) == intentd.CodePolicyNotFound {
		return false, nil, intentd.Errorf(intentd.KindInvalid, intentd.CodePolicyNotFound,
			"mandate %s names policy %s, which was deleted: it takes no purchase", r.ID, r.PolicyID)
	}
	if err != nil {
		return false, nil, err
	}
	if st := r.state(p, parts.attrs, m.at); st != intentd.MandateActive {
		// A purchase taken before, whose answer was lost, is sent again: it stands.
		if s, err := a.e.loadSnapshot(a.e.ctx, m.intentID); err == nil && s.Mandate == r.ID {
			return false, &taken{rec: r, parts: parts}, nil
		}
		return false, nil, intentd.Errorf(intentd.KindConflict, intentd.CodeForMandateState(st),
			"mandate %s is %s: it takes no purchase", r.ID, st)
	}
	if err := checkPurchaser(r, p, parts, m.by); err != nil {
		return false, nil, err
	}
	return false, &taken{rec: r, parts: parts}, nil
}

// partsOf is the authored mandate's attrs, decoded the first time.
func (a *mandateActor) partsOf(r *mandateRecord) (mandateParts, error) {
	if a.parts == nil {
		parts, err := r.parts()
		if err != nil {
			return mandateParts{}, intentd.Internal("read mandate: %w", err)
		}
		a.parts = &parts
	}
	return *a.parts, nil
}

// decide decides a purchase against the totals, and adds a success to them. A purchase
// decided before on the same evidence (a proof cut short by a crash, run again) gets
// its recorded decision. On other evidence (the source changed before the proof was
// made again) it gets none: the success stays counted and the verdict says the
// evidence changed, for the purchase to end in a failure of kind proof. Taking the
// success back instead could count nothing for a purchase that another member, still
// proving it on the first evidence, ends in success: a budget may be spent on a
// purchase that failed, never overspent.
func (a *mandateActor) decide(r *mandateRecord, m mDecide) (bool, any, error) {
	changed := false
	pu := r.purchase(m.intentID)
	if pu == nil {
		r.Purchases = append(r.Purchases, mandatePurchase{IntentID: m.intentID, TakenAt: m.takenAt})
		changed = true
	}
	parts, err := a.partsOf(r)
	if err != nil {
		return false, nil, err
	}
	digest := parts.digest
	evSum, err := crypto.DigestSum(m.evJSON)
	if err != nil {
		return false, nil, intentd.Internal("digest of the evidence: %w", err)
	}
	evDigest := crypto.EncodeBase58(evSum[:])
	if pu != nil && pu.Success != nil {
		s := pu.Success
		if s.EvidenceSum != evSum {
			return false, &verdict{evidenceChanged: true}, nil
		}
		return false, &verdict{before: s.Before, at: s.At, amount: s.Amount, digest: digest, evDigest: evDigest}, nil
	}
	v := r.evaluate(m.p, m.attrs, m.evidence, a.e.cfg.Now())
	v.digest, v.evDigest = digest, evDigest
	if len(v.failures) > 0 || v.amountErr != nil {
		return changed, v, nil
	}
	pu = r.purchase(m.intentID)
	pu.Success = &mandateDecision{At: v.at, Amount: v.amount, Before: v.before, EvidenceSum: evSum}
	r.Spent += v.amount
	r.Count++
	return true, v, nil
}

// evaluate decides a purchase on evidence ev against the record's totals at time at,
// counting nothing: the one evaluation of a purchase's decision and of its preview, so
// that a preview cannot decide otherwise. The amount is had on a success only: a
// failure adds nothing, whatever its amount would have been.
func (r *mandateRecord) evaluate(p *policy.Policy, attrs policy.Attrs, ev map[string]any, at time.Time) *verdict {
	before := r.totals(p, at)
	v := &verdict{before: before, at: at, failures: p.EvaluateIn(attrs, ev, before.context(at))}
	if len(v.failures) > 0 {
		return v
	}
	amount, _, err := p.Amount(attrs, ev)
	if err == nil && amount > math.MaxInt64-r.Spent {
		err = fmt.Errorf("the mandate's total %d and this purchase's %d overflow", r.Spent, amount)
	}
	v.amount, v.amountErr = amount, err
	if err != nil {
		v.amount = 0
	}
	return v
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
