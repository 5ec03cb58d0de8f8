package policy_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/policy"
)

// TestAnalyzeExamples: a finding of each kind, as docs/policy-language.md shows them,
// and policies that have none.
func TestAnalyzeExamples(t *testing.T) {
	cvc5 := solverOrSkip(t, "cvc5")
	tests := []struct {
		name, requires string
		satisfiable    bool
		want           string // the findings, "index:kind[given]" joined by spaces
		unknown        bool   // the satisfiability is beyond the solver
	}{
		{"nothing to find", `evidence.price <= parameters.max; evidence.size == parameters.size;`, true, "", false},
		{"never alone", `100 <= evidence.price <= 50;`, false, "0:never[]", false},
		{"never given the ones before", `evidence.price <= 50; evidence.size == "M"; evidence.price > 60;`, false, "2:never[0]", false},
		{"always", `evidence.price <= 9223372036854775807; evidence.size == parameters.size;`, true, "0:always[]", false},
		{"an overflow is no always", `evidence.price + 1 > evidence.price;`, true, "", false},
		{"implied", `evidence.price < parameters.max; evidence.price <= parameters.max;`, true, "1:implied[0]", false},
		{"an overflow keeps it from being implied", `evidence.price <= parameters.max; evidence.price <= parameters.max + 10;`, true, "", false},
		{"equal constraints imply each other", `evidence.size == "M"; "M" == evidence.size;`, true, "0:implied[1] 1:implied[0]", false},
		{"unreachable", `evidence.price <= 20; optional: evidence.price <= parameters.cap + 30 or parameters.cap > 5;`, true, "", false},
		{"an optional that never decides", `evidence.price <= 20; optional: evidence.price < parameters.cap or evidence.price <= 25;`, true, "1:unreachable[0]", false},
		{"an optional that can never hold when given", `optional: parameters.cap < parameters.cap;`, true, "0:never[]", false},
		{"case mapping within ASCII", `lower(evidence.size) == "m"; evidence.size != "m";`, true, "", false},
		// Only the Kelvin sign, U+212A, lowers to "k" beyond "k" and "K": the solver
		// learns the case mapping one witness at a time, and gives up.
		{"case mapping beyond ASCII", `lower(evidence.size) == "k"; evidence.size != "k"; evidence.size != "K";`, false, "", true},
		{"lower keeps the length", `len(lower(evidence.size)) != len(evidence.size);`, false, "0:never[]", false},
		{"sets", `len(parameters.colors) >= 2; subset(parameters.colors, {"red"});`, false, "1:never[0]", false},
		{"the decision time", `decision.time <= parameters.until;`, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "name example\nparameters {\n  max: int\n  size: string\n  cap: optional int\n  colors: set<string>\n  until: int\n}\n" +
				"evidence {\n  price: int\n  size: string\n}\nrequires {\n" + tt.requires + "\n}\n"
			p := compile(t, src)
			a := analyze(t, p, cvc5, policy.AnalyzeOptions{CheckTimeout: slowMachine})
			var got []string
			for _, f := range a.Findings {
				got = append(got, fmt.Sprintf("%d:%s%v", f.Constraint, f.Kind, f.Given))
				checkFinding(t, p, false, f, src)
			}
			if (len(a.Unknown) > 0) != tt.unknown || a.Satisfiable != tt.satisfiable || strings.Join(got, " ") != tt.want {
				t.Fatalf("satisfiable %v, findings %q, unknown %+v; want %v, %q", a.Satisfiable, got, a.Unknown, tt.satisfiable, tt.want)
			}
			if a.Satisfiable && !passes(t, p, a.Witness) {
				t.Fatalf("witness %+v does not pass", a.Witness)
			}
		})
	}
}

func passes(t *testing.T, p *policy.Policy, w *policy.Witness) bool {
	ok, failed, err := w.Run(p)
	if err != nil {
		t.Fatal(err)
	}
	return ok && len(failed) == 0
}

// TestAnalyzeUnknown: a question beyond what the solver decides in its time is
// reported unknown, not guessed.
func TestAnalyzeUnknown(t *testing.T) {
	cvc5 := solverOrSkip(t, "cvc5")
	p := compile(t, "name a\nevidence {\n  x: int\n  y: int\n  z: int\n}\nrequires {\n  evidence.x * evidence.x * evidence.x + evidence.y * evidence.y * evidence.y == evidence.z * evidence.z * evidence.z + 33;\n}\n")
	a := analyze(t, p, cvc5, policy.AnalyzeOptions{CheckTimeout: 200 * time.Millisecond, SatisfiableOnly: true})
	if a.Satisfiable || len(a.Unknown) != 1 || a.Unknown[0].Question != "satisfiable" {
		t.Fatalf("got %+v, want the satisfiability unknown", a)
	}
}

// TestCompare: the docs' t-shirt policy against itself with one <= made <, which
// accepts less: the old version accepts a purchase at exactly the budget.
func TestCompare(t *testing.T) {
	cvc5 := solverOrSkip(t, "cvc5")
	raw, err := os.ReadFile("../examples/tshirt.policy")
	if err != nil {
		t.Fatal(err)
	}
	old := compile(t, string(raw))
	strict := compile(t, strings.Replace(string(raw), "<= parameters.max_price_cents", "< parameters.max_price_cents", 1))
	reordered := compile(t, strings.Replace(string(raw), "evidence.in_stock;", "evidence.in_stock == true;", 1))
	ctx := context.Background()

	d, err := policy.Compare(ctx, old, strict, cvc5, policy.AnalyzeOptions{CheckTimeout: slowMachine})
	if err != nil {
		t.Fatal(err)
	}
	if d.Equivalent || d.NewAcceptsMore != nil || d.OldAcceptsMore == nil || len(d.Unknown) > 0 {
		t.Fatalf("got %+v, want only the old version accepting more", d)
	}
	w := d.OldAcceptsMore
	if !passes(t, old, w) || passes(t, strict, w) {
		t.Fatalf("witness %+v: want the old version to pass it and the new one not", w)
	}
	ev := w.Evidence
	if ev["price_cents"].(int64)+ev["shipping_cents"].(int64) != w.Attrs["max_price_cents"].Int() {
		t.Fatalf("witness %+v is not at the boundary", w)
	}

	d, err = policy.Compare(ctx, old, reordered, cvc5, policy.AnalyzeOptions{CheckTimeout: slowMachine})
	if err != nil || !d.Equivalent || d.NewAcceptsMore != nil || d.OldAcceptsMore != nil {
		t.Fatalf("got %+v, %v; want equivalent", d, err)
	}
}

// TestCompareParameters: a parameter the new version adds, or types otherwise, makes
// intents one version refuses at once.
func TestCompareParameters(t *testing.T) {
	cvc5 := solverOrSkip(t, "cvc5")
	old := compile(t, "name a\nparameters { max: int }\nevidence { p: int }\nrequires { evidence.p <= parameters.max; }")
	tests := []struct {
		name, src string
		newMore   bool
		oldMore   bool
	}{
		{"a required parameter added", "name a\nparameters {\n max: int\n cap: int\n}\nevidence { p: int }\nrequires { evidence.p <= parameters.max; }", true, true},
		{"an optional parameter added", "name a\nparameters {\n max: int\n cap: optional int\n}\nevidence { p: int }\nrequires { evidence.p <= parameters.max; }", true, false},
		{"the type changed", "name a\nparameters { max: string }\nevidence { p: int }\nrequires { len(parameters.max) >= evidence.p; }", true, true},
		{"the same", "name b\nparameters { max: int }\nevidence { p: int }\nrequires { parameters.max >= evidence.p; }", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			new := compile(t, tt.src)
			d, err := policy.Compare(context.Background(), old, new, cvc5, policy.AnalyzeOptions{CheckTimeout: slowMachine})
			if err != nil {
				t.Fatal(err)
			}
			if (d.NewAcceptsMore != nil) != tt.newMore || (d.OldAcceptsMore != nil) != tt.oldMore || d.Equivalent != (!tt.newMore && !tt.oldMore) {
				t.Fatalf("got %+v", d)
			}
			if w := d.NewAcceptsMore; w != nil && (!passes(t, new, w) || passes(t, old, w)) {
				t.Fatalf("new_accepts_more %+v does not show it", w)
			}
			if w := d.OldAcceptsMore; w != nil && (!passes(t, old, w) || passes(t, new, w)) {
				t.Fatalf("old_accepts_more %+v does not show it", w)
			}
		})
	}
}
