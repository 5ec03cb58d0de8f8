package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// snapshotVersion is written into every snapshot; a snapshot of an unknown version is
// refused rather than misread. Version 1 was JSON, and is still read (encode.go).
const snapshotVersion = 2

// snapshot is the durable state of one intent: everything its actor needs to come back.
type snapshot struct {
	V         int             `json:"v"`
	ID        string          `json:"id"`
	PolicyID  string          `json:"policy_id"`
	Authored  json.RawMessage `json:"authored"`
	State     intentd.State   `json:"state"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	// Request is the id of the cluster request that wrote the snapshot's create or
	// proposal. A request that meets a member which dies is tried again at the next
	// owner, which finds its own write here and answers it as accepted, instead of
	// refusing the caller's one proposal as a second.
	Request     string              `json:"request,omitempty"`
	Proposal    *intentd.Proposal   `json:"proposal,omitempty"`
	ProposedAt  time.Time           `json:"proposed_at,omitzero"`
	Evidence    json.RawMessage     `json:"evidence,omitempty"`
	Reason      string              `json:"reason,omitempty"`
	FailureKind intentd.FailureKind `json:"failure_kind,omitempty"`
	Failures    []policy.Failure    `json:"failures,omitempty"`
	// EvidenceMissing is kept beside Failures because a Failure's own list of missing
	// evidence is not part of its JSON.
	EvidenceMissing []string        `json:"evidence_missing,omitempty"`
	Receipt         json.RawMessage `json:"receipt,omitempty"`
	FinishedAt      time.Time       `json:"finished_at,omitzero"`
	// Agent is the agent's signature of the proposal, nil for an unsigned one. It is
	// written with the proposal, so that the receipt binds it whichever member proves.
	Agent *intentd.AgentSignature `json:"-"`
	// Mandate is the id of the mandate the intent is a purchase of, "" for an intent
	// of its own: proving decides it against the mandate's totals (mandate.go).
	Mandate string `json:"-"`

	// attrs are the intent's attrs when a check before proving decoded them, nil
	// otherwise: proving decodes them from Authored then.
	attrs *policy.Attrs
	// intentLen is the length of the intent in Authored where joinAuthored wrote it,
	// 0 when Authored was read from JSON: the snapshot's encoding and each proposal
	// take the intent out of it, and finding its end cost a search of the bytes.
	intentLen int
}

// clone is a copy a caller may keep while the actor moves on.
func (s *snapshot) clone() *snapshot {
	c := *s
	return &c
}

func (s *snapshot) status() intentd.Status {
	return intentd.Status{
		State:       s.State,
		IntentID:    s.ID,
		Proposal:    s.Proposal,
		Evidence:    s.Evidence,
		Reason:      s.Reason,
		FailureKind: s.FailureKind,
		Failures:    s.Failures,

		EvidenceMissing: s.EvidenceMissing,
		Agent:           agentOf(s.Agent),
		MandateID:       s.Mandate,
	}
}

// agentOf is the agent of a signed proposal as a status names it, nil for none.
func agentOf(by *intentd.AgentSignature) *intentd.Agent {
	if by == nil {
		return nil
	}
	return &intentd.Agent{Key: by.Key, Tag: by.Tag}
}

// The messages of an intent actor. Each is a request: the actor answers with a reply.
type (
	create  struct{ snap *snapshot }
	propose struct {
		proposal intentd.Proposal
		agent    *intentd.AgentSignature // the agent's signature of the proposal, nil for none
		request  string                  // the cluster request's id; "" for one made on this member
		reread   bool                    // the intent was read again after a stale write
		purchase bool                    // a purchase's proposal, made after its mandate took it (mandate.go)
	}
	expire struct{}
	resume struct{}
	proved struct{ outcome outcome }
)

// isCommand reports whether msg is one of the intent's messages, not protoactor's own.
func isCommand(msg any) bool {
	_, isProved := msg.(proved)
	return isProved || crosses(msg)
}

// reply is an intent actor's answer: a value or an error.
type reply struct {
	value any
	err   error
}

// intentActor owns one intent's state machine (spec part 3). It is the only writer of
// the intent's snapshot and writes every transition before it answers.
type intentActor struct {
	e       *Engine
	id      string
	loaded  bool      // snap has been read from the store
	proving bool      // this actor started the proof of its proposal
	snap    *snapshot // nil: no intent of this id is stored
}

func (a *intentActor) Receive(ctx actor.Context) {
	defer guard(ctx, a.e.log.Error)
	msg := ctx.Message()
	var parent *trace.SpanContext
	if req, ok := msg.(*request); ok {
		msg, parent = req.msg, req.trace
	}
	switch msg.(type) {
	case *actor.Started:
		// Started also follows a restart after a panic: the state comes back from the
		// store, which holds every transition ever acknowledged, on the next message.
		a.loaded, a.snap = false, nil
		return
	case create:
		// A create needs no read first: the store refuses a taken id itself, and most
		// actors are spawned for a create of an id that is not taken.
	default:
		// In a cluster any member writes an intent's create (SubmitIntent), so an
		// intent this actor found missing may have been stored since: a command reads
		// again.
		if !a.loaded || (a.snap == nil && a.e.cfg.Cluster != nil && isCommand(msg)) {
			read := a.e.store.Intent
			if _, ok := msg.(propose); ok && a.e.nearby != nil {
				// A proposal writes against what it read, and reads again from the
				// store's leader when that write is refused (propose): a replica
				// behind it costs a read more, never a wrong answer.
				read = a.e.nearby
			}
			if err := a.loadWith(read); err != nil {
				answer(ctx, reply{err: err})
				return
			}
		}
	}
	var name string
	switch msg.(type) {
	case create:
		name = spanCreate
	case propose:
		name = spanPropose
	case expire:
		name = spanExpire
	case resume:
		name = spanResume
	case proved:
		name = spanFinish
	default:
		return
	}
	// The span of the message is a child of its caller's: the HTTP request, the
	// command from another member, or the proof whose outcome this is.
	sctx, span := a.e.span(withParent(a.e.ctx, parent), name, a.id)
	var rep reply
	switch msg := msg.(type) {
	case create:
		rep = a.create(sctx, msg)
	case propose:
		rep = a.propose(sctx, msg)
	case expire:
		rep = a.expire(sctx)
	case resume:
		rep = a.resume(sctx)
	case proved:
		rep = a.finish(sctx, msg.outcome)
	}
	if span.IsRecording() {
		if s, ok := rep.value.(*snapshot); ok {
			span.SetAttributes(attrState.String(string(s.State)))
		}
	}
	endSpan(span, rep.err)
	answer(ctx, rep)
}

// load reads the intent's snapshot; nil when it is not stored. When the store cannot
// answer, the actor stays unloaded and says so: the next message reads again, rather
// than take the intent for missing. The snapshot of an intent created moments ago
// comes from memory, once (recent.go).
func (a *intentActor) load() error { return a.loadWith(a.e.store.Intent) }

// loadWith is load through the given read of the store: Intent, or a NearbyReader's.
func (a *intentActor) loadWith(read func(context.Context, string) ([]byte, error)) error {
	if s := a.e.recent.take(a.id); s != nil {
		a.snap, a.loaded = s, true
		return nil
	}
	a.snap, a.loaded = nil, false
	data, err := read(a.e.ctx, a.id)
	if errors.Is(err, intentd.ErrNotFound) {
		a.loaded = true
		return nil
	}
	if err != nil {
		return storeFailed("read snapshot: %w", fmt.Errorf("%s: %w", a.id, err))
	}
	s, err := decodeSnapshot(data)
	if err != nil {
		// A record that does not decode is a defect, not a passing fault: the
		// supervisor's restart and the panic's log say so.
		panic(fmt.Sprintf("intent %s: %v", a.id, err))
	}
	a.snap, a.loaded = s, true
	return nil
}

func (a *intentActor) create(ctx context.Context, m create) reply {
	if a.snap != nil && m.snap.Request != "" && a.snap.Request == m.snap.Request {
		return reply{} // this request's own create, written by a try before
	}
	if a.snap != nil {
		return reply{err: intentd.Errorf(intentd.KindConflict, intentd.CodeIntentExists, "intent %s already exists", a.id)}
	}
	written, err := a.e.storeCreate(ctx, a.id, m.snap, func() (*snapshot, error) {
		err := a.load() // what is there; the next message reads again if this read fails
		return a.snap, err
	})
	if written {
		a.snap, a.loaded = m.snap, true
	}
	return reply{err: err}
}

// storeCreate writes the snapshot of a new intent and answers as a create does,
// reporting whether it wrote it. When the id turns out to be taken, or the policy
// missing, stored reads what the store holds under the id: a retried cluster request
// finds its own create there, and a taken id is reported as taken rather than blamed
// on the policy.
func (e *Engine) storeCreate(ctx context.Context, id string, snap *snapshot, stored func() (*snapshot, error)) (written bool, err error) {
	data, err := snap.encode()
	if err != nil {
		return false, intentd.Internal("encode snapshot: %w", err)
	}
	sctx, span := e.span(ctx, spanStoreCreate, id)
	err = e.store.CreateIntent(sctx, id, snap.PolicyID, data, snap.ExpiresAt)
	endStoreSpan(span, err)
	switch {
	case errors.Is(err, intentd.ErrExists):
		there, _ := stored()
		if there != nil && snap.Request != "" && there.Request == snap.Request {
			return false, nil
		}
		return false, intentd.Errorf(intentd.KindConflict, intentd.CodeIntentExists, "intent %s already exists", id)
	case errors.Is(err, intentd.ErrPolicyNotFound):
		there, err := stored()
		if err != nil {
			return false, err
		}
		if there != nil {
			return false, intentd.Errorf(intentd.KindConflict, intentd.CodeIntentExists, "intent %s already exists", id)
		}
		return false, intentd.Errorf(intentd.KindInvalid, intentd.CodePolicyNotFound, "intent.policy_id: policy %s does not exist", snap.PolicyID)
	case err != nil:
		return false, storeFailed("store intent: %w", err)
	}
	e.scheduleExpiry(snap.ExpiresAt)
	e.obs.Transition(intentd.StateOpen, "")
	return true, nil
}

func (a *intentActor) propose(ctx context.Context, m propose) reply {
	if a.snap == nil {
		return reply{err: intentd.Errorf(intentd.KindNotFound, intentd.CodeIntentNotFound, "intent %s not found", a.id)}
	}
	if a.snap.Mandate != "" && !m.purchase {
		// Its mandate's checks (revoked, expired, exhausted; the agent's signature of
		// the purchase) are made by a purchase alone.
		return reply{err: intentd.Errorf(intentd.KindConflict, intentd.CodeMandatePurchase,
			"intent %s is a purchase under mandate %s: it takes its proposal through POST /mandates/%s/purchases", a.id, a.snap.Mandate, a.snap.Mandate)}
	}
	if a.snap.State == intentd.StateOpen && !a.e.cfg.Now().Before(a.snap.ExpiresAt) {
		if r := a.expire(ctx); r.err != nil {
			return r
		}
	}
	if a.snap.State != intentd.StateOpen && m.request != "" && a.snap.Request == m.request {
		return reply{} // this request's own proposal, taken by a try before
	}
	switch a.snap.State {
	case intentd.StateOpen:
	case intentd.StateExpired:
		return reply{err: intentd.Errorf(intentd.KindConflict, intentd.CodeIntentExpired, "intent %s has expired", a.id)}
	default:
		return reply{err: intentd.Errorf(intentd.KindConflict, intentd.CodeProposalExists, "intent %s already has a proposal", a.id)}
	}
	attrs, err := a.checkAgent(m.agent)
	if err != nil {
		return reply{err: err}
	}
	if !a.e.reserveSlot() {
		return reply{err: intentd.Errorf(intentd.KindBusy, intentd.CodeCapacityExceeded, "proving capacity is full; retry later")}
	}
	next := a.snap.clone()
	next.State = intentd.StateProcessing
	next.Proposal = &m.proposal
	next.Agent = m.agent
	if attrs != nil {
		next.attrs = attrs
	}
	next.Request = m.request
	next.ProposedAt = a.e.cfg.Now()
	data, err := next.encode()
	if err == nil {
		sctx, span := a.e.span(ctx, spanStoreProcessing, a.id)
		err = a.e.store.BeginProcessing(sctx, a.id, next.PolicyID, data, a.snap.ExpiresAt)
		endStoreSpan(span, err)
	}
	if err != nil {
		a.e.releaseReservation()
		if errors.Is(err, intentd.ErrStale) && !m.reread {
			// Another writer moved the intent on: answer from what it wrote.
			if err := a.load(); err != nil {
				return reply{err: err}
			}
			m.reread = true
			return a.propose(ctx, m)
		}
		return reply{err: storeFailed("store proposal: %w", err)}
	}
	a.snap = next
	a.e.obs.Transition(intentd.StateProcessing, "")
	a.proving = true
	a.e.startProving(spanOf(ctx), next.clone(), true)
	return reply{}
}

// resume restarts the proving of a proposal that was interrupted by a stop.
func (a *intentActor) resume(ctx context.Context) reply {
	// In a cluster every member asks the owners to resume when the members change, so
	// a proof this actor already runs is not started twice.
	if a.proving {
		return reply{}
	}
	// In a cluster this actor may have read the intent before another member took its
	// proposal, or read it processing while another member proved it, which may have
	// decided it since: the store knows better than the snapshot held. On one node this
	// actor is the intent's only writer, and a processing snapshot it holds is the
	// store's (at start-up, the one it was just spawned from).
	if a.e.cfg.Cluster != nil || a.snap == nil || a.snap.State != intentd.StateProcessing {
		if err := a.load(); err != nil {
			return reply{err: err}
		}
	}
	if a.snap != nil && a.snap.State == intentd.StateProcessing {
		a.proving = true
		a.e.startProving(spanOf(ctx), a.snap.clone(), false)
	}
	return reply{}
}

// expire ends an open intent whose deadline has passed; otherwise it changes nothing. It
// answers the snapshot as it then is.
func (a *intentActor) expire(ctx context.Context) reply {
	if a.snap == nil {
		return reply{err: intentd.Errorf(intentd.KindNotFound, intentd.CodeIntentNotFound, "intent %s not found", a.id)}
	}
	if a.snap.State != intentd.StateOpen || a.e.cfg.Now().Before(a.snap.ExpiresAt) {
		return reply{value: a.snap.clone()}
	}
	return a.finish(ctx, outcome{state: intentd.StateExpired})
}

// finish writes a terminal state and its event in one batch. A result for an intent
// that is no longer processing (a proof finished twice after a restart) is ignored.
func (a *intentActor) finish(ctx context.Context, o outcome) reply {
	if a.snap == nil {
		return reply{err: intentd.Errorf(intentd.KindNotFound, intentd.CodeIntentNotFound, "intent %s not found", a.id)}
	}
	want := intentd.StateProcessing
	if o.state == intentd.StateExpired {
		want = intentd.StateOpen
	}
	if a.snap.State != want {
		return reply{value: a.snap.clone()}
	}
	next := a.snap.clone()
	next.State = o.state
	next.Evidence = o.evidence
	next.Reason = o.reason
	next.FailureKind = o.kind
	next.Failures = o.failures
	next.EvidenceMissing = o.missing
	next.Receipt = o.receipt
	next.FinishedAt = a.e.cfg.Now()
	event, err := intentd.NewEvent(next.status())
	if err != nil {
		return reply{err: intentd.Internal("encode event: %w", err)}
	}
	event.Decided = &intentd.Decided{Receipt: next.Receipt}
	if len(next.Receipt) > 0 {
		// Computed once here, the log's leaf needs it on every member. A receipt
		// without a digest (not canonical JSON, which no prover here makes) is still
		// the outcome's: the log reads it back and says what is wrong with it.
		if d, err := crypto.Digest(next.Receipt); err == nil {
			event.Decided.ReceiptDigest = d
		}
	}
	data, err := next.encode()
	if err != nil {
		return reply{err: intentd.Internal("encode snapshot: %w", err)}
	}
	sctx, span := a.e.span(ctx, spanStoreFinish, a.id)
	_, err = a.e.store.Finish(sctx, a.id, next.PolicyID, data, a.snap.ExpiresAt, event)
	endStoreSpan(span, err)
	if err != nil {
		if errors.Is(err, intentd.ErrStale) {
			// Another writer finished the intent or moved it on; its record stands, and
			// this outcome is dropped rather than tried again for ever.
			if err := a.load(); err != nil {
				return reply{err: err} // a busy error: the outcome is delivered again
			}
			if a.snap == nil {
				return reply{err: intentd.Errorf(intentd.KindNotFound, intentd.CodeIntentNotFound, "intent %s not found", a.id)}
			}
			if a.snap.State != want {
				a.e.log.Warn("outcome dropped: the intent was written by another writer", "intent_id", a.id)
				return reply{value: a.snap.clone()}
			}
		}
		return reply{err: storeFailed("store outcome: %w", err)}
	}
	a.snap = next
	a.e.forgetPreviews(a.id)
	a.e.obs.Transition(next.State, next.FailureKind)
	return reply{value: next.clone()}
}

// outcome is what proving decided, or an expiry.
type outcome struct {
	state    intentd.State
	evidence json.RawMessage
	reason   string
	kind     intentd.FailureKind
	failures []policy.Failure
	missing  []string // the evidence fields the evaluation found absent or ill-typed
	receipt  json.RawMessage
	// mandate is what a purchase was decided against, which its receipt binds; nil
	// for an intent of its own. evidenceDigest is the evidence's digest when the
	// mandate made it.
	mandate        *crypto.ReceiptMandate
	evidenceDigest string
}

// failureReason is the reason of a failure the policy decided. A failure of kind
// evidence opens with the fields to look for, since that is what a person reviewing it
// needs first; the constraints follow in both kinds.
func failureReason(kind intentd.FailureKind, missing []string, failures []policy.Failure) string {
	reasons := make([]string, len(failures))
	for i, f := range failures {
		reasons[i] = fmt.Sprintf("#%d %s: %s", f.Index, f.PrettyExpr, f.Reason)
	}
	noun := "constraints"
	if len(failures) == 1 {
		noun = "constraint"
	}
	if kind == intentd.FailureEvidence {
		return fmt.Sprintf("the evidence lacks what the policy reads (%s): %d %s could not be checked: %s",
			strings.Join(missing, ", "), len(failures), noun, strings.Join(reasons, "; "))
	}
	return fmt.Sprintf("%d %s not satisfied: %s", len(failures), noun, strings.Join(reasons, "; "))
}
