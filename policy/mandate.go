package policy

import (
	"strings"
	"time"
)

// Mandates: one signed authorization for many purchases under a budget. The language's
// part of it is what a policy can say about one purchase among many: the amount of the
// purchase (an amount part), the calendar period that period totals count in (a period
// part), and the values of the decision's context that constraints read (ctxVal). The
// running totals themselves are the engine's to keep; a decision receives them in a
// Context.

// ctxVal is a value of the decision's context that an expression reads. Its number is
// the operand of the CTX instruction, and so part of the bytecode format.
type ctxVal uint8

const (
	ctxSpent           ctxVal = iota // mandate.spent
	ctxPurchases                     // mandate.purchases
	ctxPeriodSpent                   // mandate.period_spent
	ctxPeriodPurchases               // mandate.period_purchases
	ctxAmount                        // purchase.amount
	ctxTime                          // decision.time
	numCtx
)

// ctxNames are the values as the language spells them: the word before the dot says
// whose value it is.
var ctxNames = [numCtx]string{
	ctxSpent: "mandate.spent", ctxPurchases: "mandate.purchases", ctxPeriodSpent: "mandate.period_spent",
	ctxPeriodPurchases: "mandate.period_purchases", ctxAmount: "purchase.amount", ctxTime: "decision.time",
}

// lookupCtx is the value word.name names.
func lookupCtx(word, name string) (ctxVal, bool) {
	for v, s := range ctxNames {
		if s == word+"."+name {
			return ctxVal(v), true
		}
	}
	return 0, false
}

// ctxList lists the values of word for an error ("mandate.spent, ... or ...").
func ctxList(word string) string {
	var names []string
	for _, s := range ctxNames {
		if strings.HasPrefix(s, word+".") {
			names = append(names, s)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// isMandate reports whether v is one of the mandate's running totals.
func (v ctxVal) isMandate() bool { return v <= ctxPeriodPurchases }

// inPeriod reports whether v counts within the period only.
func (v ctxVal) inPeriod() bool { return v == ctxPeriodSpent || v == ctxPeriodPurchases }

// period is the calendar period of a period part. Its number is the period byte of
// the bytecode.
type period uint8

const (
	periodNone period = iota
	periodDay
	periodWeek
	periodMonth
)

var periodNames = [...]string{periodDay: "day", periodWeek: "week", periodMonth: "month"}

func lookupPeriod(s string) period {
	for p, n := range periodNames {
		if n != "" && n == s {
			return period(p)
		}
	}
	return periodNone
}

// Context is what a decision under a mandate reads besides the attrs and the evidence:
// the mandate's running totals before this purchase, which the engine keeps, and the
// time of the decision. A zero Context is a mandate with no purchase yet and a
// decision without a time.
type Context struct {
	// Spent is the sum of the amounts of the mandate's successful purchases before
	// this one, and Purchases their number: mandate.spent and mandate.purchases.
	Spent, Purchases int64
	// PeriodSpent and PeriodPurchases are the same within the period (of the policy's
	// period part) that holds Time: mandate.period_spent and mandate.period_purchases.
	PeriodSpent, PeriodPurchases int64
	// Time is the decision time: decision.time is its Unix seconds. The zero Time is
	// no time at all, and a constraint that reads decision.time then fails, rather
	// than hold for the year 1: a validity window must not pass unchecked.
	Time time.Time
}

// ContextValues is a set of the values of a Context that a policy reads, a bit each,
// so that a receipt of a decision can bind exactly those.
type ContextValues uint8

// The values a policy may read. PurchaseAmount is not in a Context: it is the policy's
// amount part evaluated on the evidence and the attrs (Amount), which a receipt binds
// already.
const (
	MandateSpent           ContextValues = 1 << ctxSpent
	MandatePurchases       ContextValues = 1 << ctxPurchases
	MandatePeriodSpent     ContextValues = 1 << ctxPeriodSpent
	MandatePeriodPurchases ContextValues = 1 << ctxPeriodPurchases
	PurchaseAmount         ContextValues = 1 << ctxAmount
	DecisionTime           ContextValues = 1 << ctxTime

	// mandateValues are the running totals.
	mandateValues = MandateSpent | MandatePurchases | MandatePeriodSpent | MandatePeriodPurchases
)

// Has reports whether s holds every value of v.
func (s ContextValues) Has(v ContextValues) bool { return s&v == v }

// Names are the values of s as the language spells them, in the order of the
// constants: "mandate.spent", ..., "decision.time".
func (s ContextValues) Names() []string {
	var out []string
	for v := range numCtx {
		if s&(1<<v) != 0 {
			out = append(out, ctxNames[v])
		}
	}
	return out
}

// String is the Names, comma-separated, or "none".
func (s ContextValues) String() string {
	if s == 0 {
		return "none"
	}
	return strings.Join(s.Names(), ", ")
}

// Reads reports which values of the decision's context the policy's constraints read.
// A policy of none (every policy written before mandates) decides alike in any
// Context.
func (p *Policy) Reads() ContextValues { return p.reads }

// UsesMandate reports whether the policy reads any of a mandate's running totals
// (mandate.*): its intents are mandates, whose purchases the engine must count.
func (p *Policy) UsesMandate() bool { return p.reads&mandateValues != 0 }

// Period returns the policy's period ("day", "week", "month") or "" when it has none.
func (p *Policy) Period() string { return periodNames[p.f.period] }

// PeriodStart is the start of the period of p that holds t: midnight UTC of t's day
// (in UTC), of the Monday of its ISO 8601 week, or of the first of its month. Time
// within the period is dropped, nanoseconds too, and t's location is not: the
// result is in UTC. It is the zero Time when the policy has no period.
func (p *Policy) PeriodStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	switch p.f.period {
	case periodDay:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case periodWeek:
		// Weekday counts from Sunday; an ISO week starts on Monday.
		back := (int(t.UTC().Weekday()) + 6) % 7
		return time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
	case periodMonth:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// PeriodEnd is the end of the period of p that holds t, the start of the next one:
// the period is [PeriodStart(t), PeriodEnd(t)). It is the zero Time when the policy
// has no period.
func (p *Policy) PeriodEnd(t time.Time) time.Time {
	s := p.PeriodStart(t)
	switch p.f.period {
	case periodDay:
		return s.AddDate(0, 0, 1)
	case periodWeek:
		return s.AddDate(0, 0, 7)
	case periodMonth:
		return s.AddDate(0, 1, 0)
	}
	return time.Time{}
}

// AmountError is why the amount of a purchase could not be computed.
type AmountError struct {
	// Expr is the amount part's expression, in its canonical text.
	Expr string
	// Reason is what stopped it, as a failure's reason says it: "evidence.price_cents
	// is missing from the evidence", an overflow, or a negative amount.
	Reason string
	// MissingEvidence names the evidence field that was absent or of another type, when
	// that is what stopped it, as a Failure's does: the solution could not be priced,
	// which is not the same as a price that breaks the mandate.
	MissingEvidence []string
}

// Error is "policy: amount EXPR: REASON".
func (e *AmountError) Error() string { return "policy: amount " + e.Expr + ": " + e.Reason }

// Amount evaluates the policy's amount part on the evidence and the attrs: the amount
// of the purchase the evidence describes. ok is false when the policy has no amount
// part. The error, an *AmountError, says why there is no amount: evidence the part
// reads is missing or ill-typed, a parameter it reads is absent, the arithmetic
// overflows, or the amount is negative (a purchase that paid the buyer would lower
// the mandate's totals). A constraint that reads purchase.amount fails for the same
// reasons with the same words.
func (p *Policy) Amount(a Attrs, evidence map[string]any) (amount int64, ok bool, err error) {
	if p.f.amount == nil {
		return 0, false, nil
	}
	fr := p.frameOf(make([]Value, p.values()))
	p.loadParams(fr.params, a)
	p.loadEvidence(fr.ev, evidence)
	if v := p.runAmount(&fr); v.t == TypeInt {
		return v.n, true, nil
	}
	x := explainer{p: p, fr: &fr, attrs: a, evidence: evidence}
	x.appendAmountFault()
	return 0, true, &AmountError{Expr: p.f.amount.node().text, Reason: string(x.buf), MissingEvidence: x.missing}
}

// runAmount runs the amount part's code on fr's parameters and evidence: an int value,
// or a typeBad one when there is no amount (a fault, or a negative amount).
func (p *Policy) runAmount(fr *frame) Value {
	if p.pg.exec(p.amountCode, fr) {
		if v := fr.stack[0]; v.t == TypeInt && v.n >= 0 {
			return v
		}
	}
	return Value{t: typeBad}
}

// loadContext puts the values of c that the policy reads into fr.ctx, and the amount
// of the purchase when a constraint reads it; fr's parameters and evidence are loaded.
func (p *Policy) loadContext(fr *frame, c Context) {
	fr.ctx[ctxSpent] = IntValue(c.Spent)
	fr.ctx[ctxPurchases] = IntValue(c.Purchases)
	fr.ctx[ctxPeriodSpent] = IntValue(c.PeriodSpent)
	fr.ctx[ctxPeriodPurchases] = IntValue(c.PeriodPurchases)
	fr.ctx[ctxTime] = Value{t: typeAbsent}
	if !c.Time.IsZero() {
		fr.ctx[ctxTime] = IntValue(c.Time.Unix())
	}
	if p.reads&PurchaseAmount != 0 {
		fr.ctx[ctxAmount] = p.runAmount(fr)
	}
}

// readsOf is the context values x reads.
func readsOf(x expr) ContextValues {
	var s ContextValues
	walk(x, func(e expr) {
		if r, ok := e.(*ctxRef); ok {
			s |= 1 << r.v
		}
	})
	return s
}

// Exhausted evaluates the constraints that read nothing but the attrs and a mandate's
// overall totals (mandate.spent, mandate.purchases), at least one of those, on the
// totals of c, and returns those that fail. Such a constraint decides alike for every
// purchase; the totals change only by a success, which it forbids: failing once, it
// fails for good, and the mandate can take no purchase again. A constraint that reads
// the purchase's amount, the period's totals or the time is not one: a cheaper item, a
// new week or a later day may pass it.
func (p *Policy) Exhausted(a Attrs, c Context) []Failure {
	return p.evaluate(a, nil, c, true)
}

// totalsOnly reports whether x reads at least one of a mandate's overall totals, and
// nothing else but the parameters.
func totalsOnly(x expr) bool {
	reads := readsOf(x)
	if reads == 0 || reads&^(MandateSpent|MandatePurchases) != 0 {
		return false
	}
	ev := false
	walk(x, func(e expr) {
		if r, ok := e.(*ref); ok && r.evidence {
			ev = true
		}
	})
	return !ev
}
