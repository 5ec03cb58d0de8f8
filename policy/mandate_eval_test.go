package policy

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/golden"
)

// mandateExample is docs/examples/mandate.policy.
func mandateExample(t testing.TB) *Policy {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "examples", "mandate.policy"))
	if err != nil {
		t.Fatal(err)
	}
	return mustCompile(t, string(b))
}

// mandateAttrs: at most 30.00 a t-shirt, 50.00 in all, 3 purchases, 1 a week.
const mandateAttrs = `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["red", "navy"]}}, "max_price_cents": {"Int": 3000},
 "budget_cents": {"Int": 5000}, "max_purchases": {"Int": 3}, "per_week": {"Int": 1}, "agents": {"Set": {"String": []}}}}`

// A purchase of 24.99, shipping included.
const mandatePassing = `{"category": "t-shirt", "size": "M", "color": "navy", "brand": "acme", "price_cents": 1999, "shipping_cents": 500, "in_stock": true}`

// TestEvaluateIn decides purchases under docs/examples/mandate.policy at the edges of its
// limits: the budget met exactly and passed by a cent, the last purchase and the one
// after it, the week's.
func TestEvaluateIn(t *testing.T) {
	p := mandateExample(t)
	a, ev := mustAttrs(t, mandateAttrs), mustEvidence(t, mandatePassing)
	now := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		c    Context
		want []string // "index: reason"
	}{
		{"the first purchase", Context{}, nil},
		{"exactly the budget", Context{Spent: 2501, Purchases: 1, Time: now}, nil},
		{"a cent over the budget", Context{Spent: 2502, Purchases: 1, Time: now},
			[]string{"7: mandate.spent + purchase.amount = 5001, which is not <= parameters.budget_cents = 5000"}},
		{"the last purchase", Context{Spent: 10, Purchases: 2}, nil},
		{"one purchase too many", Context{Spent: 10, Purchases: 3},
			[]string{"8: mandate.purchases = 3, which is not < parameters.max_purchases = 3"}},
		{"the week's one", Context{Spent: 10, Purchases: 1, PeriodSpent: 0, PeriodPurchases: 0}, nil},
		{"the week's second", Context{Spent: 10, Purchases: 1, PeriodSpent: 10, PeriodPurchases: 1},
			[]string{"9: mandate.period_purchases = 1, which is not < parameters.per_week = 1"}},
		{"everything", Context{Spent: 7995, Purchases: 3, PeriodPurchases: 1, Time: now}, []string{
			"7: mandate.spent + purchase.amount = 10494, which is not <= parameters.budget_cents = 5000",
			"8: mandate.purchases = 3, which is not < parameters.max_purchases = 3",
			"9: mandate.period_purchases = 1, which is not < parameters.per_week = 1"}},
		{"an overflowing total", Context{Spent: math.MaxInt64},
			[]string{"7: mandate.spent + purchase.amount overflows int64: 9223372036854775807 + 2499"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range p.EvaluateIn(a, ev, tc.c) {
				got = append(got, fmt.Sprintf("%d: %s", f.Index, f.Reason))
				if len(f.MissingEvidence) > 0 {
					t.Fatalf("missing evidence %v", f.MissingEvidence)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if !reflect.DeepEqual(p.Evaluate(a, ev), p.EvaluateIn(a, ev, Context{})) {
		t.Fatal("Evaluate is not EvaluateIn with a zero Context")
	}
	// A policy that reads no context decides alike in any.
	plain := mustCompile(t, example)
	if !reflect.DeepEqual(plain.Evaluate(a, ev), plain.EvaluateIn(a, ev, Context{Spent: 1 << 40, Purchases: 9, Time: now})) {
		t.Fatal("a policy of no context values read one")
	}
}

// TestEvaluateTime: decision.time is the decision's Unix seconds, whatever the Time's
// location and fraction; a decision without a time fails the constraints that read it.
func TestEvaluateTime(t *testing.T) {
	p := mustCompile(t, "name window\nparameters { from: int, until: int }\nrequires { parameters.from <= decision.time <= parameters.until; }\n")
	until := time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)
	a := Attrs{"from": IntValue(until.Unix() - 86400), "until": IntValue(until.Unix())}
	east := time.FixedZone("UTC+14", 14*3600)
	tests := []struct {
		name string
		at   time.Time
		want string
	}{
		{"at the end", until, ""},
		{"at the end, in another zone", until.In(east), ""},
		{"within the last second", until.Add(999 * time.Millisecond), ""},
		{"a second after", until.Add(time.Second), "decision.time = 1811808001, which is not <= parameters.until = 1811808000"},
		{"at the start", until.Add(-86400 * time.Second), ""},
		{"before the start", until.Add(-86401 * time.Second), "parameters.from = 1811721600, which is not <= decision.time = 1811721599"},
		{"no time", time.Time{}, "decision.time is not known: the decision was made without a time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if fails := p.EvaluateIn(a, nil, Context{Time: tc.at}); len(fails) > 0 {
				got = fails[0].Reason
			}
			if got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// amountPolicy has an amount of evidence and a parameter, and a constraint that reads
// purchase.amount.
const amountPolicy = `name amounts
parameters { units: int }
evidence { price: int, discount: int }
amount evidence.price * parameters.units - evidence.discount
requires { purchase.amount <= 1000; }
`

// TestAmount: Amount evaluates the amount part, or says why it cannot, as a
// constraint that reads purchase.amount fails for the same reason.
func TestAmount(t *testing.T) {
	p := mustCompile(t, amountPolicy)
	a := Attrs{"units": IntValue(3)}
	tests := []struct {
		name     string
		attrs    Attrs
		evidence string
		want     int64
		err      string
		missing  []string
	}{
		{"an amount", a, `{"price": 300, "discount": 50}`, 850, "", nil},
		{"zero", a, `{"price": 0, "discount": 0}`, 0, "", nil},
		{"missing evidence", a, `{"price": 300}`, 0, "evidence.discount is missing from the evidence", []string{"discount"}},
		{"ill-typed evidence", a, `{"price": 19.99, "discount": 0}`, 0,
			"evidence.price: want int, got 19.99 (a number with a fraction or an exponent)", []string{"price"}},
		{"a missing parameter", Attrs{}, `{"price": 300, "discount": 0}`, 0, "parameters.units is missing from the intent", nil},
		{"overflow", a, `{"price": 4611686018427387904, "discount": 0}`, 0,
			"evidence.price * parameters.units overflows int64: 4611686018427387904 * 3", nil},
		{"negative", a, `{"price": 1, "discount": 4}`, 0,
			"evidence.price * parameters.units - evidence.discount = -1 is negative (the amount of a purchase is 0 or more)", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := mustEvidence(t, tc.evidence)
			n, ok, err := p.Amount(tc.attrs, ev)
			if !ok || n != tc.want {
				t.Fatalf("Amount = %d, %v, %v", n, ok, err)
			}
			fails := p.EvaluateIn(tc.attrs, ev, Context{})
			if tc.err == "" {
				if err != nil || len(fails) > 0 {
					t.Fatalf("err %v, failures %v", err, fails)
				}
				return
			}
			var ae *AmountError
			if !errors.As(err, &ae) || ae.Reason != tc.err || !slices.Equal(ae.MissingEvidence, tc.missing) {
				t.Fatalf("error %#v", err)
			}
			if want := "policy: amount evidence.price * parameters.units - evidence.discount: " + tc.err; err.Error() != want {
				t.Fatalf("Error() = %q", err)
			}
			if len(fails) != 1 || fails[0].Reason != "purchase.amount has no value: "+tc.err || !slices.Equal(fails[0].MissingEvidence, tc.missing) {
				t.Fatalf("failures %+v", fails)
			}
		})
	}
	if n, ok, err := mustCompile(t, example).Amount(a, nil); n != 0 || ok || err != nil {
		t.Fatalf("a policy without an amount part: %d, %v, %v", n, ok, err)
	}
}

// TestPeriodStart covers each period across the turn of a year, at its exact start and
// just before it, on a leap day, and for a time whose own zone is on another day.
func TestPeriodStart(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		t                    string
		day, week, month     string // the period's start, its date in UTC at 00:00
		dayEnd, weekEnd, end string // and the next period's
	}{
		{"2026-12-31T23:59:59.999999999Z", "2026-12-31", "2026-12-28", "2026-12-01", "2027-01-01", "2027-01-04", "2027-01-01"},
		{"2027-01-01T00:00:00Z", "2027-01-01", "2026-12-28", "2027-01-01", "2027-01-02", "2027-01-04", "2027-02-01"},
		{"2027-01-03T23:59:59Z", "2027-01-03", "2026-12-28", "2027-01-01", "2027-01-04", "2027-01-04", "2027-02-01"},
		{"2027-01-04T00:00:00Z", "2027-01-04", "2027-01-04", "2027-01-01", "2027-01-05", "2027-01-11", "2027-02-01"},
		{"2025-12-29T08:00:00Z", "2025-12-29", "2025-12-29", "2025-12-01", "2025-12-30", "2026-01-05", "2026-01-01"},
		{"2028-02-29T13:14:15Z", "2028-02-29", "2028-02-28", "2028-02-01", "2028-03-01", "2028-03-06", "2028-03-01"},
		// Monday 2027-01-04 at 09:00 in UTC+14 is Sunday 19:00 in UTC: the week before.
		{"2027-01-04T09:00:00+14:00", "2027-01-03", "2026-12-28", "2027-01-01", "2027-01-04", "2027-01-04", "2027-02-01"},
		{"2026-12-31T20:00:00-05:00", "2027-01-01", "2026-12-28", "2027-01-01", "2027-01-02", "2027-01-04", "2027-02-01"},
	}
	policies := map[string]*Policy{}
	for _, w := range []string{"day", "week", "month"} {
		policies[w] = mustCompile(t, "name p\nevidence { a: int }\namount evidence.a\nperiod "+w+"\nrequires { true; }\n")
	}
	for _, tc := range tests {
		t.Run(tc.t, func(t *testing.T) {
			for _, c := range []struct{ period, start, end string }{{"day", tc.day, tc.dayEnd}, {"week", tc.week, tc.weekEnd}, {"month", tc.month, tc.end}} {
				p := policies[c.period]
				s, e := p.PeriodStart(at(tc.t)), p.PeriodEnd(at(tc.t))
				if s.Location() != time.UTC || s.Format(time.DateOnly) != c.start || !s.Equal(at(c.start+"T00:00:00Z")) {
					t.Errorf("%s: start %v, want %s", c.period, s, c.start)
				}
				if !e.Equal(at(c.end + "T00:00:00Z")) {
					t.Errorf("%s: end %v, want %s", c.period, e, c.end)
				}
			}
		})
	}
	none := mustCompile(t, example)
	if !none.PeriodStart(at(tests[0].t)).IsZero() || !none.PeriodEnd(at(tests[0].t)).IsZero() {
		t.Fatal("a policy without a period has one")
	}
}

// TestMandateExplainGolden pins the explanations of failures under a mandate, in
// testdata/explain/mandate.golden: each context value as the reasons show it, next to
// parameters and evidence, and the reasons a value is missing.
func TestMandateExplainGolden(t *testing.T) {
	p := mandateExample(t)
	a := mustAttrs(t, mandateAttrs)
	window := mustCompile(t, "name w\nparameters { until: int }\nevidence { price: int }\namount evidence.price\nperiod month\n"+
		"requires {\n  decision.time <= parameters.until and mandate.period_spent + purchase.amount < 10000;\n"+
		"  not (mandate.purchases > 2) or purchase.amount * 2 < mandate.spent;\n  optional: len(\"x\") + mandate.spent != decision.time;\n}\n")
	jan := time.Date(2027, 1, 31, 23, 59, 59, 0, time.UTC)
	cases := []struct {
		name     string
		p        *Policy
		attrs    Attrs
		evidence string
		c        Context
	}{
		{"over every limit", p, a, mandatePassing, Context{Spent: 7995, Purchases: 3, PeriodPurchases: 1, Time: jan}},
		{"no price", p, a, strings.Replace(mandatePassing, `"price_cents": 1999, `, "", 1), Context{Spent: 4000, Purchases: 3}},
		{"a price of another type", p, a, strings.Replace(mandatePassing, "1999", `"1999"`, 1), Context{Spent: 10}},
		{"a negative shipping", p, a, strings.Replace(mandatePassing, "500", "-2000", 1), Context{}},
		{"no budget", p, mustAttrs(t, strings.Replace(mandateAttrs, `"budget_cents": {"Int": 5000}, `, "", 1)), mandatePassing, Context{}},
		{"no time", window, Attrs{"until": IntValue(jan.Unix())}, `{"price": 9000}`, Context{Spent: 7, Purchases: 3, PeriodSpent: 1001}},
		{"late", window, Attrs{"until": IntValue(jan.Unix())}, `{"price": 9000}`, Context{Spent: 7, Purchases: 1, Time: jan.Add(time.Second)}},
		{"no price, late", window, Attrs{"until": IntValue(jan.Unix())}, `{}`, Context{Purchases: 3, Time: jan.Add(time.Second)}},
		{"an overflowing time", window, Attrs{"until": IntValue(jan.Unix())}, `{"price": 1}`, Context{Spent: math.MaxInt64, Time: jan}},
	}
	var b strings.Builder
	for _, tc := range cases {
		fmt.Fprintf(&b, "== %s: %+v\n", tc.name, tc.c)
		for _, f := range tc.p.EvaluateIn(tc.attrs, mustEvidence(t, tc.evidence), tc.c) {
			fmt.Fprintf(&b, "%d %s\n  %s\n", f.Index, f.PrettyExpr, f.Reason)
			if len(f.MissingEvidence) > 0 {
				fmt.Fprintf(&b, "  missing %s\n", strings.Join(f.MissingEvidence, ", "))
			}
		}
	}
	golden.Check(t, filepath.Join("testdata", "explain", "mandate.golden"), b.String())
}

// TestExhausted finds the constraints of docs/examples/mandate.policy that fail for
// good: the count of purchases, which reads only the overall totals, and not the
// budget (a cheaper item may pass it) nor the week's count (a new week passes it).
func TestExhausted(t *testing.T) {
	p := mandateExample(t)
	a := mustAttrs(t, mandateAttrs)
	tests := []struct {
		name string
		c    Context
		want []int
	}{
		{"new", Context{}, nil},
		{"one purchase left", Context{Spent: 10, Purchases: 2}, nil},
		{"no purchase left", Context{Spent: 10, Purchases: 3}, []int{8}},
		{"the budget spent", Context{Spent: 5000, Purchases: 2}, nil},
		{"the week's purchase made", Context{Spent: 10, Purchases: 1, PeriodPurchases: 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for _, f := range p.Exhausted(a, tt.c) {
				got = append(got, f.Index)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Exhausted = %v, want %v", got, tt.want)
			}
		})
	}
}
