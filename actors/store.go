package actors

import (
	"context"
	"encoding/json"
	"time"

	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/policy"
)

// Store is the durable state the core needs. persistence.Store is the implementation on
// Pebble; a cluster mode would bring another. Every write returns once it is durable.
type Store interface {
	// PutPolicy stores a compiled policy; an id that exists is left as it is (created false).
	PutPolicy(id string, bytecode, source []byte) (created bool, err error)
	// Policy returns a policy's bytecode and source, or persistence.ErrNotFound.
	Policy(id string) (bytecode, source []byte, err error)
	// PolicyBytecode returns the bytecode of a policy that is or once was stored, for proofs.
	PolicyBytecode(id string) ([]byte, error)
	// DeletePolicy removes a policy: persistence.ErrNotFound, or persistence.ErrPolicyInUse
	// while an open or processing intent names it.
	DeletePolicy(id string) error
	// CreateIntent stores a new open intent with its deadline and its policy reference:
	// persistence.ErrExists for a taken id, persistence.ErrPolicyNotFound for a missing policy.
	CreateIntent(id, policyID string, snapshot []byte, expiresAt time.Time) error
	// Intent returns an intent's snapshot, or persistence.ErrNotFound.
	Intent(id string) ([]byte, error)
	// BeginProcessing writes an intent's processing snapshot and takes it out of the expiry index.
	BeginProcessing(id string, snapshot []byte, expiresAt time.Time) error
	// Finish writes a terminal snapshot with its event and returns the event's id.
	Finish(id, policyID string, snapshot []byte, expiresAt time.Time, event []byte) (uint64, error)
	// Processing lists the intents that are processing.
	Processing() ([]string, error)
	// DueExpiries lists up to limit open intents whose deadline is at or before now.
	DueExpiries(now time.Time, limit int) ([]string, error)
	// NextExpiry reports the earliest deadline of an open intent.
	NextExpiry() (time.Time, bool, error)
	// SetEventSink names the function told of each durable event, in id order.
	SetEventSink(func(persistence.Event))
	// Events calls fn for up to limit events after the given id, in order.
	Events(after uint64, limit int, fn func(persistence.Event) error) error
	// EventBounds reports the oldest retained event id (0 for none) and the last assigned.
	EventBounds() (first, last uint64, err error)
	// PruneEvents keeps the newest keep events and none older than olderThan.
	PruneEvents(keep uint64, olderThan time.Time) (int, error)
}

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
	Proposal Proposal
	// Evidence is the JSON of the evidence the policy was evaluated on.
	Evidence json.RawMessage
	Outcome  State
	Failures []policy.Failure
	At       time.Time
}
