package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/policy"
)

// The tools of mandates (a person's one signed authorization for many purchases under
// a budget): get_mandate, what the mandate allows and what remains of it, and purchase,
// one purchase under it. A purchase is an intent of the mandate's policy and attrs with
// its one proposal made, so await_outcome and get_proof follow it as any intent.

// budgetParam is the one parameter name whose remainder get_mandate computes: the
// docs' mandate policy names its budget so. A policy's parameters carry no meaning the
// service knows, so a budget under any other name is the agent's to subtract.
const budgetParam = "budget_cents"

// The tools' inputs.
type (
	mandateArgs struct {
		MandateID string `json:"mandate_id" jsonschema:"the mandate's id, a UUID such as 3f2b8c1e-6a4d-4e2f-9b1a-7c5d3e9f0a12"`
	}
	purchaseArgs struct {
		MandateID string `json:"mandate_id" jsonschema:"the mandate's id, a UUID"`
		Solution  string `json:"solution" jsonschema:"the solution to buy, as the evidence layer knows it: a product URL or a variant id"`
		IntentID  string `json:"intent_id,omitempty" jsonschema:"the id of the purchase's intent, a fresh UUID of your own; when absent one is made and returned. The same mandate_id, intent_id and solution sent again are the same purchase, never a second one"`
	}
)

// MandateInfo is the output of get_mandate.
type MandateInfo struct {
	MandateID string         `json:"mandate_id"`
	Status    string         `json:"status" jsonschema:"active, exhausted, expired or revoked; only an active mandate takes a purchase, and one that is not never will again"`
	Attrs     map[string]any `json:"attrs" jsonschema:"the mandate's parameters of its policy, by name, which every purchase's intent carries: its limits (such as budget_cents, max_price_cents, max_purchases) and what each purchase must match"`
	Spent     int64          `json:"spent" jsonschema:"the sum of the amounts of the successful purchases, in the unit of the policy's amount (cents in the documented examples)"`
	Purchases int64          `json:"purchases" jsonschema:"the number of successful purchases"`
	// RemainingCents is nil unless the attrs have an int parameter named budget_cents.
	RemainingCents *int64      `json:"remaining_cents,omitempty" jsonschema:"budget_cents minus spent; present only when the attrs have an int parameter named exactly budget_cents"`
	Intents        []string    `json:"intents" jsonschema:"the intent ids of the purchases taken, successful or not, in the order taken: await_outcome and get_proof take each"`
	Period         *PeriodInfo `json:"period,omitempty" jsonschema:"the totals of the calendar period that holds now, when the policy names a period"`
	ExpiresAt      string      `json:"expires_at" jsonschema:"when the mandate stops taking purchases (RFC 3339)"`
	RevokedAt      string      `json:"revoked_at,omitempty" jsonschema:"when its author revoked the mandate (RFC 3339); absent unless revoked"`
	PolicyID       string      `json:"policy_id"`
	PolicyName     string      `json:"policy_name"`
	Policy         string      `json:"policy" jsonschema:"the policy in canonical text: its parameters, the evidence it reads, its amount and the constraints each purchase must satisfy, the mandate's totals among them"`
	Parameters     []FieldInfo `json:"parameters"`
	Evidence       []FieldInfo `json:"evidence" jsonschema:"the evidence fields the policy reads: what is extracted about a solution and checked"`
}

// PeriodInfo is a mandate's totals within the calendar period that holds now.
type PeriodInfo struct {
	Unit      string `json:"unit" jsonschema:"day, week or month"`
	Start     string `json:"start" jsonschema:"the period's start (RFC 3339, UTC)"`
	End       string `json:"end" jsonschema:"the period's end, the next one's start (RFC 3339, UTC)"`
	Spent     int64  `json:"spent"`
	Purchases int64  `json:"purchases"`
}

// Purchased is the output of purchase.
type Purchased struct {
	MandateID string `json:"mandate_id"`
	IntentID  string `json:"intent_id" jsonschema:"the purchase's intent, made for it when the call named none: follow it with await_outcome and get_proof, and send the same purchase again with it when an answer is lost"`
	Solution  string `json:"solution"`
	Status    string `json:"status" jsonschema:"processing: the purchase is accepted, on disk, and being decided"`
	Next      string `json:"next"`
}

// addMandateTools adds get_mandate and purchase; readOnly is the annotations of the
// read tools.
func (s *Server) addMandateTools(readOnly *mcp.ToolAnnotations) {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "get_mandate",
		Title: "Read a mandate: its limits and what remains",
		Description: "Returns a mandate, a person's signed authorization for many purchases under a budget: its status (active, " +
			"exhausted, expired or revoked; only active takes purchases), its attrs (the policy's parameters: its limits, such " +
			"as budget_cents and max_price_cents, and what each purchase must match), spent and purchases (the successful " +
			"purchases' amounts summed, and their number), the intents of the purchases taken, the totals of the current " +
			"period when the policy names one, expires_at, revoked_at, and the policy with the evidence it reads. " +
			"remaining_cents is budget_cents minus spent, computed ONLY for an int parameter named exactly budget_cents; for a " +
			"limit of any other name, subtract spent yourself. Call it before purchase.",
		Annotations: readOnly,
	}, guarded(s, roleRead, s.getMandate))
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "purchase",
		Title: "Buy a solution under a mandate (spends its budget)",
		Description: "WARNING: each purchase is final and cannot be undone. Creates an intent of the mandate's policy and attrs and " +
			"proposes the solution for it, in one step; it is decided like a proposal, against the policy and the mandate's " +
			"running totals (a purchase past the budget fails and spends nothing). Give intent_id, a fresh UUID of your own, " +
			"or let one be made: it is returned, in a refusal too, and the same mandate_id, intent_id and solution sent " +
			"again (after a lost answer, or capacity_exceeded) are the same purchase, never a second; a new intent_id is a new " +
			"purchase. Then call await_outcome with the intent_id. Codes mandate_revoked, mandate_expired, mandate_exhausted: " +
			"the mandate takes no purchase, now or later. Call get_mandate first for its limits and what remains.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, guarded(s, rolePropose, s.purchase))
}

// checkMandateID refuses an id that is not a UUID before any backend is asked, with
// the code a lookup of it would get.
func checkMandateID(id string) error {
	if _, ok := intentd.CanonicalIntentID(id); !ok {
		return intentd.Errorf(intentd.KindNotFound, intentd.CodeMandateNotFound, "mandate %q not found: not a UUID", clip(id))
	}
	return nil
}

// getMandate reads the mandate for its policy and attrs and its status for the totals:
// an agent needs both to tell whether a purchase fits before it spends one.
func (s *Server) getMandate(ctx context.Context, in mandateArgs) (*MandateInfo, error) {
	if err := checkMandateID(in.MandateID); err != nil {
		return nil, err
	}
	am, err := s.b.Mandate(ctx, in.MandateID)
	if err != nil {
		return nil, err
	}
	md, err := intentd.DecodeMandate(am.Mandate)
	if err != nil {
		return nil, intentd.Internal("read stored mandate: %w", err)
	}
	st, err := s.b.MandateStatus(ctx, in.MandateID)
	if err != nil {
		return nil, err
	}
	pv, err := s.readPolicy(ctx, md.PolicyID)
	if err != nil {
		return nil, err
	}
	info := &MandateInfo{
		MandateID:      st.MandateID,
		Status:         string(st.Status),
		Attrs:          plainAttrs(md.Attrs),
		Spent:          st.Spent,
		Purchases:      st.Purchases,
		RemainingCents: remainingCents(md.Attrs, st.Spent),
		Intents:        st.Intents,
		ExpiresAt:      rfc3339(st.ExpiresAt),
		PolicyID:       md.PolicyID,
		PolicyName:     pv.name,
		Policy:         pv.text,
		Parameters:     pv.params,
		Evidence:       pv.evidence,
	}
	if info.Intents == nil {
		info.Intents = []string{}
	}
	if p := st.Period; p != nil {
		info.Period = &PeriodInfo{Unit: p.Unit, Start: rfc3339(p.Start), End: rfc3339(p.End), Spent: p.Spent, Purchases: p.Purchases}
	}
	if st.RevokedAt != nil {
		info.RevokedAt = rfc3339(*st.RevokedAt)
	}
	return info, nil
}

// rfc3339 is a time as get_intent writes its deadline, so that an agent reads one
// form of time from every tool.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// remainingCents is budget_cents − spent, when the attrs have an int parameter named
// budget_cents and the difference fits an int64; nil otherwise, so that no remainder
// is reported of a parameter whose meaning the service does not know.
func remainingCents(a *policy.Attrs, spent int64) *int64 {
	if a == nil {
		return nil
	}
	v, ok := (*a)[budgetParam]
	if !ok || v.Type() != policy.TypeInt {
		return nil
	}
	budget := v.Int()
	r := budget - spent
	if spent > 0 && r > budget || spent < 0 && r < budget {
		return nil
	}
	return &r
}

// purchase makes one purchase under a mandate, with an intent id of its own when the
// caller gave none, and returns that id in the answer and in a refusal alike: the id is
// what makes sending the purchase again safe.
func (s *Server) purchase(ctx context.Context, in purchaseArgs) (*Purchased, error) {
	if err := checkMandateID(in.MandateID); err != nil {
		return nil, err
	}
	intentID := in.IntentID
	if intentID == "" {
		intentID = uuid.NewString()
	}
	if err := s.b.Purchase(ctx, in.MandateID, intentID, in.Solution); err != nil {
		err = purchaseRefusal(in.MandateID, err)
		if canon, ok := intentd.CanonicalIntentID(intentID); ok {
			err = &purchaseError{err: err, intentID: canon}
		}
		return nil, err
	}
	mandateID, _ := intentd.CanonicalIntentID(in.MandateID)
	canon, _ := intentd.CanonicalIntentID(intentID)
	return &Purchased{MandateID: mandateID, IntentID: canon, Solution: in.Solution, Status: string(intentd.StateProcessing),
		Next: "call await_outcome with this intent_id for the decision, then get_mandate for what remains"}, nil
}

// purchaseRefusal words the refusals an agent must act on, as propose_solution words
// agent_signature_required: how an agent that holds its key purchases, and, for a
// mandate that takes no purchase, that no purchase under it will ever be taken.
func purchaseRefusal(mandateID string, err error) error {
	code := intentd.ErrorCode(err)
	switch code {
	case intentd.CodeAgentSignatureRequired:
		return intentd.Errorf(intentd.KindUnauthorized, code,
			"mandate %s delegates to the agents its attrs list, and takes only a purchase one of them signed; "+
				"these tools hold no agent key. An agent with its key runs the tools as `intentctl mcp --agent-key FILE`, "+
				"which signs its purchases, or signs its own POST /mandates/{id}/purchases with RFC 9421 (docs/agents.md)", clip(mandateID))
	case intentd.CodeMandateRevoked, intentd.CodeMandateExpired, intentd.CodeMandateExhausted:
		why := map[string]string{
			intentd.CodeMandateRevoked:   "its author revoked it",
			intentd.CodeMandateExpired:   "its expires_at has passed",
			intentd.CodeMandateExhausted: "its totals break a limit of its policy that no further purchase can meet (get_mandate shows them)",
		}[code]
		return intentd.Errorf(intentd.KindConflict, code,
			"mandate %s takes no purchase, now or later: %s. Nothing was bought; buying more needs a new mandate from the person", clip(mandateID), why)
	}
	return err
}

// purchaseError is a refused purchase's error with the id of the intent it named,
// which toolError puts in the tool error, so that an agent that let the tool make the
// id can still send the same purchase again.
type purchaseError struct {
	err      error
	intentID string
}

// Error names the intent, for the log of an internal error, which the agent never sees.
func (e *purchaseError) Error() string {
	return fmt.Sprintf("purchase of intent %s: %v", e.intentID, e.err)
}

// Unwrap lets toolError find the service's error inside.
func (e *purchaseError) Unwrap() error { return e.err }

// refusedIntent is the intent id a refused purchase named, or "".
func refusedIntent(err error) string {
	var pe *purchaseError
	if errors.As(err, &pe) {
		return pe.intentID
	}
	return ""
}
