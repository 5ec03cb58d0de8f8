package proof

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// CheckMandate is the check of a version 4 receipt's mandate: the authored mandate
// against its digest, its signature, and that the intent is a purchase under it.
const CheckMandate = "mandate"

// MandateReport is what a verified version 4 receipt establishes about the mandate the
// purchase was decided under: its author signed it, the intent carries its policy and
// attrs, and the decision was made against these totals at this time.
type MandateReport struct {
	ID string `json:"id"`
	// Authorship and AuthorKey are the mandate's authorship, as VerifyReport's are the
	// intent's.
	Authorship string    `json:"authorship"`
	AuthorKey  string    `json:"author_key,omitempty"`
	ExpiresAt  time.Time `json:"expires_at"`
	// The totals before the purchase, its amount and the decision's time, as the
	// receipt binds them.
	Spent           int64     `json:"spent"`
	Purchases       int64     `json:"purchases"`
	PeriodSpent     int64     `json:"period_spent"`
	PeriodPurchases int64     `json:"period_purchases"`
	Amount          int64     `json:"amount"`
	DecidedAt       time.Time `json:"decided_at"`
}

// checkMandate checks a version 4 receipt's mandate and returns the context the policy
// decided in: the bundle's authored mandate digests to the receipt's, its authorship
// verifies, its id is the receipt's, and its policy and attrs are the intent's; on a
// success, the policy's amount on the evidence is the receipt's. A receipt without a
// mandate decided in the zero context, and its bundle carries no mandate.
func checkMandate(w *bundleWire, p *policy.Policy, in intentd.Intent, ev map[string]any, r *crypto.Receipt, report *VerifyReport) (policy.Context, error) {
	m := r.Mandate
	if m == nil {
		if len(w.AuthoredMandate) > 0 {
			return policy.Context{}, verifyErr(CheckBundle, "proof bundle: authored_mandate is present, but the receipt (version %d) names no mandate", r.Version)
		}
		return policy.Context{}, nil
	}
	if len(w.AuthoredMandate) == 0 {
		return policy.Context{}, verifyErr(CheckBundle, "proof bundle: authored_mandate is missing: a version 4 receipt binds its mandate")
	}
	if got, err := crypto.Digest(w.AuthoredMandate); err != nil || got != m.AuthoredMandateDigest {
		return policy.Context{}, verifyErr(CheckMandate, "the authored mandate digests to %s, the receipt binds %s", got, m.AuthoredMandateDigest)
	}
	var authored struct {
		Mandate    json.RawMessage   `json:"mandate"`
		Authorship crypto.Authorship `json:"authorship"`
	}
	if err := decodeStrict(w.AuthoredMandate, &authored); err != nil || len(authored.Mandate) == 0 {
		return policy.Context{}, verifyErr(CheckMandate, "authored mandate is not valid: %v", err)
	}
	md, err := intentd.DecodeMandate(authored.Mandate)
	if err != nil {
		return policy.Context{}, verifyErr(CheckMandate, "authored mandate: %v", err)
	}
	if err := crypto.Verify(authored.Mandate, authored.Authorship, crypto.VerifyOptions{AllowUnsigned: true}); err != nil {
		return policy.Context{}, verifyErr(CheckMandate, "mandate authorship does not verify: %v", err)
	}
	id, _ := intentd.CanonicalIntentID(md.ID)
	switch {
	case id != m.ID:
		return policy.Context{}, verifyErr(CheckMandate, "the authored mandate's id is %s, the receipt's mandate is %s", md.ID, m.ID)
	case md.PolicyID != r.PolicyID:
		return policy.Context{}, verifyErr(CheckMandate, "the mandate names policy %s, the receipt names %s", md.PolicyID, r.PolicyID)
	case !sameAttrs(md.Attrs, in.Attrs):
		return policy.Context{}, verifyErr(CheckMandate, "the intent's attrs are not the mandate's")
	}
	c := policy.Context{Spent: m.Spent, Purchases: m.Purchases, PeriodSpent: m.PeriodSpent, PeriodPurchases: m.PeriodPurchases, Time: m.DecidedAt}
	if r.Outcome == crypto.OutcomeSuccess {
		attrs := policy.Attrs{}
		if in.Attrs != nil {
			attrs = *in.Attrs
		}
		amount, _, err := p.Amount(attrs, ev)
		if err != nil || amount != m.Amount {
			return policy.Context{}, verifyErr(CheckMandate, "the purchase's amount on the evidence is %d (%v), the receipt binds %d", amount, err, m.Amount)
		}
	} else if m.Amount != 0 {
		return policy.Context{}, verifyErr(CheckMandate, "a failure binds the amount %d, want 0: it adds nothing", m.Amount)
	}
	mr := &MandateReport{ID: m.ID, ExpiresAt: md.ExpiresAt, Spent: m.Spent, Purchases: m.Purchases,
		PeriodSpent: m.PeriodSpent, PeriodPurchases: m.PeriodPurchases, Amount: m.Amount, DecidedAt: m.DecidedAt}
	mr.Authorship, mr.AuthorKey = describeAuthorship(authored.Authorship)
	if mr.Authorship == "Unsigned" {
		report.Notes = append(report.Notes, "the mandate is unsigned: nobody is shown to have authorized its purchases")
	}
	if report.Authorship == "Unsigned" {
		// The intent of a purchase is unsigned by design: its authority is the mandate's.
		report.Notes = slices.DeleteFunc(report.Notes, func(n string) bool { return n == noteUnsignedIntent })
		report.Notes = append(report.Notes, "the intent is a purchase under the mandate: its authority is the mandate's signature, not its own")
	}
	report.Mandate = mr
	return c, nil
}

// sameAttrs reports whether two attrs say the same, compared in their JCS form.
func sameAttrs(a, b *policy.Attrs) bool {
	enc := func(a *policy.Attrs) ([]byte, error) {
		if a == nil {
			a = &policy.Attrs{}
		}
		raw, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		return crypto.Canonicalize(raw)
	}
	ca, errA := enc(a)
	cb, errB := enc(b)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}
