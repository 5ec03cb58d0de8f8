package policy

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

// seedSources are the sources of testdata/, the corpus every fuzz target starts from.
func seedSources(f *testing.F) []string {
	var out []string
	for _, dir := range []string{"pretty", "errors"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.src"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	return append(out, example, identityBase, agentsBase,
		"agents intent.k\nname x\nparameters { k: set<string>, n: int }\nrequires { parameters.n > 0; }",
		"name x\nagents parameters.n\nparameters { n: int }\nrequires { true; }",
		"name x\nagents parameters.k agents intent.k\nparameters { k: optional set<string> }\nrequires { true; }",
		mandateCanonical,
		"period day amount evidence.p name x\nrequires { mandate.period_purchases < 2 or purchase.amount * 2 > decision.time; }",
		"name x\namount -evidence.p\nperiod month\nrequires { mandate.spent + mandate.period_spent >= 0; }",
		"name x\nparameters { until: int }\nrequires { decision.time <= parameters.until; }",
		"name x\namount len(evidence.s) - 9223372036854775807\nrequires { not (purchase.amount in {1, 2}); }",
		"name x\nperiod week\nrequires { mandate.period_spent > 0; }",
		"name x\namount evidence.p + mandate.spent\nrequires { mandate.total > 0; decision.time; }",
		"name x\nrequires { "+string(make([]byte, 0))+"((((((((((true)))))))))); }",
		"name x\nrequires { - -9223372036854775808 < 1 < 2 == 3; }",
		"name x\nrequires { \"\\ud83d\\ude00\" in {\"\\u0000\"}; }",
		"name x\nrequires { evidence.a in evidence.b; len(evidence.c) == evidence.d; }",
	)
}

// FuzzCompile: Compile never panics or hangs; what compiles prints to a text that
// compiles to the same id, decodes from its bytecode, and evaluates.
func FuzzCompile(f *testing.F) {
	for _, s := range seedSources(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error is not an ErrorList: %v", err)
			}
			for i, e := range list {
				if e.Pos.Line < 1 || e.Pos.Col < 1 || i > 0 && e.Pos.before(list[i-1].Pos) {
					t.Fatalf("bad or unsorted position: %v", list)
				}
			}
			return
		}
		q, err := Compile(p.Pretty())
		if err != nil || q.ID() != p.ID() || q.Pretty() != p.Pretty() {
			t.Fatalf("pretty form: %v\n%s", err, p.Pretty())
		}
		d, err := Decode(p.Bytecode())
		if err != nil || d.ID() != p.ID() || !sameAgents(d, p) || !sameAgents(q, p) || !sameMandate(d, p) || !sameMandate(q, p) {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(p.Evaluate(nil, nil), d.Evaluate(nil, nil)) {
			t.Fatal("decoded policy evaluates differently")
		}
		c := Context{Spent: 1, Purchases: 2, PeriodSpent: 3, PeriodPurchases: 4, Time: time.Unix(5, 0)}
		if !reflect.DeepEqual(p.EvaluateIn(nil, nil, c), d.EvaluateIn(nil, nil, c)) {
			t.Fatal("decoded policy evaluates differently in a context")
		}
		residualsAgree(t, p, c)
	})
}

// residualsAgree checks the requirements of an intent without attrs against the
// policy on no evidence: what holds or fails whatever the evidence does so on this one,
// and each residual holds, or fails with the same missing evidence, when the
// constraint does; every residual parses back.
func residualsAgree(t *testing.T, p *Policy, c Context) {
	t.Helper()
	req := p.Requirements(nil)
	failed := map[int]Failure{}
	for _, f := range p.EvaluateIn(nil, nil, c) {
		failed[f.Index] = f
	}
	for _, r := range req.Constraints {
		f, fails := failed[r.Index]
		if r.State == ResidualHolds && fails || r.State == ResidualFails && !fails {
			t.Fatalf("constraint %d %s is %s, but fails is %v: %s", r.Index, r.PrettyExpr, r.State, fails, f.Reason)
		}
		if r.x == nil {
			continue
		}
		if holds, missing := evalResidual(p, nil, nil, c, r.x); holds == fails || !slices.Equal(missing, f.MissingEvidence) {
			t.Fatalf("constraint %d %s: residual %s holds %v (missing %v)", r.Index, r.PrettyExpr, r.Residual, holds, missing)
		}
	}
	checkParsesBack(t, p, req.Constraints)
}

// FuzzDecode: Decode never panics; what it accepts is exactly what the compiler
// writes for the policy it prints.
func FuzzDecode(f *testing.F) {
	for _, s := range seedSources(f) {
		if p, err := Compile(s); err == nil {
			b := p.Bytecode()
			f.Add(b)
			f.Add(b[:len(b)/2])
		}
	}
	f.Add([]byte("IPOL\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			return
		}
		if string(p.Bytecode()) != string(b) {
			t.Fatal("decoded to other bytecode")
		}
		q, err := Compile(p.Pretty())
		if err != nil || q.ID() != p.ID() || !sameAgents(q, p) || !sameMandate(q, p) {
			t.Fatalf("pretty form of decoded bytecode: %v\n%s", err, p.Pretty())
		}
		p.Evaluate(nil, map[string]any{})
		p.EvaluateIn(nil, map[string]any{}, Context{Spent: math.MaxInt64, Time: time.Unix(-1, 0)})
		p.Amount(nil, map[string]any{})
	})
}

// FuzzDecodeAttrs: DecodeAttrs never panics, and what it accepts marshals to JSON
// that decodes to the same attributes and marshals the same again.
func FuzzDecodeAttrs(f *testing.F) {
	for _, s := range []string{
		exampleAttrs, evalAttrs, `{"fields": {}}`, `{"fields": {"a": {"Int": -0}}}`,
		`{"fields": {"a": {"Set": {"Int": [1, 1e2]}}}}`, `{"fields": {"a": {"String": "\ud800"}}}`,
		`{"fields": {"a": {"Bool": true, "Bool": false}}}`, `{"fields": {"a": {"Set": {"String": ["x", null]}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAttrs(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a *FieldError: %v", err)
			}
			return
		}
		out, err := a.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b, err := DecodeAttrs(out)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		if len(a) != len(b) {
			t.Fatal("fields lost")
		}
		for k := range a {
			if !a[k].equal(b[k]) || !reflect.DeepEqual(a[k].Strings(), b[k].Strings()) || !reflect.DeepEqual(a[k].Ints(), b[k].Ints()) {
				t.Fatalf("%s: %v != %v", k, a[k], b[k])
			}
		}
		again, _ := b.MarshalJSON()
		if string(again) != string(out) {
			t.Fatalf("marshal is not stable: %s vs %s", out, again)
		}
	})
}
