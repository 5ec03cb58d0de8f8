package intentd

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// Engine is the service behind the API: what the HTTP layer calls. actors.Engine is the
// engine of one node; every implementation answers with *Error values, whose kind
// picks the status, and honours ctx: a caller that gives up stops waiting, while what
// was durably done stays done.
type Engine interface {
	// PutPolicy compiles source and stores the policy; it returns the policy's id.
	// KindInvalid (CodePolicyInvalid) when it does not compile.
	PutPolicy(ctx context.Context, source string) (string, error)
	// Policy returns a stored policy: KindNotFound (CodePolicyNotFound).
	Policy(ctx context.Context, id string) (*policy.Policy, error)
	// DeletePolicy deletes a policy: KindNotFound, or KindConflict (CodePolicyInUse)
	// while an open or processing intent names it.
	DeletePolicy(ctx context.Context, id string) error
	// SubmitIntent verifies and stores a new intent; on success it is open, durably.
	SubmitIntent(ctx context.Context, s Submission) error
	// GetIntent returns a stored intent with its authorship, as the JSON of an
	// AuthoredIntent. KindNotFound (CodeIntentNotFound).
	GetIntent(ctx context.Context, id string) (json.RawMessage, error)
	// Status returns an intent's status. KindNotFound (CodeIntentNotFound).
	Status(ctx context.Context, id string) (Status, error)
	// Propose submits the one proposal of an open intent; on success the intent is
	// processing, durably, and proving follows. KindBusy (CodeCapacityExceeded) when
	// proving is at capacity. by is the agent's signature of the request, verified by
	// the caller, or nil: an intent whose policy delegates to agents takes only a
	// proposal signed by a key it lists (KindUnauthorized without one, KindForbidden
	// with another); a signature's nonce is spent, service-wide, before the intent is
	// asked (KindUnauthorized, CodeAgentSignatureReplayed, when it was spent before).
	Propose(ctx context.Context, id string, p Proposal, by *AgentSignature) error
	// Preview decides what a proposal of p would decide for an open intent, without
	// making it: nothing is stored, no event is sent, no receipt is signed, and the
	// intent stays open with its one proposal unspent. KindNotFound
	// (CodeIntentNotFound); KindConflict (CodeProposalExists, CodeIntentExpired) when
	// a proposal could not be made either; KindBusy (CodeCapacityExceeded) when the
	// previews' share of proving is full; KindTooMany (CodePreviewLimit) past the
	// previews one intent may have.
	Preview(ctx context.Context, id string, p Proposal) (Preview, error)
	// Proof returns the proof bundle of a decided intent: KindNotFound with
	// CodeIntentNotFound, CodeProofNotReady or CodeNoProof.
	Proof(ctx context.Context, id string) (*ProofBundle, error)
	// Subscribe starts a subscription to the events after the id from (0: from the
	// oldest retained). KindBusy when the subscribers are at their limit.
	Subscribe(ctx context.Context, from uint64, f Filter) (Subscription, error)
}

// SubscribeLive, given to Engine.Subscribe as the starting id, replays nothing: the
// subscription starts with the next event published. A caller waiting for one intent's
// outcome reads its status after subscribing, and so misses nothing, without the
// replay of every retained event a start from 0 would cost.
const SubscribeLive = ^uint64(0)

// Subscription is one reader of the event stream: the retained events after its
// starting id, then live ones, with no gap and no duplicate.
type Subscription interface {
	// Next returns the next event. It ends with ErrSubscriberTooSlow when the reader
	// fell behind, ErrEngineClosed when the engine closes, or the context's error.
	Next(ctx context.Context) (Event, error)
	// Pending reports whether Next has an event without waiting, so that a writer can
	// batch its flushes.
	Pending() bool
	// Filling returns a channel that is closed, or receives once, when the events
	// waiting, from the point the reader has reached, fill half of what the
	// subscription may fall behind, so that a writer gathering events into fewer
	// writes goes before the reader is cut off. Ask for it again after reading on; nil
	// when nothing limits the subscription.
	Filling() <-chan struct{}
	// Truncated reports whether events after the starting id were no longer retained,
	// so that the stream starts at the oldest retained one.
	Truncated() bool
	// Close ends the subscription.
	Close()
}

// ErrSubscriberTooSlow ends a subscription whose reader fell a whole buffer behind; the
// reader resumes from the last id it saw and loses nothing.
var ErrSubscriberTooSlow = errors.New("subscriber fell too far behind")

// ErrEngineClosed ends a subscription when the engine closes.
var ErrEngineClosed = errors.New("engine closed")

// Submission is an intent as submitted, decoded once where it arrived: the intent, its
// canonical form (JCS, RFC 8785: the bytes its authorship signs and the form stored)
// and its authorship, not yet verified.
type Submission struct {
	Intent     Intent
	Canonical  []byte
	Authorship crypto.Authorship
}

// NewSubmission makes the submission of a decoded intent: raw is the intent's JSON as
// received, which is canonicalized. An attribute JCS cannot write exactly is refused.
func NewSubmission(in Intent, raw []byte, a crypto.Authorship) (Submission, error) {
	if err := checkExactInts(in.Attrs, "intent", CodeInvalidIntent); err != nil {
		return Submission{}, err
	}
	canon, err := crypto.Canonicalize(raw)
	if err != nil {
		return Submission{}, Errorf(KindUnprocessable, CodeInvalidIntent, "intent: cannot be canonicalized: %v", err)
	}
	return Submission{Intent: in, Canonical: canon, Authorship: a}, nil
}

// ProofBundle is everything needed to check a receipt offline: the body of
// GET /intents/{id}/proof. The receipt binds the other parts by their digests and the
// policy by its id; the proof package checks them all.
type ProofBundle struct {
	// Receipt is the signed receipt, with the public key that made it.
	Receipt crypto.SignedReceipt `json:"receipt"`
	// AuthoredIntent is the AuthoredIntent as stored: {"intent": ..., "authorship": ...}.
	AuthoredIntent json.RawMessage `json:"authored_intent"`
	// Proposal is the proposal the evidence was extracted for.
	Proposal Proposal `json:"proposal"`
	// Evidence is the evidence the policy was evaluated on.
	Evidence json.RawMessage `json:"evidence"`
	// PolicyBytecode is the policy's bytecode (standard Base64 with padding in JSON);
	// its SHA-256 in Base58 is the policy id.
	PolicyBytecode []byte `json:"policy_bytecode"`
	// Log, when the server keeps a transparency log, shows the outcome is in it: the
	// leaf, its inclusion proof and the signed checkpoint. Absent without a log, and
	// for the moment between an outcome and its leaf (normally under a second).
	Log *LogInclusion `json:"log,omitempty"`
	// LogWitnesses, when the server's log has witnesses and Log is there, says whether
	// Log's checkpoint meets their quorum. Absent otherwise.
	LogWitnesses *LogWitnessing `json:"log_witnesses,omitempty"`
	// Agent, when an agent signed the proposal (a version 3 receipt), is what it
	// signed: the receipt binds the agent's key and the digest of the signature base.
	Agent *ProofAgent `json:"agent,omitempty"`
	// AuthoredMandate, for a purchase under a mandate (a version 4 receipt), is the
	// authored mandate as GET /mandates/{id} answers it: the receipt binds its digest,
	// and the intent's policy and attrs are its.
	AuthoredMandate json.RawMessage `json:"authored_mandate,omitempty"`
}

// ProofAgent is what an agent signed when it made a proposal: the RFC 9421 signature
// base, which names the request's method, authority and path and the body's sha-256
// as content-digest, and the body as sent (standard Base64 in JSON), which decodes to
// the bundle's proposal. proof.Verify checks the agent's signature over the base, and
// that the base covers this body, sent to this intent's proposal.
type ProofAgent struct {
	SignatureBase string `json:"signature_base"`
	Body          []byte `json:"body"`
}

// Observer is told what an engine does, for metrics. Every field is optional; each is
// called on the goroutine that did the work, after the work, so it must return quickly
// and must not call back into the engine.
type Observer struct {
	// Transition is called once an intent's new state is durable: open when it is
	// created, processing when its proposal is accepted, and success, failure (with
	// the failure kind) or expired when it ends.
	Transition func(to State, kind FailureKind)
	// Extraction is called after each evidence extraction with how long it took and
	// its error (nil on success).
	Extraction func(d time.Duration, err error)
	// Proving is called after each proposal is proved (extraction, evaluation and
	// receipt) with how long it took and the state it decided. Work cut short by a
	// close is not reported: it is proved again on the next start.
	Proving func(d time.Duration, state State, kind FailureKind)
	// StoreCall is called after each call of the engine's store with the operation's
	// name, whether it writes, and how long it took (a write until it is durable).
	StoreCall func(op string, write bool, d time.Duration)
	// Published is called once for each event the store made durable, as it goes to
	// the subscribers.
	Published func()
	// RemoteCall is called, in a cluster, after each command sent to the member that
	// owns an intent, with how long it took (all its tries) and its error: nil when
	// the member answered, whatever the answer.
	RemoteCall func(d time.Duration, err error)
}

// maxExactInt is the largest integer an IEEE double holds exactly. JCS writes numbers as
// doubles, so an attribute beyond it would be signed and stored as another value than
// the one checked; such intents are refused.
const maxExactInt = 1<<53 - 1

func checkExactInts(attrs *policy.Attrs, what, code string) error {
	if attrs == nil {
		return nil
	}
	for name, v := range *attrs {
		ints := v.Ints()
		if v.Type() == policy.TypeInt {
			ints = []int64{v.Int()}
		}
		for _, n := range ints {
			if n > maxExactInt || n < -maxExactInt {
				return Errorf(KindUnprocessable, code,
					"%s.attrs.fields.%s: %d is beyond ±(2^53-1), which JCS (RFC 8785) cannot sign exactly", what, name, n)
			}
		}
	}
	return nil
}

// LimiterStats are the proving limiter's counts.
type LimiterStats struct {
	Running, Queued, Reserved int
	// Previews is the number of previews running, beside the proposals.
	Previews int
}
