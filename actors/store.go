package actors

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// Prover makes the proof of a decided proposal. It is called on success and on a
// constraint failure; an error makes the outcome a failure of kind proof, and so does
// an answer that is not valid JSON.
type Prover interface {
	Prove(ctx context.Context, in ProofInput) (json.RawMessage, error)
}

// ProofInput is everything a decision rests on.
type ProofInput struct {
	IntentID string
	PolicyID string
	// Authored is the JSON of the AuthoredIntent as stored.
	Authored json.RawMessage
	Proposal intentd.Proposal
	// Evidence is the JSON of the evidence the policy was evaluated on.
	Evidence json.RawMessage
	// EvidenceDigest, when not empty, is crypto.Digest of Evidence, made already: a
	// purchase's mandate digests the evidence it decides on, and the receipt binds the
	// same digest.
	EvidenceDigest string
	Outcome        intentd.State
	// Failures are the evaluation's, with their MissingEvidence: a receipt states the
	// failure's kind from them, so they must come from Evaluate, not from a snapshot,
	// whose JSON does not keep that field.
	Failures []policy.Failure
	At       time.Time
	// Agent is the agent's signature of the proposal, nil for an unsigned one: the
	// receipt then binds the agent's key and the base it signed (version 3).
	Agent *intentd.AgentSignature
	// Mandate is what a purchase under a mandate was decided against, nil for an
	// intent of its own: the receipt then binds it (version 4).
	Mandate *crypto.ReceiptMandate
}

// storeFailed is the error a caller sees of a failed store call: the store's own when it
// says to retry later (a store on the network whose servers did not answer: a 503 with
// Retry-After), a 503 storage_full when the store refuses writes for want of space
// (nothing was written), else an internal error.
func storeFailed(format string, err error) *intentd.Error {
	var e *intentd.Error
	if errors.As(err, &e) && e.Kind == intentd.KindBusy {
		return e
	}
	if errors.Is(err, intentd.ErrStorageFull) {
		return &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStorageFull,
			Message: "the service's storage is full: writes are refused until space is freed, reads go on; retry later", Err: err}
	}
	return intentd.Internal(format, err)
}

// retryable reports whether a write that failed with err should be tried again by the
// engine itself: an outcome must be written, however long the store refuses it, and a
// store that is full, unreachable, or whose data was deleted or changed under it until
// an operator acts, says so with a busy error.
func retryable(err error) bool {
	switch intentd.ErrorCode(err) {
	case intentd.CodeStorageFull, intentd.CodeStoreUnavailable, intentd.CodeStoreMissing, intentd.CodeStoreChanged:
		return true
	}
	return intentd.ErrorKind(err) == intentd.KindInternal
}
