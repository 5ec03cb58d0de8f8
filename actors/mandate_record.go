package actors

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// mandateRecordVersion is written into every mandate record; a record of another
// version is refused rather than misread.
const mandateRecordVersion = 1

// maxMandatePurchases bounds the purchases one mandate takes, successful or not. The
// record lists them all and each decision rewrites it whole: the bound keeps that
// write, and the record, small (under 100 KiB). A purchase past it is refused as the
// mandate's exhaustion.
const maxMandatePurchases = 1000

// mandateRecord is a mandate's durable state, one record in the store
// (mandate_encode.go): the authored mandate, its revocation, and every purchase it
// took, with the decision of each that succeeded. The running totals are sums of those
// decisions.
type mandateRecord struct {
	V        int
	ID       string
	PolicyID string
	// Authored is the JSON of the AuthoredMandate: GET /mandates/{id} answers it, and
	// a purchase's receipt binds its digest.
	Authored  json.RawMessage
	CreatedAt time.Time
	ExpiresAt time.Time
	Revoked   *mandateRevocation
	// Spent and Count are the sums of the successful purchases' amounts, and their
	// number.
	Spent     int64
	Count     int64
	Purchases []mandatePurchase
}

// mandateRevocation is a mandate's revocation: when it was taken, and the authored
// revocation ({"revocation": ..., "authorship": ...}) its author signed.
type mandateRevocation struct {
	At       time.Time
	Authored json.RawMessage
}

// mandatePurchase is one purchase a mandate took: its intent, and, once it succeeded,
// the decision. A failure adds nothing and is not recorded here: the intent holds it.
type mandatePurchase struct {
	IntentID string
	TakenAt  time.Time
	Success  *mandateDecision
}

// mandateDecision is what a successful purchase was decided against, all that its
// receipt binds besides the intent: the totals before it, its amount, the decision's
// time, and the digest of the evidence, so that a purchase proved again after a crash,
// on the same evidence, ends with the decision already counted rather than a new one.
type mandateDecision struct {
	At     time.Time
	Amount int64
	Before mandateTotals
	// EvidenceSum is the SHA-256 of the evidence's JCS, whose Base58 is the receipt's
	// evidence_digest.
	EvidenceSum [sha256.Size]byte
}

// mandateTotals are a mandate's running totals at a decision: overall, and within the
// policy's period that holds the decision's time.
type mandateTotals struct {
	Spent, Purchases, PeriodSpent, PeriodPurchases int64
}

// context is the policy's view of the totals at time at.
func (t mandateTotals) context(at time.Time) policy.Context {
	return policy.Context{Spent: t.Spent, Purchases: t.Purchases, PeriodSpent: t.PeriodSpent,
		PeriodPurchases: t.PeriodPurchases, Time: at}
}

// clone is a copy whose purchases a step may change while the original stands.
func (r *mandateRecord) clone() *mandateRecord {
	c := *r
	c.Purchases = append([]mandatePurchase(nil), r.Purchases...)
	return &c
}

// purchase is the purchase of intent id, or nil.
func (r *mandateRecord) purchase(id string) *mandatePurchase {
	for i := range r.Purchases {
		if r.Purchases[i].IntentID == id {
			return &r.Purchases[i]
		}
	}
	return nil
}

// totals are the running totals at time at, for a policy whose period is p's.
func (r *mandateRecord) totals(p *policy.Policy, at time.Time) mandateTotals {
	t := mandateTotals{Spent: r.Spent, Purchases: r.Count}
	start, end := p.PeriodStart(at), p.PeriodEnd(at)
	if start.IsZero() {
		return t
	}
	for _, pu := range r.Purchases {
		if s := pu.Success; s != nil && !s.At.Before(start) && s.At.Before(end) {
			t.PeriodSpent += s.Amount
			t.PeriodPurchases++
		}
	}
	return t
}

// mandateParts are what a mandate's authored JSON says that a purchase needs: its
// attrs, decoded and as JSON, and the digest a receipt binds it by.
type mandateParts struct {
	attrs policy.Attrs
	// rawAttrs are the attrs as the mandate holds them, in JCS, as every member of a
	// canonical object is; nil when the mandate has none.
	rawAttrs json.RawMessage
	digest   string
}

// parts decodes the mandate of the record's authored JSON.
func (r *mandateRecord) parts() (mandateParts, error) {
	var am intentd.AuthoredMandate
	if err := json.Unmarshal(r.Authored, &am); err != nil {
		return mandateParts{}, fmt.Errorf("mandate %s: authored: %w", r.ID, err)
	}
	var m struct {
		Attrs json.RawMessage `json:"attrs"`
	}
	if err := json.Unmarshal(am.Mandate, &m); err != nil {
		return mandateParts{}, fmt.Errorf("mandate %s: %w", r.ID, err)
	}
	md, err := intentd.DecodeMandate(am.Mandate)
	if err != nil {
		return mandateParts{}, fmt.Errorf("mandate %s: %w", r.ID, err)
	}
	parts := mandateParts{attrs: policy.Attrs{}, rawAttrs: m.Attrs}
	if md.Attrs != nil {
		parts.attrs = *md.Attrs
	}
	if parts.digest, err = crypto.Digest(r.Authored); err != nil {
		return mandateParts{}, fmt.Errorf("mandate %s: digest: %w", r.ID, err)
	}
	return parts, nil
}

// state is the mandate's state at now under policy p with attrs a.
func (r *mandateRecord) state(p *policy.Policy, a policy.Attrs, now time.Time) intentd.MandateState {
	switch {
	case r.Revoked != nil:
		return intentd.MandateRevoked
	case !now.Before(r.ExpiresAt):
		return intentd.MandateExpired
	case len(r.Purchases) >= maxMandatePurchases:
		return intentd.MandateExhausted
	case len(p.Exhausted(a, policy.Context{Spent: r.Spent, Purchases: r.Count})) > 0:
		return intentd.MandateExhausted
	}
	return intentd.MandateActive
}

// status is the mandate's status at now.
func (r *mandateRecord) status(p *policy.Policy, a policy.Attrs, now time.Time) intentd.MandateStatus {
	st := intentd.MandateStatus{
		Status:    r.state(p, a, now),
		MandateID: r.ID,
		Spent:     r.Spent,
		Purchases: r.Count,
		Intents:   make([]string, len(r.Purchases)),
		ExpiresAt: r.ExpiresAt,
	}
	for i, pu := range r.Purchases {
		st.Intents[i] = pu.IntentID
	}
	if unit := p.Period(); unit != "" {
		t := r.totals(p, now)
		st.Period = &intentd.MandatePeriod{Unit: unit, Start: p.PeriodStart(now), End: p.PeriodEnd(now),
			Spent: t.PeriodSpent, Purchases: t.PeriodPurchases}
	}
	if r.Revoked != nil {
		at := r.Revoked.At
		st.RevokedAt = &at
	}
	return st
}

// purchaseIntent is the canonical JSON of the intent of a purchase under the mandate:
// the mandate's policy and attrs under the purchase's id. It is written as JCS writes
// it, the members in the order of their names (attrs, id, policy_id) and the attrs as
// the canonical mandate holds them; the ids are a UUID and a Base58 digest, which JCS
// writes as they are.
func (r *mandateRecord) purchaseIntent(parts mandateParts, intentID string) ([]byte, error) {
	if _, ok := intentd.CanonicalIntentID(intentID); !ok || !intentd.ValidPolicyID(r.PolicyID) {
		return nil, fmt.Errorf("purchase intent %q of policy %q: not a UUID and a policy id", intentID, r.PolicyID)
	}
	b := make([]byte, 0, len(parts.rawAttrs)+len(intentID)+len(r.PolicyID)+40)
	b = append(b, '{')
	if parts.rawAttrs != nil {
		b = append(b, `"attrs":`...)
		b = append(b, parts.rawAttrs...)
		b = append(b, ',')
	}
	b = append(b, `"id":"`...)
	b = append(b, intentID...)
	b = append(b, `","policy_id":"`...)
	b = append(b, r.PolicyID...)
	return append(b, `"}`...), nil
}
