package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/policy"
	"go.opentelemetry.io/otel/trace"
)

// limiter counts proving work. Places are reserved before a proposal is written, so a
// proposal that would not fit is refused before anything changes; bounded mailboxes
// would block the sender instead, and routers cannot refuse, hence a counter of our own.
// It is a lock rather than an actor: every proposal reserves a place, runs its job and
// frees the place, and as messages to an actor those were a future, a goroutine to wait
// on it and two more sends per proposal, for a few counts that a lock keeps in
// nanoseconds.
//
// Previews have a share of their own, maxPreviews places beside the proposals' max, and
// are refused while any proposal waits in the queue: a preview never takes a proposal's
// place nor runs ahead of one, so previews cannot starve proposals however many agents
// ask for them, and they stop as soon as proving is saturated.
type limiter struct {
	mu            sync.Mutex
	max, queueCap int
	running       int
	reserved      int
	queue         []func(release func())
	maxPreviews   int
	previews      int
}

func newLimiter(max, queueCap, maxPreviews int) *limiter {
	return &limiter{max: max, queueCap: queueCap, maxPreviews: maxPreviews}
}

// reserve asks for a place, running or queued.
func (l *limiter) reserve() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := l.running+len(l.queue)+l.reserved < l.max+l.queueCap
	if ok {
		l.reserved++
	}
	return ok
}

// unreserve gives back a place whose proposal was not written.
func (l *limiter) unreserve() {
	l.mu.Lock()
	l.reserved--
	l.mu.Unlock()
}

// run starts job in a reserved place, or queues it. A recovered job had no reservation:
// it was accepted before a restart and must run whatever the load. The job calls
// release when it no longer needs its place.
func (l *limiter) run(job func(release func()), reserved bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if reserved {
		l.reserved--
	}
	if l.running < l.max {
		l.start(job)
	} else {
		l.queue = append(l.queue, job)
	}
}

// done frees the running place of a finished job and starts the next one waiting.
func (l *limiter) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running--
	if len(l.queue) > 0 && l.running < l.max {
		job := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		l.start(job)
	}
}

// start runs job on a goroutine of its own; l.mu is held.
func (l *limiter) start(job func(release func())) {
	l.running++
	go func() {
		var once sync.Once
		release := func() { once.Do(l.done) }
		defer release()
		job(release)
	}()
}

// stats reports the counts, for metrics and tests.
func (l *limiter) stats() intentd.LimiterStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return intentd.LimiterStats{Running: l.running, Queued: len(l.queue), Reserved: l.reserved, Previews: l.previews}
}

// reservePreview asks for a preview's place; previewDone gives it back.
func (l *limiter) reservePreview() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := l.previews < l.maxPreviews && len(l.queue) == 0
	if ok {
		l.previews++
	}
	return ok
}

func (l *limiter) previewDone() {
	l.mu.Lock()
	l.previews--
	l.mu.Unlock()
}

func (e *Engine) reserveSlot() bool {
	return !e.closed() && e.limiter.reserve()
}

func (e *Engine) releaseReservation() {
	e.limiter.unreserve()
}

// ProvingStats reports the limiter's counts.
func (e *Engine) ProvingStats() (intentd.LimiterStats, error) {
	return e.limiter.stats(), nil
}

// startProving hands a processing intent to a proving worker, through the limiter.
// The proof's span is a child of parent, the span of the message that started it, and
// begins when a worker takes the job, so that its time is the proof's, not the queue's.
func (e *Engine) startProving(parent *trace.SpanContext, snap *snapshot, reserved bool) {
	if !e.track() {
		return // closing: the proposal is proved again on the next start
	}
	job := func(release func()) {
		defer e.wg.Done()
		ctx, span := e.span(withParent(e.ctx, parent), spanProve, snap.ID)
		defer span.End()
		o, abandoned := e.prove(ctx, snap)
		// The place is given back before the outcome is written, so that whoever sees
		// the outcome finds the place free.
		release()
		if span.IsRecording() && !abandoned {
			span.SetAttributes(attrState.String(string(o.state)))
			if o.kind != "" {
				span.SetAttributes(attrFailure.String(string(o.kind)))
			}
		}
		if !abandoned {
			e.deliver(ctx, snap.ID, o)
		}
	}
	e.limiter.run(job, reserved)
}

// deliver hands an outcome to its intent actor. The actor may have been passivated (it
// comes back from its snapshot) or restarted after a panic (the message is lost, so it is
// sent again); if the engine closes first, the proposal is proved again on the next start.
// ctx is the engine's, under the proof's span.
func (e *Engine) deliver(ctx context.Context, id string, o outcome) {
	backoff := 10 * time.Millisecond
	for {
		_, err := e.registry.call(ctx, id, proved{outcome: o})
		if err == nil {
			return
		}
		if !retryable(err) {
			return
		}
		e.log.Error("deliver outcome", "intent_id", id, "err", err)
		select {
		case <-e.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// prove extracts evidence, evaluates the policy and makes the proof. It runs on a
// worker, off the intent's mailbox. A panic becomes a failure of kind proof, so that no
// intent stays processing because of a bug. Work cut short by Close is abandoned: the
// proposal stays processing and is proved again on the next start, rather than failing
// for a reason that is not its own.
func (e *Engine) prove(ctx context.Context, snap *snapshot) (o outcome, abandoned bool) {
	defer func(start time.Time) {
		if !abandoned {
			e.obs.Proving(time.Since(start), o.state, o.kind)
		}
	}(time.Now())
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("proving panicked", "intent_id", snap.ID, "panic", fmt.Sprint(r))
			o = outcome{state: intentd.StateFailure, kind: intentd.FailureProof, reason: "internal error while proving"}
			abandoned = false
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ProvingTimeout)
	defer cancel()

	o, abandoned = e.decide(ctx, snap, *snap.Proposal, e.closed, true)
	if abandoned || o.kind == intentd.FailureProof || o.kind == intentd.FailureExtraction {
		return o, abandoned
	}
	failures := o.failures
	evJSON := o.evidence
	if e.cfg.Prover != nil {
		sctx, span := e.span(ctx, spanSign, snap.ID)
		receipt, err := e.cfg.Prover.Prove(sctx, ProofInput{
			IntentID: snap.ID, PolicyID: snap.PolicyID, Authored: snap.Authored, Proposal: *snap.Proposal,
			Evidence: evJSON, Outcome: o.state, Failures: failures, At: e.cfg.Now(), Agent: snap.Agent,
			Mandate: o.mandate, EvidenceDigest: o.evidenceDigest,
		})
		if err == nil && !json.Valid(receipt) {
			// The snapshot embeds the receipt as it is: one that is not JSON would make
			// the intent's record unreadable for good.
			err = fmt.Errorf("the prover answered %d bytes that are not JSON", len(receipt))
		}
		endSpan(span, err)
		if err != nil {
			if e.closed() {
				return outcome{}, true
			}
			e.log.Error("proof failed", "intent_id", snap.ID, "err", err)
			if o.mandate != nil && o.state == intentd.StateSuccess && !e.releasePurchase(snap) {
				return outcome{}, true // a failure of kind proof costs the mandate nothing
			}
			return outcome{state: intentd.StateFailure, kind: intentd.FailureProof, evidence: evJSON, failures: failures,
				missing: o.missing, reason: "the proof could not be made"}, false
		}
		o.receipt = receipt
	}
	return o, false
}

// decide extracts the evidence of proposal p for the intent of snap and evaluates the
// policy on it: the outcome a proposal gets, without its receipt. It is what proving
// and previews share, so that a preview cannot decide otherwise than the proposal it
// stands for. stopped says whether a failure is the engine's or the caller's giving
// up rather than the solution's; the outcome is then abandoned. commit: the decision of
// the intent's proposal, which a purchase's mandate counts; a preview's counts nothing.
func (e *Engine) decide(ctx context.Context, snap *snapshot, prop intentd.Proposal, stopped func() bool, commit bool) (o outcome, abandoned bool) {
	p, err := e.Policy(ctx, snap.PolicyID)
	if err != nil {
		return outcome{state: intentd.StateFailure, kind: intentd.FailureProof, reason: "the intent's policy cannot be read"}, stopped()
	}
	attrs, ok := snapAttrs(snap)
	if !ok {
		return outcome{state: intentd.StateFailure, kind: intentd.FailureProof, reason: "the stored intent cannot be read"}, false
	}

	req := evidence.Request{
		Solution:   prop.Solution,
		Attributes: make(map[string]evidence.Attribute),
		IntentID:   snap.ID,
		PolicyID:   snap.PolicyID,
		Extractor:  p.Extractor(),
	}
	for _, f := range p.EvidenceSchema() {
		req.Attributes[f.Name] = evidence.Attribute{Type: f.Type.WireName()}
	}
	extractStart := time.Now()
	sctx, span := e.span(ctx, spanExtract, snap.ID)
	ev, err := e.cfg.Extractor.Extract(sctx, req)
	endExtractSpan(span, err)
	e.obs.Extraction(time.Since(extractStart), err)
	if err != nil {
		if stopped() {
			return outcome{}, true
		}
		if ee, ok := errors.AsType[*evidence.Error](err); ok && ee.Kind == evidence.KindUnreachable && ee.Err != nil {
			// The reason says in words why the source could not be reached; the
			// transport's own message, with the addresses it names, is the operator's.
			e.log.Info("evidence source unreachable", "intent_id", snap.ID, "reason", err.Error(), "cause", ee.Err.Error())
		}
		return outcome{state: intentd.StateFailure, kind: intentd.FailureExtraction, reason: "evidence extraction failed: " + err.Error()}, false
	}
	evJSON, err := intentd.MarshalJSON(ev)
	if err != nil {
		return outcome{state: intentd.StateFailure, kind: intentd.FailureExtraction, reason: "the evidence is not JSON: " + err.Error()}, false
	}
	// The policy runs on the evidence as recorded, read back from its JSON, so that
	// anyone re-running it from the proof reaches the same decision whatever Go types
	// the extractor used.
	recorded, err := decodeEvidence(evJSON)
	if err != nil {
		return outcome{state: intentd.StateFailure, kind: intentd.FailureExtraction, reason: "the evidence is not a JSON object: " + err.Error()}, false
	}
	sctx, span = e.span(ctx, spanEvaluate, snap.ID)
	defer span.End()
	var failures []policy.Failure
	var bound *crypto.ReceiptMandate
	var evDigest string
	if snap.Mandate != "" {
		v, err := e.mandateVerdict(sctx, snap, p, attrs, recorded, evJSON, commit)
		if err != nil {
			if stopped() {
				return outcome{}, true
			}
			e.log.Error("decide under mandate", "mandate_id", snap.Mandate, "intent_id", snap.ID, "err", err)
			if commit && !e.releasePurchase(snap) { // the step may have counted it before its answer was lost
				return outcome{}, true
			}
			return outcome{state: intentd.StateFailure, kind: intentd.FailureProof, reason: "the purchase's mandate could not be asked"}, false
		}
		if v.evidenceChanged {
			return outcome{state: intentd.StateFailure, kind: intentd.FailureProof, evidence: evJSON,
				reason: "the evidence changed after the purchase was counted as a success; it stays counted, and the purchase is not made"}, false
		}
		if v.amountErr != nil {
			return outcome{state: intentd.StateFailure, kind: intentd.FailureExtraction, evidence: evJSON,
				reason: "the purchase's amount could not be had: " + v.amountErr.Error()}, false
		}
		failures, bound, evDigest = v.failures, v.binding(snap.Mandate), v.evDigest
	} else {
		failures = p.Evaluate(attrs, recorded)
	}
	o = outcome{state: intentd.StateSuccess, evidence: evJSON, failures: failures, mandate: bound, evidenceDigest: evDigest}
	if len(failures) > 0 {
		o.state = intentd.StateFailure
		o.kind, o.missing = intentd.ClassifyFailures(failures)
		o.reason = failureReason(o.kind, o.missing, failures)
	}
	return o, false
}

// decodeEvidence reads evidence JSON as the policy and a verifier read it: integers as
// json.Number.
func decodeEvidence(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		return nil, err
	}
	if ev == nil {
		return nil, fmt.Errorf("evidence is null")
	}
	return ev, nil
}

// snapAttrs are the intent's attrs: those a check decoded before, or else decoded from
// the stored intent. Only the attrs are needed: the authorship, verified when the
// intent was submitted, is not decoded again.
func snapAttrs(snap *snapshot) (policy.Attrs, bool) {
	if snap.attrs != nil {
		return *snap.attrs, true
	}
	intentJSON, _, ok := snap.authoredParts()
	if !ok {
		return nil, false
	}
	in, err := intentd.DecodeIntent(intentJSON)
	if err != nil {
		return nil, false
	}
	if in.Attrs == nil {
		return policy.Attrs{}, true
	}
	return *in.Attrs, true
}
