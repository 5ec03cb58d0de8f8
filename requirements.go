package intentd

import (
	"context"
	"encoding/json"

	"github.com/intentd/intentd/policy"
)

// Requirements is what the evidence about a solution must satisfy for an intent, before
// any is extracted: its policy partially evaluated on its parameters. It is the body of
// GET /intents/{id}/requirements, and what intentctl status and the MCP tool
// get_requirements show.
type Requirements struct {
	IntentID string `json:"intent_id"`
	PolicyID string `json:"policy_id"`
	// Constraints are the policy's constraints in order, each with what the intent's
	// parameters leave of it (policy.Residual).
	Constraints []policy.Residual `json:"constraints"`
	// Schema is a JSON Schema (draft 2020-12) of the evidence object: each field's
	// type, and what the constraints whose in_schema is true require of it.
	Schema json.RawMessage `json:"schema"`
}

// IntentRequirements reads intent id and its policy from e and partially evaluates
// the policy on the intent's parameters. It reads what GET /intents/{id} and GET
// /policies/{id} read, so it answers wherever they do, in a cluster too:
// KindNotFound with CodeIntentNotFound for an unknown intent, and with
// CodePolicyNotFound when the policy of a decided intent has since been deleted.
func IntentRequirements(ctx context.Context, e Engine, id string) (*Requirements, error) {
	raw, err := e.GetIntent(ctx, id)
	if err != nil {
		return nil, err
	}
	var ai AuthoredIntent
	if err := json.Unmarshal(raw, &ai); err != nil {
		return nil, Internal("read stored intent: %w", err)
	}
	in, err := DecodeIntent(ai.Intent)
	if err != nil {
		return nil, Internal("read stored intent: %w", err)
	}
	p, err := e.Policy(ctx, in.PolicyID)
	if err != nil {
		return nil, err
	}
	var attrs policy.Attrs
	if in.Attrs != nil {
		attrs = *in.Attrs
	}
	req := p.Requirements(attrs)
	return &Requirements{IntentID: in.ID, PolicyID: in.PolicyID, Constraints: req.Constraints, Schema: req.Schema}, nil
}
