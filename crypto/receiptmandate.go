package crypto

import (
	"fmt"
	"time"
)

// ReceiptVersionMandate is the version of a receipt of a purchase under a mandate: a
// version 2 receipt (with an agent member when an agent signed the purchase, as in
// version 3) and a mandate member, which binds the mandate and every value of its
// running totals the decision was made against, so that re-running the policy
// offline reaches the same decision.
const ReceiptVersionMandate = 4

// ReceiptMandate is the mandate of a version 4 receipt: which mandate, as authored
// (the digest of the AuthoredMandate's JSON, as GET /mandates/{id} answers it), the
// totals before this purchase, its amount and the decision's time.
type ReceiptMandate struct {
	// ID is the mandate's id.
	ID string `json:"id"`
	// AuthoredMandateDigest is Digest of the authored mandate's JSON.
	AuthoredMandateDigest string `json:"authored_mandate_digest"`
	// Spent and Purchases are the mandate's totals before this purchase: the amounts
	// of its successful purchases and their number. PeriodSpent and PeriodPurchases
	// are those within the policy's period that holds DecidedAt (0 without a period).
	Spent           int64 `json:"spent"`
	Purchases       int64 `json:"purchases"`
	PeriodSpent     int64 `json:"period_spent"`
	PeriodPurchases int64 `json:"period_purchases"`
	// Amount is the purchase's amount, the policy's amount part on the evidence: what
	// a success added to Spent. 0 on a failure, which adds nothing.
	Amount int64 `json:"amount"`
	// DecidedAt is the decision's time, in UTC: the policy's decision.time is its
	// Unix seconds.
	DecidedAt time.Time `json:"decided_at"`
}

// validateMandate holds the mandate member to the version, and the agent member to the
// versions that have one: a version 4 receipt has a mandate and may have an agent.
func (r *Receipt) validateMandate() error {
	if r.Version != ReceiptVersionMandate {
		if r.Mandate != nil {
			return &FieldError{Field: "mandate", Reason: fmt.Sprintf("present, but a version %d receipt has none", r.Version)}
		}
		return nil
	}
	m := r.Mandate
	if m == nil {
		return &FieldError{Field: "mandate", Reason: "missing, want the mandate of a version 4 receipt"}
	}
	if m.ID == "" {
		return &FieldError{Field: "mandate.id", Reason: "empty"}
	}
	if err := checkDigest(m.AuthoredMandateDigest); err != nil {
		return &FieldError{Field: "mandate.authored_mandate_digest", Reason: err.Error()}
	}
	for _, v := range []struct {
		field string
		n     int64
	}{{"spent", m.Spent}, {"purchases", m.Purchases}, {"period_spent", m.PeriodSpent}, {"period_purchases", m.PeriodPurchases}, {"amount", m.Amount}} {
		if v.n < 0 || v.n > maxExactInteger {
			return &FieldError{Field: "mandate." + v.field, Reason: fmt.Sprintf("%d is outside 0 to 2^53-1", v.n)}
		}
	}
	if m.DecidedAt.IsZero() {
		return &FieldError{Field: "mandate.decided_at", Reason: "missing"}
	}
	if _, offset := m.DecidedAt.Zone(); offset != 0 {
		return &FieldError{Field: "mandate.decided_at", Reason: "not in UTC"}
	}
	return nil
}
