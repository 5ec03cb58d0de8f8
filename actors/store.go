package actors

import (
	"context"
	"encoding/json"
	"time"

	"github.com/intentd/intentd"

	"github.com/intentd/intentd/policy"
)

// Prover makes the proof of a decided proposal. It is called on success and on a
// constraint failure; an error makes the outcome a failure of kind proof.
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
	Outcome  intentd.State
	// Failures are the evaluation's, with their MissingEvidence: a receipt states the
	// failure's kind from them, so they must come from Evaluate, not from a snapshot,
	// whose JSON does not keep that field.
	Failures []policy.Failure
	At       time.Time
}
