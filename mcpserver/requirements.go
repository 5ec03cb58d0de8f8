package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd"
)

// get_requirements: what the evidence about a solution must satisfy for an intent,
// before the agent searches. get_intent gives the policy's text and the attrs, which
// an agent would otherwise have to put together itself; here the service does it,
// with the machine's own arithmetic, and says which constraints are already decided.

// ConstraintRequirement is one constraint of the intent's policy with the intent's
// parameters put in.
type ConstraintRequirement struct {
	Index      int    `json:"index" jsonschema:"the constraint's position in the policy, from 0"`
	PrettyExpr string `json:"pretty_expr" jsonschema:"the constraint as the policy writes it"`
	Optional   bool   `json:"optional,omitempty" jsonschema:"true for a constraint marked optional:, which holds when an optional parameter it reads is absent"`
	State      string `json:"state" jsonschema:"holds: met whatever the evidence; fails: no evidence can meet it (see reason); open: the evidence decides, as residual says"`
	Residual   string `json:"residual,omitempty" jsonschema:"the constraint with the intent's parameters put in and folded: what the evidence must satisfy, over evidence.* (and mandate.*, purchase.amount, decision.time)"`
	Reason     string `json:"reason,omitempty" jsonschema:"why the constraint fails whatever the evidence, or why an optional: constraint holds"`
	InSchema   bool   `json:"in_schema" jsonschema:"whether schema captures the constraint: evidence it accepts meets it"`
}

// RequirementsInfo is the output of get_requirements.
type RequirementsInfo struct {
	IntentID    string                  `json:"intent_id"`
	PolicyID    string                  `json:"policy_id"`
	Constraints []ConstraintRequirement `json:"constraints" jsonschema:"every constraint of the policy, in order, with the intent's parameters put in"`
	Schema      map[string]any          `json:"schema" jsonschema:"a JSON Schema (draft 2020-12) of the evidence object: each field's type, the fields required, and what the constraints whose in_schema is true require of each field"`
}

func (s *Server) addRequirementsTool(readOnly *mcp.ToolAnnotations) {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "get_requirements",
		Title: "What a solution's evidence must satisfy",
		Description: "Returns, for an intent, each constraint of its policy with the intent's parameters put in: holds (met " +
			"whatever the solution), fails (no solution can meet it, with the reason), or open with residual, what the " +
			"evidence about a solution must satisfy (for example evidence.size == \"M\" or evidence.price_cents + " +
			"evidence.shipping_cents <= 3000), and schema, a JSON Schema of the evidence. Call it after get_intent, " +
			"before searching: a candidate whose evidence breaks a residual will fail.",
		Annotations: readOnly,
	}, guarded(s, roleRead, s.getRequirements))
}

func (s *Server) getRequirements(ctx context.Context, in intentArgs) (*RequirementsInfo, error) {
	if err := checkID(in.IntentID); err != nil {
		return nil, err
	}
	req, err := s.b.Requirements(ctx, in.IntentID)
	if err != nil {
		return nil, err
	}
	out := &RequirementsInfo{IntentID: req.IntentID, PolicyID: req.PolicyID, Constraints: []ConstraintRequirement{}}
	for _, r := range req.Constraints {
		out.Constraints = append(out.Constraints, ConstraintRequirement{
			Index: r.Index, PrettyExpr: r.PrettyExpr, Optional: r.Optional, State: string(r.State),
			Residual: r.Residual, Reason: r.Reason, InSchema: r.InSchema,
		})
	}
	if err := json.Unmarshal(req.Schema, &out.Schema); err != nil {
		return nil, intentd.Internal("read the requirements' schema: %w", err)
	}
	return out, nil
}
