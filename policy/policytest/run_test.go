package policytest

import (
	"slices"
	"strings"
	"testing"

	"github.com/intentd/intentd/policy"
)

// windowPolicy reads a parameter, an optional one, evidence and the decision's time:
// constraint 0 holds for a price within the budget, 1 is optional, 2 reads the time.
const windowPolicy = `name window
parameters {
  max: int
  colors: optional set<string>
  until: int
}
evidence {
  price: int
  color: string
}
requires {
  evidence.price <= parameters.max;
  optional: evidence.color in parameters.colors;
  decision.time <= parameters.until;
}
`

// kindOf is the engine's rule, written again for the tests of a package that may not
// import the engine: evidence when every failure names missing evidence.
func kindOf(fs []policy.Failure) string {
	for _, f := range fs {
		if len(f.MissingEvidence) == 0 {
			return KindConstraints
		}
	}
	return KindEvidence
}

func decodeOne(t *testing.T, js string) Case {
	t.Helper()
	cases, err := Decode([]byte("[" + js + "]"))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return cases[0]
}

func TestRunCase(t *testing.T) {
	p, err := policy.Compile(windowPolicy)
	if err != nil {
		t.Fatal(err)
	}
	const attrs = `"attrs": {"fields": {"max": {"Int": 100}, "until": {"Int": 1795435200}}}`
	const before = `"decision": {"time": "2026-11-23T10:00:00Z"}` // 1795428000
	tests := []struct {
		name     string
		js       string
		passed   bool
		failing  []int
		kind     string
		diffs    []string
		err      string
		failures []string // the reasons, in order
	}{
		{name: "within budget, in time", passed: true,
			js: `{"name": "a", ` + attrs + `, "evidence": {"price": 99}, ` + before + `, "expect": "success"}`},
		{name: "no decision time fails the constraint that reads it",
			js:     `{"name": "a", ` + attrs + `, "evidence": {"price": 99}, "expect": "failure", "failing": [2], "failure_kind": "constraints"}`,
			passed: true, failing: []int{2}, kind: KindConstraints,
			failures: []string{"decision.time"}},
		{name: "too late",
			js:     `{"name": "a", ` + attrs + `, "evidence": {"price": 99}, "decision": {"time": "2026-11-24T00:00:00Z"}, "expect": "success"}`,
			passed: false, failing: []int{2}, kind: KindConstraints,
			diffs: []string{"outcome: want success, got failure of constraint 2"}},
		{name: "missing evidence is of kind evidence",
			js:     `{"name": "a", ` + attrs + `, "evidence": {}, ` + before + `, "expect": "failure", "failing": [0], "failure_kind": "constraints"}`,
			passed: false, failing: []int{0}, kind: KindEvidence,
			diffs:    []string{"failure kind: want constraints, got evidence"},
			failures: []string{"evidence.price is missing from the evidence"}},
		{name: "other constraints fail",
			js:     `{"name": "a", ` + attrs + `, "evidence": {"price": 101}, "expect": "failure", "failing": [0, 1]}`,
			passed: false, failing: []int{0, 2}, kind: KindConstraints,
			diffs: []string{"failing constraints: want constraints 0 and 1, got constraints 0 and 2"}},
		{name: "expected failure, got success",
			js:     `{"name": "a", ` + attrs + `, "evidence": {"price": 1}, ` + before + `, "expect": "failure", "failing": [0]}`,
			passed: false,
			diffs:  []string{"outcome: want failure of constraint 0, got success"}},
		{name: "attrs the service refuses",
			js:  `{"name": "a", "attrs": {"fields": {"max": {"String": "100"}}}, "evidence": {}, "expect": "success"}`,
			err: "attrs: fields.max: want int, got string (the service refuses such an intent)"},
		{name: "a failing index the policy lacks",
			js:  `{"name": "a", ` + attrs + `, "evidence": {}, "expect": "failure", "failing": [0, 3]}`,
			err: "failing: the policy has no constraint 3 (it has 3, 0 to 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := decodeOne(t, tt.js)
			res := runCase(p, &c, kindOf)
			if tt.err != "" {
				if res.Err == nil || res.Err.Error() != tt.err {
					t.Fatalf("error %v, want %q", res.Err, tt.err)
				}
				if res.Passed() {
					t.Error("a case that did not run passed")
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Passed() != tt.passed || !slices.Equal(res.Failing, tt.failing) || res.FailureKind != tt.kind || !slices.Equal(res.Diffs, tt.diffs) {
				t.Errorf("passed %v failing %v kind %q diffs %q, want %v %v %q %q",
					res.Passed(), res.Failing, res.FailureKind, res.Diffs, tt.passed, tt.failing, tt.kind, tt.diffs)
			}
			for i, want := range tt.failures {
				if !strings.Contains(res.Failures[i].Reason, want) {
					t.Errorf("reason %d %q, want it to contain %q", i, res.Failures[i].Reason, want)
				}
			}
		})
	}
}

func TestRunCoverage(t *testing.T) {
	p, err := policy.Compile(windowPolicy)
	if err != nil {
		t.Fatal(err)
	}
	const attrs = `"attrs": {"fields": {"max": {"Int": 100}, "until": {"Int": 1795435200}}}`
	const colors = `"attrs": {"fields": {"max": {"Int": 100}, "until": {"Int": 1795435200}, "colors": {"Set": {"String": ["navy"]}}}}`
	const at = `"decision": {"time": "2026-11-23T10:00:00Z"}`
	type seen struct{ passing, failing bool }
	tests := []struct {
		name    string
		cases   []string
		want    []seen
		percent float64
	}{
		{"a skipped optional constraint is not seen passing",
			[]string{`{"name": "a", ` + attrs + `, "evidence": {"price": 1}, ` + at + `, "expect": "success"}`},
			[]seen{{true, false}, {false, false}, {true, false}}, 100 * 2.0 / 6},
		{"an evaluated optional constraint is",
			[]string{`{"name": "a", ` + colors + `, "evidence": {"price": 1, "color": "navy"}, ` + at + `, "expect": "success"}`},
			[]seen{{true, false}, {true, false}, {true, false}}, 50},
		{"a case that failed counts, one that did not run does not",
			[]string{
				`{"name": "a", ` + colors + `, "evidence": {"price": 101, "color": "red"}, "expect": "success"}`,
				`{"name": "b", "evidence": {"price": 1}, ` + at + `, "expect": "success"}`,
			},
			[]seen{{false, true}, {false, true}, {false, true}}, 50},
		{"every outcome",
			[]string{
				`{"name": "a", ` + colors + `, "evidence": {"price": 101, "color": "red"}, "expect": "failure", "failing": [0, 1, 2]}`,
				`{"name": "b", ` + colors + `, "evidence": {"price": 1, "color": "navy"}, ` + at + `, "expect": "success"}`,
			},
			[]seen{{true, true}, {true, true}, {true, true}}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cases []Case
			for _, js := range tt.cases {
				cases = append(cases, decodeOne(t, js))
			}
			rep := Run(p, cases, kindOf)
			for i, k := range rep.Coverage {
				if k.Index != i || (seen{k.Passing, k.Failing}) != tt.want[i] {
					t.Errorf("constraint %d: index %d passing %v failing %v, want %+v", i, k.Index, k.Passing, k.Failing, tt.want[i])
				}
			}
			if got := rep.Coverage.Percent(); got != tt.percent {
				t.Errorf("percent %v, want %v", got, tt.percent)
			}
			if rep.Coverage.Outcomes() != 6 {
				t.Errorf("outcomes %d, want 6", rep.Coverage.Outcomes())
			}
		})
	}
}

func TestCoverageReaches(t *testing.T) {
	// 7 of 8 outcomes: 87.5 %.
	cov := make(Coverage, 4)
	for i := range cov {
		cov[i].Passing, cov[i].Failing = true, i > 0
	}
	tests := []struct {
		threshold float64
		want      bool
	}{{0, true}, {87.5, true}, {87.50001, false}, {100, false}}
	for _, tt := range tests {
		if got := cov.Reaches(tt.threshold); got != tt.want {
			t.Errorf("Reaches(%v) = %v, want %v (%d of %d)", tt.threshold, got, tt.want, cov.Seen(), cov.Outcomes())
		}
	}
	if !(Coverage{}).Reaches(100) || (Coverage{}).Percent() != 100 {
		t.Error("no constraints: want 100 %, nothing left to see")
	}
}

func TestIndexList(t *testing.T) {
	for ix, want := range map[string]string{"": "no constraint", "4": "constraint 4", "1 2": "constraints 1 and 2", "1 2 3": "constraints 1, 2 and 3"} {
		var n []int
		for _, f := range strings.Fields(ix) {
			n = append(n, int(f[0]-'0'))
		}
		if got := indexList(n); got != want {
			t.Errorf("indexList(%v) = %q, want %q", n, got, want)
		}
	}
}
