package policy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// evalHeader declares one of each type, so that a table row is one constraint.
const evalHeader = `name eval
parameters {
  s: string
  n: int
  b: bool
  ss: set<string>
  is: set<int>
  o: optional int
  os: optional set<string>
}
evidence {
  s: string
  t: string
  n: int
  m: int
  b: bool
  ss: set<string>
  is: set<int>
}
requires {
`

const evalAttrs = `{"fields": {"s": {"String": "M"}, "n": {"Int": 10}, "b": {"Bool": true},
  "ss": {"Set": {"String": ["b", "a"]}}, "is": {"Set": {"Int": [3, 1, 2]}}}}`

// evalCase is one constraint under evalHeader, the evidence and attrs it is evaluated
// on, and what the evaluation gives.
type evalCase struct {
	name       string
	constraint string
	evidence   string
	attrs      string // evalAttrs when empty
	reason     string // "" when the constraint holds; else a part of the reason
}

// evalCases are the cases of TestEvaluate: each operator and function holding and
// failing, and evidence and attrs of the wrong shape.
var evalCases = []evalCase{
	{"eq holds", `evidence.n == 5`, `{"n": 5}`, "", ""},
	{"eq fails", `evidence.n == 5`, `{"n": 6}`, "", `evidence.n = 6, which is not == 5`},
	{"ne holds", `evidence.n != 5`, `{"n": 6}`, "", ""},
	{"ne fails", `evidence.n != 5`, `{"n": 5}`, "", `evidence.n = 5, which is not != 5`},
	{"lt holds", `evidence.n < 5`, `{"n": 4}`, "", ""},
	{"lt fails", `evidence.n < 5`, `{"n": 5}`, "", `evidence.n = 5, which is not < 5`},
	{"le holds", `evidence.n <= 5`, `{"n": 5}`, "", ""},
	{"le fails", `evidence.n <= 5`, `{"n": 6}`, "", `which is not <= 5`},
	{"gt holds", `evidence.n > parameters.n`, `{"n": 11}`, "", ""},
	{"gt fails", `evidence.n > parameters.n`, `{"n": 10}`, "", `evidence.n = 10, which is not > parameters.n = 10`},
	{"ge holds", `evidence.n >= 5`, `{"n": 5}`, "", ""},
	{"ge fails", `evidence.n >= 5`, `{"n": -3}`, "", `evidence.n = -3, which is not >= 5`},
	{"string eq", `evidence.s == parameters.s`, `{"s": "M"}`, "", ""},
	{"string eq fails", `evidence.s == parameters.s`, `{"s": "L"}`, "", `evidence.s = "L", which is not == parameters.s = "M"`},
	{"bool eq", `evidence.b == false`, `{"b": false}`, "", ""},
	{"set eq ignores order and repeats", `evidence.ss == parameters.ss`, `{"ss": ["a", "b", "a"]}`, "", ""},
	{"set eq fails", `evidence.ss == parameters.ss`, `{"ss": ["a"]}`, "", `evidence.ss = {"a"}, which is not == parameters.ss = {"a", "b"}`},
	{"in literal", `evidence.s in {"M", "L"}`, `{"s": "L"}`, "", ""},
	{"in literal fails", `evidence.s in {"M", "L"}`, `{"s": "S"}`, "", `evidence.s = "S", which is not in {"L", "M"}`},
	{"in parameter", `evidence.n in parameters.is`, `{"n": 2}`, "", ""},
	{"in parameter fails", `evidence.n in parameters.is`, `{"n": 4}`, "", `evidence.n = 4, which is not in parameters.is = {1, 2, 3}`},
	{"not in", `evidence.s not in {"black"}`, `{"s": "navy"}`, "", ""},
	{"not in fails", `evidence.s not in {"black"}`, `{"s": "black"}`, "", `evidence.s = "black", which is in {"black"}`},
	{"negative set elements", `evidence.n in {-5, 0}`, `{"n": -5}`, "", ""},
	{"add", `evidence.n + evidence.m == 7`, `{"n": 3, "m": 4}`, "", ""},
	{"add fails", `evidence.n + evidence.m <= 5`, `{"n": 3, "m": 4}`, "", `evidence.n + evidence.m = 7, which is not <= 5`},
	{"sub", `evidence.n - evidence.m == -1`, `{"n": 3, "m": 4}`, "", ""},
	{"mul", `evidence.n * 3 == 12`, `{"n": 4}`, "", ""},
	{"precedence", `1 + evidence.n * 3 == 13`, `{"n": 4}`, "", ""},
	{"neg", `-evidence.n == -4`, `{"n": 4}`, "", ""},
	{"min int literal", `evidence.n > -9223372036854775808`, `{"n": 0}`, "", ""},
	{"add overflow", `evidence.n + 1 > 0`, `{"n": 9223372036854775807}`, "", `evidence.n + 1 overflows int64: 9223372036854775807 + 1`},
	{"sub overflow", `evidence.n - 1 < 0`, `{"n": -9223372036854775808}`, "", `overflows int64`},
	{"mul overflow", `evidence.n * evidence.m > 0`, `{"n": 4294967296, "m": 4294967296}`, "", `evidence.n * evidence.m overflows int64: 4294967296 * 4294967296`},
	{"mul overflow min", `evidence.n * -1 > 0`, `{"n": -9223372036854775808}`, "", `overflows int64`},
	{"neg overflow", `-evidence.n > 0`, `{"n": -9223372036854775808}`, "", `-evidence.n overflows int64: -(-9223372036854775808)`},
	{"and", `evidence.b and evidence.n == 1`, `{"b": true, "n": 1}`, "", ""},
	{"and fails left", `evidence.b && evidence.n == 1`, `{"b": false, "n": 1}`, "", `evidence.b is false`},
	{"and fails right", `evidence.b and evidence.n == 1`, `{"b": true, "n": 2}`, "", `evidence.n = 2, which is not == 1`},
	{"and stops early", `evidence.b and evidence.n == 1`, `{"b": false}`, "", `evidence.b is false`},
	{"or", `evidence.b or evidence.n == 1`, `{"b": false, "n": 1}`, "", ""},
	{"or stops early", `evidence.b || evidence.n == 1`, `{"b": true}`, "", ""},
	{"or fails", `evidence.b or evidence.n == 1`, `{"b": false, "n": 2}`, "", `evidence.b is false, and evidence.n = 2, which is not == 1`},
	{"or reads left first", `evidence.n == 1 or evidence.b`, `{"b": true}`, "", `evidence.n is missing from the evidence`},
	{"not", `not evidence.b`, `{"b": false}`, "", ""},
	{"not fails", `!evidence.b`, `{"b": true}`, "", `evidence.b is true`},
	{"not of comparison", `not evidence.n == 1`, `{"n": 1}`, "", `evidence.n = 1, which is == 1`},
	{"chain", `1 <= evidence.n <= 10`, `{"n": 10}`, "", ""},
	{"chain fails last link", `1 <= evidence.n <= 10`, `{"n": 11}`, "", `evidence.n = 11, which is not <= 10`},
	{"chain fails first link", `1 <= evidence.n <= 10`, `{"n": 0}`, "", `1, which is not <= evidence.n = 0`},
	{"chain stops early", `evidence.n < 0 < evidence.m`, `{"n": 5}`, "", `evidence.n = 5, which is not < 0`},
	{"chain of four", `evidence.n < evidence.m < 10 != 11`, `{"n": 1, "m": 2}`, "", ""},
	{"len string counts characters", `len(evidence.s) == 3`, `{"s": "héé"}`, "", ""},
	{"len set counts distinct", `len(evidence.ss) == 2`, `{"ss": ["a", "b", "a"]}`, "", ""},
	{"len fails", `len(evidence.s) > 3`, `{"s": "abc"}`, "", `len(evidence.s) = 3, which is not > 3`},
	{"lower", `lower(evidence.s) == "navy"`, `{"s": "NaVy"}`, "", ""},
	{"upper", `upper(evidence.s) == "NAVY"`, `{"s": "NaVy"}`, "", ""},
	{"contains", `contains(evidence.s, "cot")`, `{"s": "cotton"}`, "", ""},
	{"contains fails", `contains(evidence.s, "silk")`, `{"s": "cotton"}`, "", `contains(evidence.s, "silk") is false, with evidence.s = "cotton"`},
	{"starts_with", `starts_with(evidence.s, "co")`, `{"s": "cotton"}`, "", ""},
	{"starts_with fails", `starts_with(evidence.s, "x")`, `{"s": "cotton"}`, "", `is false`},
	{"ends_with", `ends_with(evidence.s, "on")`, `{"s": "cotton"}`, "", ""},
	{"ends_with fails", `ends_with(evidence.s, "co")`, `{"s": "cotton"}`, "", `is false`},
	{"subset", `subset(evidence.ss, parameters.ss)`, `{"ss": ["a"]}`, "", ""},
	{"subset of empty", `subset(evidence.ss, parameters.ss)`, `{"ss": []}`, "", ""},
	{"subset fails", `subset(evidence.ss, parameters.ss)`, `{"ss": ["a", "c"]}`, "", `subset(evidence.ss, parameters.ss) is false, with evidence.ss = {"a", "c"} and parameters.ss = {"a", "b"}`},
	{"intersects", `intersects(evidence.is, parameters.is)`, `{"is": [9, 3]}`, "", ""},
	{"intersects fails", `intersects(evidence.is, parameters.is)`, `{"is": [9]}`, "", `is false`},
	{"bare bool fails", `evidence.b`, `{"b": false}`, "", `evidence.b is false`},
	{"literal false", `false`, `{}`, "", `the constraint is the literal false`},
	{"missing evidence", `evidence.s == "x"`, `{}`, "", `evidence.s is missing from the evidence`},
	{"string for int", `evidence.n == 1`, `{"n": "1"}`, "", `evidence.n: want int, got the string "1"`},
	{"fraction for int", `evidence.n == 1`, `{"n": 19.5}`, "", `evidence.n: want int, got 19.5 (a number with a fraction or an exponent)`},
	{"exponent for int", `evidence.n == 1000`, `{"n": 1e3}`, "", `got 1e3 (a number with a fraction or an exponent)`},
	{"int out of range", `evidence.n == 1`, `{"n": 9223372036854775808}`, "", `evidence.n: want int, got 9223372036854775808 (out of the int64 range)`},
	{"null", `evidence.s == "x"`, `{"s": null}`, "", `evidence.s: want string, got null`},
	{"bool for string", `evidence.s == "x"`, `{"s": true}`, "", `want string, got the boolean true`},
	{"object", `evidence.s == "x"`, `{"s": {}}`, "", `want string, got an object`},
	{"number in string set", `evidence.s in evidence.ss`, `{"s": "a", "ss": ["a", 1]}`, "", `evidence.ss: want set<string>, got an array whose element 1 is the number 1`},
	{"string in int set", `1 in evidence.is`, `{"is": ["1"]}`, "", `evidence.is: want set<int>, got an array whose element 0 is bad`},
	{"absent optional parameter", `parameters.o > 0`, `{}`, "", `parameters.o is absent from the intent`},
	{"optional constraint, absent", `optional: parameters.o > 0`, `{}`, "", ""},
	{"optional constraint, present", `optional: parameters.o > 0`, `{}`, `{"fields": {"s": {"String": "M"}, "n": {"Int": 10}, "b": {"Bool": true}, "ss": {"Set": {"String": []}}, "is": {"Set": {"Int": []}}, "o": {"Int": -1}}}`, `parameters.o = -1, which is not > 0`},
	{"optional constraint, evidence still read", `optional: evidence.s in parameters.os`, `{}`, `{"fields": {"s": {"String": "M"}, "n": {"Int": 10}, "b": {"Bool": true}, "ss": {"Set": {"String": []}}, "is": {"Set": {"Int": []}}, "os": {"Set": {"String": ["x"]}}}}`, `evidence.s is missing from the evidence`},
	{"missing required parameter", `parameters.s == "M"`, `{}`, `{"fields": {}}`, `parameters.s is missing from the intent`},
	{"parameter of the wrong type", `parameters.s == "M"`, `{}`, `{"fields": {"s": {"Int": 1}}}`, `parameters.s: want string, got int`},
}

func TestEvaluate(t *testing.T) {
	for _, tc := range evalCases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, evalHeader+"  "+tc.constraint+";\n}\n")
			attrs := tc.attrs
			if attrs == "" {
				attrs = evalAttrs
			}
			fails := p.Evaluate(mustAttrs(t, attrs), mustEvidence(t, tc.evidence))
			if tc.reason == "" {
				if len(fails) != 0 {
					t.Fatalf("want it to hold, got %+v", fails)
				}
				return
			}
			if len(fails) != 1 {
				t.Fatalf("want one failure, got %+v", fails)
			}
			f := fails[0]
			if f.Index != 0 || f.PrettyExpr != p.cons[0].pretty || !strings.Contains(f.Reason, tc.reason) {
				t.Fatalf("got %+v\nwant a reason containing %q", f, tc.reason)
			}
			// The decoded policy decides the same, for the same reason.
			q, err := Decode(p.Bytecode())
			if err != nil {
				t.Fatal(err)
			}
			if g := q.Evaluate(mustAttrs(t, attrs), mustEvidence(t, tc.evidence)); !reflect.DeepEqual(g, fails) {
				t.Fatalf("decoded policy: %+v, compiled: %+v", g, fails)
			}
		})
	}
}

func TestEvaluateGoValues(t *testing.T) {
	p := mustCompile(t, evalHeader+`  evidence.n == 5; evidence.m == 6; evidence.ss == {"a"}; evidence.is == {1, 2};
  evidence.n + evidence.m == 11;
}`)
	attrs := mustAttrs(t, evalAttrs)
	tests := []struct {
		name string
		ev   map[string]any
		fail []int
	}{
		{"int and int64", map[string]any{"n": 5, "m": int64(6), "ss": []string{"a"}, "is": []int64{2, 1}}, nil},
		{"int slice", map[string]any{"n": 5, "m": 6, "ss": []any{"a"}, "is": []int{1, 2}}, nil},
		{"float64 is refused", map[string]any{"n": 5.0, "m": 6, "ss": []string{"a"}, "is": []int{1, 2}}, []int{0, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, f := range p.Evaluate(attrs, tc.ev) {
				got = append(got, f.Index)
				if !strings.Contains(f.Reason, "floating-point") {
					t.Errorf("reason %q does not say what is wrong", f.Reason)
				}
			}
			if !reflect.DeepEqual(got, tc.fail) {
				t.Fatalf("failures %v, want %v", got, tc.fail)
			}
		})
	}
}

func TestEvaluateReportsEveryFailure(t *testing.T) {
	p := mustCompile(t, example)
	attrs := mustAttrs(t, exampleAttrs)
	if f := p.Evaluate(attrs, mustEvidence(t, examplePassing)); f != nil {
		t.Fatalf("passing evidence: %+v", f)
	}
	ev := mustEvidence(t, `{"category": "dress", "size": "M", "color": "black", "price_cents": 2999, "shipping_cents": 500}`)
	got := p.Evaluate(attrs, ev)
	want := []Failure{
		{0, `evidence.category in {"polo", "t-shirt"}`, `evidence.category = "dress", which is not in {"polo", "t-shirt"}`, nil},
		{2, `evidence.color in parameters.colors`, `evidence.color = "black", which is not in parameters.colors = {"navy", "red"}`, nil},
		{3, `evidence.color not in {"black"}`, `evidence.color = "black", which is in {"black"}`, nil},
		{4, `evidence.price_cents + evidence.shipping_cents <= parameters.max_price_cents`, `evidence.price_cents + evidence.shipping_cents = 3499, which is not <= parameters.max_price_cents = 3000`, nil},
		{5, `evidence.in_stock`, `evidence.in_stock is missing from the evidence`, []string{"in_stock"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	// The wire form of a failure.
	b, _ := json.Marshal(got[4])
	if string(b) != `{"index":5,"pretty_expr":"evidence.in_stock","reason":"evidence.in_stock is missing from the evidence"}` {
		t.Fatalf("JSON %s", b)
	}
	// Brands given: the optional constraint is evaluated.
	withBrands := mustAttrs(t, `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["navy"]}}, "max_price_cents": {"Int": 3000}, "brands": {"Set": {"String": ["other"]}}}}`)
	got = p.Evaluate(withBrands, mustEvidence(t, examplePassing))
	if len(got) != 1 || got[0].Index != 6 || got[0].Reason != `evidence.brand = "acme", which is not in parameters.brands = {"other"}` {
		t.Fatalf("got %+v", got)
	}
}

// A failure names the evidence fields it could not use, and only those: a field the
// evaluation stopped at, absent or of another type than declared. A failure on evidence
// that is there names none, whatever else the evidence lacks.
func TestEvaluateMissingEvidence(t *testing.T) {
	tests := []struct {
		name       string
		constraint string
		evidence   string
		want       []string // nil: the failure is a violation; the constraint never holds here
	}{
		{"absent", `evidence.n == 1`, `{}`, []string{"n"}},
		{"null", `evidence.s == "x"`, `{"s": null}`, []string{"s"}},
		{"wrong type", `evidence.n == 1`, `{"n": "1"}`, []string{"n"}},
		{"fraction for int", `evidence.n > 0`, `{"n": 0.5}`, []string{"n"}},
		{"bad set element", `"a" in evidence.ss`, `{"ss": ["a", 1]}`, []string{"ss"}},
		{"present and violating", `evidence.n == 1`, `{"n": 2}`, nil},
		{"first of two absent fields stops the evaluation", `evidence.n + evidence.m == 1`, `{}`, []string{"n"}},
		{"second field absent", `evidence.n + evidence.m == 1`, `{"n": 0}`, []string{"m"}},
		{"and decided before the absent field", `evidence.b and evidence.n == 1`, `{"b": false}`, nil},
		{"and reaches the absent field", `evidence.b and evidence.n == 1`, `{"b": true}`, []string{"n"}},
		{"or reaches the absent field", `evidence.b or evidence.n == 1`, `{"b": false}`, []string{"n"}},
		{"chain decided before the absent field", `evidence.n < 0 < evidence.m`, `{"n": 5}`, nil},
		{"chain reaches the absent field", `evidence.n < 0 < evidence.m`, `{"n": -1}`, []string{"m"}},
		{"function argument", `contains(evidence.s, "x")`, `{}`, []string{"s"}},
		{"overflow is not missing evidence", `evidence.n + 1 > 0`, `{"n": 9223372036854775807}`, nil},
		{"absent parameter is not missing evidence", `parameters.o > 0`, `{}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, evalHeader+"  "+tc.constraint+";\n}\n")
			fails := p.Evaluate(mustAttrs(t, evalAttrs), mustEvidence(t, tc.evidence))
			if len(fails) != 1 {
				t.Fatalf("got %d failures, want 1: %+v", len(fails), fails)
			}
			if !reflect.DeepEqual(fails[0].MissingEvidence, tc.want) {
				t.Fatalf("MissingEvidence = %q, want %q (reason %q)", fails[0].MissingEvidence, tc.want, fails[0].Reason)
			}
			// The wire form is the spec's ConstraintFailure: three fields, no more.
			b, err := json.Marshal(fails[0])
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil || len(m) != 3 {
				t.Fatalf("wire form %s", b)
			}
		})
	}
}

// Evaluation is a function of its arguments: the same inputs, many times and at once,
// give the same failures.
func TestEvaluateDeterministic(t *testing.T) {
	p := mustCompile(t, example)
	attrs := mustAttrs(t, exampleAttrs)
	ev := mustEvidence(t, `{"category": "dress", "color": "black", "price_cents": 99999999, "shipping_cents": 1}`)
	want := p.Evaluate(attrs, ev)
	done := make(chan []Failure)
	for i := 0; i < 8; i++ {
		go func() {
			var last []Failure
			for j := 0; j < 50; j++ {
				last = p.Evaluate(attrs, ev)
			}
			done <- last
		}()
	}
	for i := 0; i < 8; i++ {
		if got := <-done; !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
}
