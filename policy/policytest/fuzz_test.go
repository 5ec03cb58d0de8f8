package policytest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/intentd/intentd/policy"
)

// FuzzDecode: Decode never panics or hangs, refuses with a FieldError, and what it
// accepts is a list of cases that keep the format's rules.
func FuzzDecode(f *testing.F) {
	for _, file := range []string{"../../examples/tshirt.tests.json", "../../docs/examples/mandate.tests.json"} {
		b, err := os.ReadFile(filepath.FromSlash(file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"[" + caseJSON + "]",
		`[{"name": "a", "evidence": {}, "expect": "success"}]`,
		`[{"name": "a", "evidence": {"x": [1, "b", null]}, "expect": "failure", "failing": [0, 255], "failure_kind": "evidence"}]`,
		`[{"name": "a", "evidence": {}, "decision": {"time": "2026-11-23T10:00:00.5-07:00"}, "mandate": {}, "expect": "success"}]`,
		`[{"name": "a", "name": "a"}]`, `[]`, `{}`, `[[[[[[[[[[]]]]]]]]]]`, "[\"\\ud800\"]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := Decode(data)
		if err != nil {
			var fe *policy.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T, want a *policy.FieldError: %v", err, err)
			}
			if cases != nil {
				t.Fatal("cases beside an error")
			}
			return
		}
		if len(cases) == 0 {
			t.Fatal("no cases and no error")
		}
		names := map[string]bool{}
		for _, c := range cases {
			if c.Name == "" || names[c.Name] {
				t.Fatalf("empty or repeated name %q", c.Name)
			}
			names[c.Name] = true
			if c.Evidence == nil {
				t.Fatalf("case %q: nil evidence", c.Name)
			}
			switch {
			case c.Expect == Success && (len(c.Failing) > 0 || c.FailureKind != ""):
				t.Fatalf("case %q: success with failing %v kind %q", c.Name, c.Failing, c.FailureKind)
			case c.Expect == Failure && len(c.Failing) == 0:
				t.Fatalf("case %q: failure without failing constraints", c.Name)
			case c.Expect != Success && c.Expect != Failure:
				t.Fatalf("case %q: expect %q", c.Name, c.Expect)
			}
			if !slices.IsSorted(c.Failing) || len(slices.Compact(slices.Clone(c.Failing))) != len(c.Failing) {
				t.Fatalf("case %q: failing %v not sorted or repeated", c.Name, c.Failing)
			}
			if c.Context.Spent < 0 || c.Context.Purchases < 0 || c.Context.PeriodSpent < 0 || c.Context.PeriodPurchases < 0 {
				t.Fatalf("case %q: negative totals %+v", c.Name, c.Context)
			}
		}
	})
}
