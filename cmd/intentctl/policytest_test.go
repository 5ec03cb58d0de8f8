package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd/internal/golden"
)

// TestPolicyTestExamples runs policy test on the folders of the example policies, as
// the docs show it from the clone's root, and compares the report with a golden file
// (go test -update rewrites it). Every case passes and every policy is covered whole.
func TestPolicyTestExamples(t *testing.T) {
	goldens, err := filepath.Abs(filepath.Join("testdata", "policytest"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join("..", ".."))
	for _, dir := range []string{"examples", "docs/examples"} {
		t.Run(dir, func(t *testing.T) {
			r := runCLI(t, "http://127.0.0.1:1", "policy", "test", dir, "--threshold", "100")
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("exit %d, want 0; stderr:\n%s\nstdout:\n%s", r.code, r.stderr, r.stdout)
			}
			golden.Check(t, filepath.Join(goldens, strings.ReplaceAll(dir, "/", "-")+".golden"), r.stdout)
		})
	}
}

// writeFolder writes files into a fresh folder: name to contents.
func writeFolder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// budgetPolicy has two constraints, so four outcomes to see.
const budgetPolicy = `name budget
parameters { max: int }
evidence { price: int; in_stock: bool }
requires {
  evidence.price <= parameters.max;
  evidence.in_stock;
}
`

// budgetCase is a case of budgetPolicy: a price against a budget of 100, in stock.
func budgetCase(name string, price int, expect string) string {
	failing := ""
	if expect == "failure" {
		failing = `, "failing": [0]`
	}
	return fmt.Sprintf(`{"name": %q, "attrs": {"fields": {"max": {"Int": 100}}}, "evidence": {"price": %d, "in_stock": true}, "expect": %q%s}`,
		name, price, expect, failing)
}

func TestPolicyTestOutcomes(t *testing.T) {
	passing := "[" + budgetCase("cheap", 50, "success") + "]"
	tests := []struct {
		name   string
		files  map[string]string
		args   []string
		code   int
		stdout []string // in the output, in this order
		stderr string
	}{
		{name: "every case passes, half covered",
			files: map[string]string{"budget.policy": budgetPolicy, "budget.tests.json": passing},
			code:  exitOK,
			stdout: []string{"budget.policy  budget  ", "  pass  cheap -> success\n", "  coverage 50.0 % (2 of 4 constraint outcomes)\n",
				"    index  passing  failing  constraint\n    0      yes      no       evidence.price <= parameters.max\n",
				"1 policy tested, 1 case: 1 passed, 0 failed; coverage 50.0 % (2 of 4 constraint outcomes)\n"}},
		{name: "below the threshold",
			files: map[string]string{"budget.policy": budgetPolicy, "budget.tests.json": passing},
			args:  []string{"--threshold", "75"},
			code:  exitRefused, stderr: "coverage below --threshold 75 %: ", stdout: []string{"1 passed, 0 failed"}},
		{name: "at the threshold",
			files: map[string]string{"budget.policy": budgetPolicy, "budget.tests.json": passing},
			args:  []string{"--threshold", "50"}, code: exitOK},
		{name: "a case fails",
			files: map[string]string{"budget.policy": budgetPolicy, "budget.tests.json": "[" + budgetCase("dear", 150, "success") + "]"},
			code:  exitRefused,
			stdout: []string{"  FAIL  dear -> failure [0] (constraints)\n        outcome: want success, got failure of constraint 0\n",
				"        constraint 0 failed  evidence.price <= parameters.max\n          evidence.price = 150, which is not <= parameters.max = 100\n",
				"coverage 50.0 % (2 of 4"},
			stderr: "intentctl policy: 1 of 1 case failed\n"},
		{name: "a constraint expected to fail holds",
			files: map[string]string{"budget.policy": budgetPolicy, "budget.tests.json": "[" + budgetCase("cheap", 50, "failure") + "]"},
			code:  exitRefused,
			stdout: []string{"  FAIL  cheap -> success\n        outcome: want failure of constraint 0, got success\n" +
				"        constraint 0 held  evidence.price <= parameters.max\n          expected to fail\n"}},
		{name: "a test file that does not decode",
			files: map[string]string{"budget.policy": budgetPolicy, "budget.tests.json": `[{"name": "a", "evidence": {}, "expect": "success", "extra": 1}]`},
			code:  exitRefused,
			stdout: []string{"budget.policy: ERROR ", `budget.tests.json: [0].extra: unknown member`,
				"0 policies tested, 0 cases: 0 passed, 0 failed; 1 could not be tested\n"},
			stderr: "intentctl policy: 1 policy could not be tested\n"},
		{name: "a policy that does not compile",
			files:  map[string]string{"budget.policy": "name x\nrequires { evidence.a == ; }", "budget.tests.json": passing},
			code:   exitRefused,
			stdout: []string{"budget.policy: ERROR does not compile: 2:26: expected an expression, found ';'"}},
		{name: "a test file without its policy",
			files:  map[string]string{"other.policy": budgetPolicy, "budget.tests.json": passing, "other.tests.json": passing},
			code:   exitRefused,
			stdout: []string{"budget.policy: ERROR no such file, but budget.tests.json tests it\n", "other.policy  budget"}},
		{name: "a policy without tests is listed, not counted",
			files:  map[string]string{"budget.policy": budgetPolicy, "budget.tests.json": passing, "untested.policy": "not even a policy"},
			args:   []string{"--threshold", "50"},
			code:   exitOK,
			stdout: []string{"untested.policy: not tested (no untested.tests.json beside it)\n", "; 1 without tests\n"}},
		{name: "no test files",
			files: map[string]string{"budget.policy": budgetPolicy},
			code:  exitRefused, stderr: "holds no NAME.tests.json: nothing to test"},
		{name: "threshold out of range",
			files: map[string]string{"budget.policy": budgetPolicy, "budget.tests.json": passing},
			args:  []string{"--threshold", "101"},
			code:  exitUsage, stderr: "--threshold 101: want a percentage from 0 to 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFolder(t, tt.files)
			r := runCLI(t, "http://127.0.0.1:1", append([]string{"policy", "test", dir}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nstdout:\n%s", r.code, tt.code, r.stderr, r.stdout)
			}
			wantInOrder(t, r.stdout, tt.stdout)
			if !strings.Contains(r.stderr, tt.stderr) || tt.code == exitOK && r.stderr != "" {
				t.Errorf("stderr %q, want %q", r.stderr, tt.stderr)
			}
		})
	}
}

func TestPolicyTestUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"policy", "test", filepath.Join(t.TempDir(), "absent")}, "no such file or directory"},
		{[]string{"policy", "test"}, "want push FILE, get ID, delete ID, check FILE, test DIR or diff OLD NEW"},
		{[]string{"policy", "push", "examples/tshirt.policy", "--threshold", "5"}, "flag provided but not defined: -threshold"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runCLI(t, "http://127.0.0.1:1", tt.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitUsage, tt.want)
			}
		})
	}
	r := runCLI(t, "http://127.0.0.1:1", "policy", "test", "-h")
	if r.code != exitOK || !strings.Contains(r.stdout, "Usage: intentctl policy test DIR [--threshold N]\n") || !strings.Contains(r.stdout, "-threshold float") {
		t.Errorf("policy test -h: exit %d\n%s", r.code, r.stdout)
	}
}

// TestPolicyTestJSON reads the --json report of a folder with a failing case.
func TestPolicyTestJSON(t *testing.T) {
	dir := writeFolder(t, map[string]string{"budget.policy": budgetPolicy,
		"budget.tests.json": "[" + budgetCase("cheap", 50, "success") + "," + budgetCase("dear", 150, "success") + "]"})
	r := runCLI(t, "http://127.0.0.1:1", "--json", "policy", "test", dir)
	if r.code != exitRefused {
		t.Fatalf("exit %d, want %d; stderr %s", r.code, exitRefused, r.stderr)
	}
	var rep struct {
		Policies []struct {
			File, Name, ID string
			Cases          []struct {
				Name   string
				Passed bool
				Expect struct{ Outcome string }
				Got    struct {
					Outcome     string
					Failing     []int
					FailureKind string `json:"failure_kind"`
					Failures    []struct {
						Index              int
						PrettyExpr, Reason string
					}
				}
				Diffs []string
			}
			Coverage struct {
				Seen, Outcomes int
				Percent        float64
				Constraints    []struct {
					Index            int
					Text             string
					Passing, Failing bool
				}
			}
		}
		Cases, Passed, Failed int
		OK                    bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	if rep.OK || rep.Cases != 2 || rep.Passed != 1 || rep.Failed != 1 || len(rep.Policies) != 1 {
		t.Fatalf("report %+v", rep)
	}
	p := rep.Policies[0]
	dear := p.Cases[1]
	if p.Name != "budget" || dear.Passed || dear.Got.Outcome != "failure" || dear.Got.FailureKind != "constraints" ||
		len(dear.Got.Failures) != 1 || dear.Got.Failures[0].Reason != "evidence.price = 150, which is not <= parameters.max = 100" || len(dear.Diffs) != 1 {
		t.Errorf("case dear: %+v", dear)
	}
	if p.Coverage.Seen != 3 || p.Coverage.Outcomes != 4 || p.Coverage.Percent != 75 ||
		!p.Coverage.Constraints[0].Passing || !p.Coverage.Constraints[0].Failing || p.Coverage.Constraints[1].Failing {
		t.Errorf("coverage %+v", p.Coverage)
	}
}
