package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mandateDecls are the parameters, evidence and constraints of mandateBase's policy,
// for placing its parts elsewhere.
const mandateDecls = `parameters { budget: int, per_week: int, units: int, until: int }
evidence { price: int, shipping: int }
requires {
  mandate.spent + purchase.amount <= parameters.budget;
  mandate.purchases < 10 and mandate.period_purchases < parameters.per_week;
  decision.time <= parameters.until;
  mandate.period_spent <= parameters.budget;
}
`

// mandateCanonical is mandateDecls's policy as it prints, with its parts.
const mandateCanonical = `name mandate

amount evidence.price + evidence.shipping * parameters.units
period week

parameters {
  budget: int
  per_week: int
  units: int
  until: int
}

evidence {
  price: int
  shipping: int
}

requires {
  mandate.spent + purchase.amount <= parameters.budget;
  mandate.purchases < 10 and mandate.period_purchases < parameters.per_week;
  decision.time <= parameters.until;
  mandate.period_spent <= parameters.budget;
}
`

const mandateAmount = "amount evidence.price + evidence.shipping * parameters.units\n"

// TestMandateSyntax: the amount and period parts may stand anywhere among the parts, in
// any spelling; every placement is one policy, which prints them after the name.
func TestMandateSyntax(t *testing.T) {
	base := mustCompile(t, mandateCanonical)
	if base.Pretty() != mandateCanonical {
		t.Fatalf("printed:\n%s", base.Pretty())
	}
	tests := []struct{ name, src string }{
		{"first", mandateAmount + "period week\nname mandate\n" + mandateDecls},
		{"period first", "period week\n" + mandateAmount + "name mandate\n" + mandateDecls},
		{"on one line", "name mandate " + strings.TrimSuffix(mandateAmount, "\n") + " period week " + mandateDecls},
		{"last", "name mandate\n" + mandateDecls + mandateAmount + "period week\n"},
		{"between", "name mandate\n" + strings.Replace(mandateDecls, "requires {", "period week\n"+mandateAmount+"requires {", 1)},
		{"intent spelling and parentheses", "name mandate\namount (evidence.price) + (evidence.shipping * intent.units)\nperiod week\n" + mandateDecls},
		{"spaces and comments", "name mandate\namount # one purchase\n  evidence.price +\n evidence.shipping // shipped\n * parameters.units\nperiod # ISO\n week\n" + mandateDecls},
		{"its pretty form", base.Pretty()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.src)
			if p.Pretty() != mandateCanonical || p.ID() != base.ID() {
				t.Fatalf("printed:\n%s", p.Pretty())
			}
			d, err := Decode(p.Bytecode())
			if err != nil {
				t.Fatal(err)
			}
			if d.ID() != p.ID() || d.Pretty() != p.Pretty() || d.Period() != "week" || d.Reads() != p.Reads() {
				t.Fatalf("decoded: id %s, period %q, reads %v", d.ID(), d.Period(), d.Reads())
			}
		})
	}
	for _, w := range []string{"day", "week", "month"} {
		p := mustCompile(t, strings.Replace(mandateCanonical, "period week", "period "+w, 1))
		if p.Period() != w || !strings.Contains(p.Pretty(), "\nperiod "+w+"\n") {
			t.Fatalf("period %s: Period() = %q", w, p.Period())
		}
	}
	t.Run("amount alone", func(t *testing.T) {
		p := mustCompile(t, "name a\nevidence { price: int }\namount evidence.price\nrequires { purchase.amount < 5; }\n")
		want := "name a\n\namount evidence.price\n\nevidence {\n  price: int\n}\n\nrequires {\n  purchase.amount < 5;\n}\n"
		if p.Pretty() != want || p.Period() != "" || p.UsesMandate() || p.Reads() != PurchaseAmount {
			t.Fatalf("printed:\n%s\nPeriod %q, Reads %v", p.Pretty(), p.Period(), p.Reads())
		}
	})
	t.Run("words stay names", testMandateWords)
}

// testMandateWords: amount, period, mandate, purchase and decision are what they were
// where they do not start a part or name a context value: names of a policy, of
// fields, of parameters and evidence the constraints read.
func testMandateWords(t *testing.T) {
	for _, word := range []string{"amount", "period", "mandate", "purchase", "decision"} {
		src := "name " + word + "\nparameters { " + word + ": int }\nevidence { " + word + ": int, day: int }\n" +
			"requires { evidence." + word + " <= parameters." + word + "; intent." + word + " > evidence.day; }\n"
		p := mustCompile(t, src)
		if p.Period() != "" || p.Reads() != 0 || p.f.amount != nil {
			t.Fatalf("%s: a field called %s made the policy a mandate", src, word)
		}
		if q := mustCompile(t, p.Pretty()); q.ID() != p.ID() {
			t.Fatalf("%s: the pretty form is another policy", word)
		}
	}
	// A field called amount, read as the amount, and a period part after it.
	p := mustCompile(t, "name amount\nparameters { amount: int, period: int }\namount parameters.amount\nperiod month\n"+
		"requires { purchase.amount <= parameters.period; }\n")
	if p.Period() != "month" || !strings.Contains(p.Pretty(), "\namount parameters.amount\nperiod month\n") {
		t.Fatalf("printed:\n%s", p.Pretty())
	}
}

// mandateErrorTests are sources (whole, or the parts after "name x" and mandateErrDecls
// when they do not start with "name") and the first error each compiles to, exactly.
// mandateErrDecls spans lines 2 to 5: a part written after it is on line 6.
var mandateErrorTests = []struct {
	name, src, want string
}{
	{"repeated amount", "amount evidence.p\namount evidence.q",
		`7:1: repeated amount part (first at 6:1): a purchase has one amount`},
	{"repeated period", "amount evidence.p period day period week",
		`6:30: repeated period part (first at 6:19): the period totals count in one period`},
	{"unknown period", "amount evidence.p\nperiod year",
		`7:8: unknown period "year" (want day, week or month)`},
	{"a number for a period", "amount evidence.p\nperiod 7",
		`7:8: expected day, week or month after period (the calendar period, in UTC, that the period totals count in), found integer 7`},
	{"no period", "amount evidence.p\nperiod",
		`8:1: expected day, week or month after period (the calendar period, in UTC, that the period totals count in), found end of input`},
	{"no amount", "amount",
		`7:1: expected an int expression after amount (the amount of one purchase, such as evidence.price_cents), found end of input`},
	{"a part for an amount", "name x\namount\nrequires { true; }\n",
		`3:1: expected an int expression after amount (the amount of one purchase, such as evidence.price_cents), found "requires"`},
	{"a semicolon after the amount", "amount evidence.p;",
		`6:18: expected ` + sectionList + `, found ';'`},
	{"a bool amount", "amount evidence.p > 1",
		`6:8: the amount must be an int (the amount of one purchase): evidence.p > 1 is bool`},
	{"a string amount", "amount parameters.s",
		`6:8: the amount must be an int (the amount of one purchase): parameters.s is string`},
	{"an optional parameter", "name x\nparameters { fee: optional int }\nevidence { p: int }\namount evidence.p + intent.fee\nrequires { true; }\n",
		`4:21: the amount cannot read an optional parameter: parameters.fee is optional, and the purchases of an intent without it would have no amount`},
	{"an undeclared field", "amount evidence.nothing",
		`6:8: undeclared evidence field "nothing" (declared: p, q)`},
	{"the amount of the mandate", "amount evidence.p - mandate.spent",
		`6:21: the amount may read only evidence and parameters, not mandate.spent: it is the price of one purchase, whatever the mandate's totals or the time`},
	{"the amount of itself", "amount purchase.amount",
		`6:8: the amount may read only evidence and parameters, not purchase.amount: it is the price of one purchase, whatever the mandate's totals or the time`},
	{"the amount of the time", "amount evidence.p * decision.time",
		`6:21: the amount may read only evidence and parameters, not decision.time: it is the price of one purchase, whatever the mandate's totals or the time`},
	{"totals without an amount", "name x\nrequires { mandate.spent < 5; }\n",
		`2:12: mandate.spent needs an amount part (amount EXPR): the mandate's totals are sums of the amounts of its purchases`},
	{"a count without an amount", "name x\nrequires {\n  mandate.purchases < 5;\n}\n",
		`3:3: mandate.purchases needs an amount part (amount EXPR): the mandate's totals are sums of the amounts of its purchases`},
	{"a period count without either", "name x\nrequires { 1 < mandate.period_purchases; }\n",
		`2:16: mandate.period_purchases needs an amount part (amount EXPR): the mandate's totals are sums of the amounts of its purchases`},
	{"purchase.amount without an amount", "name x\nrequires { purchase.amount < 5; }\n",
		`2:12: purchase.amount needs an amount part (amount EXPR): it is the value of that expression`},
	{"a period total without a period", "name x\nevidence { p: int }\namount evidence.p\nrequires { mandate.period_spent < 5; }\n",
		`4:12: mandate.period_spent needs a period part (period day, week or month): the calendar period its total counts in`},
	{"a period count without a period", "name x\nevidence { p: int }\namount evidence.p\nrequires { mandate.period_purchases < 5; }\n",
		`4:12: mandate.period_purchases needs a period part (period day, week or month): the calendar period its total counts in`},
	{"a period without an amount", "name x\nperiod day\nrequires { true; }\n",
		`2:1: period needs an amount part (amount EXPR): the period totals are sums of the amounts of purchases`},
	{"an unknown mandate value", "name x\nrequires { mandate.total > 0; }\n",
		`2:12: unknown value mandate.total (want mandate.spent, mandate.purchases, mandate.period_spent or mandate.period_purchases)`},
	{"an unknown purchase value", "name x\nrequires { purchase.price > 0; }\n",
		`2:12: unknown value purchase.price (want purchase.amount)`},
	{"an unknown decision value", "name x\nrequires { decision.date > 0; }\n",
		`2:12: unknown value decision.date (want decision.time)`},
	{"no value name", "name x\nrequires { decision.7 > 0; }\n",
		`2:21: expected a value name after decision., found integer 7`},
	{"a bare word", "name x\nrequires { mandate > 0; }\n",
		`2:12: unknown name "mandate" (want parameters.mandate, evidence.mandate, a literal or a function call)`},
	{"a time of another type", "name x\nrequires { decision.time == \"now\"; }\n",
		`2:26: cannot compare decision.time (int) with "now" (string): the types differ`},
	{"too deep", "amount " + strings.Repeat("-(", 65) + "evidence.p" + strings.Repeat(")", 65),
		`6:72: expression nests deeper than the limit of 64 levels`},
}

// mandateErrDecls are the declarations the error tests' parts read.
const mandateErrDecls = `parameters { s: string }
evidence { p: int
  q: int }
requires { true; }
`

// TestMandateErrors covers each compile error of the mandate parts and values, with
// its position.
func TestMandateErrors(t *testing.T) {
	for _, tc := range mandateErrorTests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			if !strings.HasPrefix(src, "name") {
				src = "name x\n" + mandateErrDecls + src + "\n"
			}
			_, err := Compile(src)
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			if got := list[0].Error(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	t.Run("reported with the others", func(t *testing.T) {
		src := "name x\nperiod day\nevidence { p: int }\nrequires {\n  mandate.spent > 0;\n  evidence.p;\n  decision.time > 0;\n}\n"
		want := "2:1: period needs an amount part (amount EXPR): the period totals are sums of the amounts of purchases\n" +
			"5:3: mandate.spent needs an amount part (amount EXPR): the mandate's totals are sums of the amounts of its purchases\n" +
			"6:3: a constraint must be bool: evidence.p is int"
		if _, err := Compile(src); err == nil || err.Error() != want {
			t.Fatalf("got\n%v\nwant\n%s", err, want)
		}
	})
}

// TestMandateOlderDialect: without an evidence block, the fields the amount reads are
// inferred with the constraints', as ints.
func TestMandateOlderDialect(t *testing.T) {
	p := mustCompile(t, "name old\namount evidence.price + evidence.tax\nrequires { evidence.price > 0; purchase.amount < 100; }\n")
	want := []Field{{"price", TypeInt}, {"tax", TypeInt}}
	if !slices.Equal(p.EvidenceSchema(), want) {
		t.Fatalf("schema %v, want %v", p.EvidenceSchema(), want)
	}
	if d, err := Decode(p.Bytecode()); err != nil || d.ID() != p.ID() {
		t.Fatalf("decode: %v", err)
	}
	n, ok, err := p.Amount(nil, mustEvidence(t, `{"price": 90, "tax": 9}`))
	if n != 99 || !ok || err != nil {
		t.Fatalf("Amount = %d, %v, %v", n, ok, err)
	}
}

// TestIdentityMandate: the amount and period parts are part of the identity. Where
// they stand and how they are spelled do not change the id; having them, and what
// they say, do.
func TestIdentityMandate(t *testing.T) {
	base := mustCompile(t, mandateCanonical)
	differ := []struct{ name, src string }{
		{"another amount", strings.Replace(mandateCanonical, "* parameters.units", "+ parameters.units", 1)},
		{"another period", strings.Replace(mandateCanonical, "period week", "period day", 1)},
		{"another value", strings.Replace(mandateCanonical, "mandate.period_spent <=", "mandate.spent <=", 1)},
	}
	for _, tc := range differ {
		t.Run("differs/"+tc.name, func(t *testing.T) {
			if p := mustCompile(t, tc.src); p.ID() == base.ID() {
				t.Fatal("id did not change")
			}
		})
	}
	// Without a period or an amount, the constraints that need them go too.
	plain := "name p\nevidence { price: int }\nrequires { evidence.price < 5; }\n"
	withAmount := mustCompile(t, plain+"amount evidence.price\n")
	withPeriod := mustCompile(t, plain+"amount evidence.price\nperiod month\n")
	ids := map[string]bool{mustCompile(t, plain).ID(): true, withAmount.ID(): true, withPeriod.ID(): true}
	if len(ids) != 3 {
		t.Fatal("the amount or the period left the id as it was")
	}
}

// TestExampleMandate compiles docs/examples/mandate.policy, the demo catalog's t-shirts under
// a mandate: the delegated t-shirt purchase's evidence and constraints (but the brands,
// which it has no parameter for), an amount, a week, and the mandate's three limits.
func TestExampleMandate(t *testing.T) {
	read := func(name string) *Policy {
		b, err := os.ReadFile(filepath.Join("..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		return mustCompile(t, string(b))
	}
	p, delegated := mandateExample(t), read("delegated.policy")
	var params []string
	for _, d := range p.Parameters() {
		if d.Optional {
			t.Fatalf("parameter %s is optional", d.Name)
		}
		params = append(params, d.Name+": "+d.Type.String())
	}
	want := []string{"agents: set<string>", "budget_cents: int", "colors: set<string>", "max_price_cents: int",
		"max_purchases: int", "per_week: int", "size: string"}
	if !slices.Equal(params, want) {
		t.Fatalf("parameters %v, want %v", params, want)
	}
	if agents, ok := p.Agents(); !ok || agents != "agents" || p.Period() != "week" || !p.UsesMandate() {
		t.Fatalf("Agents %q %v, Period %q, UsesMandate %v", agents, ok, p.Period(), p.UsesMandate())
	}
	if p.Reads() != MandateSpent|MandatePurchases|MandatePeriodPurchases|PurchaseAmount {
		t.Fatalf("Reads() = %v", p.Reads())
	}
	if !slices.Equal(p.EvidenceSchema(), delegated.EvidenceSchema()) {
		t.Fatal("the evidence is not the delegated example's")
	}
	var got, wantCons []string
	for _, c := range p.cons {
		got = append(got, c.pretty)
	}
	for _, c := range delegated.cons {
		if !strings.Contains(c.pretty, "brands") {
			wantCons = append(wantCons, c.pretty)
		}
	}
	wantCons = append(wantCons, "mandate.spent + purchase.amount <= parameters.budget_cents",
		"mandate.purchases < parameters.max_purchases", "mandate.period_purchases < parameters.per_week")
	if !slices.Equal(got, wantCons) {
		t.Fatalf("constraints %q\nwant %q", got, wantCons)
	}
	if !strings.Contains(p.Pretty(), "\namount evidence.price_cents + evidence.shipping_cents\nperiod week\n") {
		t.Fatalf("printed:\n%s", p.Pretty())
	}
}

// TestReads: what Reads and UsesMandate report, and how a set of values is named.
func TestReads(t *testing.T) {
	head := "name r\nparameters { n: int }\nevidence { p: int }\namount evidence.p\nperiod day\nrequires { "
	tests := []struct {
		cons    string
		want    ContextValues
		mandate bool
		names   string
	}{
		{"parameters.n > 0;", 0, false, "none"},
		{"decision.time > parameters.n;", DecisionTime, false, "decision.time"},
		{"purchase.amount < 5 or true;", PurchaseAmount, false, "purchase.amount"},
		{"mandate.spent < 5; mandate.spent > 1;", MandateSpent, true, "mandate.spent"},
		{"mandate.period_purchases < 5;", MandatePeriodPurchases, true, "mandate.period_purchases"},
		{"mandate.purchases + mandate.period_spent < decision.time;", MandatePurchases | MandatePeriodSpent | DecisionTime, true,
			"mandate.purchases, mandate.period_spent, decision.time"},
	}
	for _, tc := range tests {
		t.Run(tc.cons, func(t *testing.T) {
			p := mustCompile(t, head+tc.cons+" }\n")
			if p.Reads() != tc.want || p.UsesMandate() != tc.mandate || p.Reads().String() != tc.names {
				t.Fatalf("Reads %v, UsesMandate %v", p.Reads(), p.UsesMandate())
			}
			if !p.Reads().Has(tc.want) || tc.want != 0 && p.Reads().Has(tc.want|1<<7) {
				t.Fatal("Has")
			}
		})
	}
}
