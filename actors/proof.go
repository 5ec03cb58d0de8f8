package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

// ReceiptProver is the Prover that signs a receipt (crypto.Receipt) with the service's
// key. Prove returns the JSON of the crypto.SignedReceipt.
type ReceiptProver struct {
	Key *crypto.SigningKey
}

// Prove makes the signed receipt of a decided proposal. It fails, making the outcome a
// failure of kind proof, when a part cannot be digested without ambiguity (a number
// beyond ±(2^53-1), which JCS would round) or when the outcome is not one a receipt can
// state.
func (p ReceiptProver) Prove(ctx context.Context, in ProofInput) (json.RawMessage, error) {
	if p.Key == nil {
		return nil, errors.New("receipt prover has no signing key")
	}
	r, err := newReceipt(in)
	if err != nil {
		return nil, err
	}
	return crypto.SignReceiptJSON(p.Key, r)
}

// newReceipt is the unsigned receipt of in.
func newReceipt(in ProofInput) (crypto.Receipt, error) {
	proposal, err := json.Marshal(in.Proposal)
	if err != nil {
		return crypto.Receipt{}, fmt.Errorf("encode proposal: %w", err)
	}
	r := crypto.Receipt{
		Version:  crypto.ReceiptVersion,
		IntentID: in.IntentID,
		PolicyID: in.PolicyID,
		Outcome:  string(in.Outcome),
		IssuedAt: in.At,
	}
	r.EvidenceDigest = in.EvidenceDigest
	for _, d := range []struct {
		name string
		json []byte
		to   *string
	}{
		{"authored intent", in.Authored, &r.AuthoredIntentDigest},
		{"proposal", proposal, &r.ProposalDigest},
		{"evidence", in.Evidence, &r.EvidenceDigest},
	} {
		if *d.to != "" {
			continue // made already
		}
		if *d.to, err = crypto.Digest(d.json); err != nil {
			return crypto.Receipt{}, fmt.Errorf("digest of the %s: %w", d.name, err)
		}
	}
	r.ConstraintFailures = make([]crypto.ConstraintFailure, len(in.Failures))
	for i, f := range in.Failures {
		r.ConstraintFailures[i] = crypto.ConstraintFailure{Index: f.Index, PrettyExpr: f.PrettyExpr, Reason: f.Reason}
	}
	if in.Outcome == intentd.StateFailure {
		kind, missing := intentd.ClassifyFailures(in.Failures)
		r.FailureKind, r.EvidenceMissing = string(kind), missing
	}
	if a := in.Agent; a != nil {
		r.Version = crypto.ReceiptVersionAgent
		r.Agent = crypto.NewReceiptAgent(a.Key, a.Tag, a.Base, a.Signature)
	}
	if m := in.Mandate; m != nil {
		r.Version = crypto.ReceiptVersionMandate
		bound := *m
		if in.Outcome != intentd.StateSuccess {
			bound.Amount = 0 // a failure adds nothing
		}
		r.Mandate = &bound
	}
	return r, nil
}

// Proof returns the proof bundle of an intent. Errors, all of kind KindNotFound but the
// internal ones: CodeIntentNotFound when there is no such intent; CodeProofNotReady while
// it is open or processing; CodeNoProof when it ended without a receipt (expired, failed
// in extraction or in proving, or decided while the service ran without a signing key).
// A failure of kind evidence has its receipt, as one of kind constraints: both are
// decisions of the policy on extracted evidence.
// An open intent past its deadline is expired first, as in Status.
func (e *Engine) Proof(ctx context.Context, id string) (*intentd.ProofBundle, error) {
	snap, err := e.current(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case !snap.State.Terminal():
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeProofNotReady, "intent %s is %s: its proof is made when it reaches success or failure", snap.ID, snap.State)
	case snap.State == intentd.StateExpired:
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeNoProof, "intent %s expired without a proposal: there is nothing to prove", snap.ID)
	case snap.State == intentd.StateFailure && snap.FailureKind != intentd.FailureConstraints && snap.FailureKind != intentd.FailureEvidence:
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeNoProof, "intent %s failed in %s, before a decision: no receipt was made", snap.ID, snap.FailureKind)
	case len(snap.Receipt) == 0:
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeNoProof, "intent %s was decided while the service had no signing key: no receipt was made", snap.ID)
	}
	receipt, err := crypto.DecodeSignedReceipt(snap.Receipt)
	if err != nil {
		return nil, intentd.Internal("decode stored receipt: %w", fmt.Errorf("%s: %w", snap.ID, err))
	}
	// The bytecode outlives a deleted policy, so that its proofs stay checkable.
	bytecode, err := e.store.PolicyBytecode(ctx, snap.PolicyID)
	if err != nil {
		return nil, storeFailed("read policy bytecode: %w", fmt.Errorf("%s: %w", snap.PolicyID, err))
	}
	b := &intentd.ProofBundle{
		Receipt:        *receipt,
		AuthoredIntent: snap.Authored,
		Proposal:       *snap.Proposal,
		Evidence:       snap.Evidence,
		PolicyBytecode: bytecode,
	}
	if a := snap.Agent; a != nil && receipt.Receipt.Agent != nil {
		b.Agent = &intentd.ProofAgent{SignatureBase: string(a.Base), Body: a.Body}
	}
	if receipt.Receipt.Mandate != nil {
		rec, err := e.readMandate(ctx, snap.Mandate)
		if err != nil {
			return nil, err
		}
		b.AuthoredMandate = rec.Authored
	}
	return b, nil
}
