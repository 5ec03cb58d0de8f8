package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/policy/smt"
)

const noServer = "http://127.0.0.1:1"

func needSolver(t *testing.T) {
	t.Helper()
	if _, err := smt.Find(""); err != nil {
		t.Skipf("%v (apt-get install cvc5)", err)
	}
}

func compileFile(t *testing.T, file string) *policy.Policy {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compile(string(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicyCheckAnalysis: policy check prints the id, then the analysis; --json
// prints the members tools rely on, with a witness the policy passes, and it exits 0
// whatever it finds.
func TestPolicyCheckAnalysis(t *testing.T) {
	needSolver(t)
	r := runCLI(t, noServer, "policy", "check", "../../examples/tshirt.policy")
	p := compileFile(t, "../../examples/tshirt.policy")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantInOrder(t, r.stdout, []string{p.ID() + "\n", "satisfiable: yes, for example\n", "  attrs     {", "  evidence  {", "no findings"})

	never := filepath.Join(t.TempDir(), "never.policy")
	os.WriteFile(never, []byte("name never\nparameters { max: int }\nevidence { p: int }\nrequires {\n  evidence.p <= parameters.max;\n  100 <= evidence.p <= 50;\n  evidence.p <= 9223372036854775807;\n}\n"), 0o644)
	r = runCLI(t, noServer, "policy", "check", never)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantInOrder(t, r.stdout, []string{"satisfiable: no: nothing passes constraints 1 together", "constraint 1, never: 100 <= evidence.p <= 50",
		"constraint 2, always: evidence.p <= 9223372036854775807", "  for example\n"})

	r = runCLI(t, noServer, "--json", "policy", "check", never)
	var got struct {
		ID          string `json:"id"`
		Satisfiable *bool  `json:"satisfiable"`
		Witness     *policy.Witness
		Findings    []struct {
			Constraint int             `json:"constraint"`
			Kind       string          `json:"kind"`
			Witness    json.RawMessage `json:"witness"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
	}
	if got.Satisfiable == nil || *got.Satisfiable || got.Witness != nil || len(got.Findings) != 2 || got.Findings[0].Kind != "never" || got.Findings[1].Kind != "always" {
		t.Fatalf("got %s", r.stdout)
	}

	r = runCLI(t, noServer, "--json", "policy", "check", "../../examples/tshirt.policy")
	var ok struct {
		Satisfiable bool            `json:"satisfiable"`
		Witness     *policy.Witness `json:"witness"`
	}
	json.Unmarshal([]byte(r.stdout), &ok)
	if passed, failed, err := ok.Witness.Run(p); !ok.Satisfiable || err != nil || !passed || len(failed) > 0 {
		t.Fatalf("the witness of %s fails %v (%v)", r.stdout, failed, err)
	}
}

// TestPolicyCheckSolver: a solver that is not one is refused by name; without the
// analysis the text still gives the id (the policy compiles), and --json fails.
func TestPolicyCheckSolver(t *testing.T) {
	r := runCLI(t, noServer, "policy", "check", "--solver", "/bin/true", "../../examples/tshirt.policy")
	if r.code == 0 || !strings.Contains(r.stderr, "neither cvc5 nor z3") {
		t.Fatalf("got %+v", r)
	}
	t.Setenv("PATH", t.TempDir())
	r = runCLI(t, noServer, "policy", "check", "../../examples/tshirt.policy")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "\n") || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stderr, "not analysed: smt: no SMT solver found") {
		t.Fatalf("without a solver: %+v", r)
	}
	r = runCLI(t, noServer, "--json", "policy", "check", "../../examples/tshirt.policy")
	if r.code == 0 || !strings.Contains(r.stderr, "install cvc5") {
		t.Fatalf("--json without a solver: %+v", r)
	}
}

// TestPolicyDiff: the t-shirt policy against itself with <= made <: the old version
// accepts a purchase at exactly the budget, which the new one refuses.
func TestPolicyDiff(t *testing.T) {
	needSolver(t)
	src, err := os.ReadFile("../../examples/tshirt.policy")
	if err != nil {
		t.Fatal(err)
	}
	strict := filepath.Join(t.TempDir(), "strict.policy")
	os.WriteFile(strict, []byte(strings.Replace(string(src), "<= parameters.max_price_cents", "< parameters.max_price_cents", 1)), 0o644)
	r := runCLI(t, noServer, "--json", "policy", "diff", "../../examples/tshirt.policy", strict)
	var d struct {
		Equivalent     *bool           `json:"equivalent"`
		NewAcceptsMore *policy.Witness `json:"new_accepts_more"`
		OldAcceptsMore *policy.Witness `json:"old_accepts_more"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v: %s %s", r.code, err, r.stdout, r.stderr)
	}
	if d.Equivalent == nil || *d.Equivalent || d.NewAcceptsMore != nil || d.OldAcceptsMore == nil || !strings.Contains(r.stdout, `"new_accepts_more": null`) {
		t.Fatalf("got %s", r.stdout)
	}
	w := d.OldAcceptsMore
	price, _ := w.Evidence["price_cents"].(float64)
	shipping, _ := w.Evidence["shipping_cents"].(float64)
	if int64(price+shipping) != w.Attrs["max_price_cents"].Int() {
		t.Fatalf("the counterexample %s is not at the boundary", r.stdout)
	}
	old, neu := compileFile(t, "../../examples/tshirt.policy"), compileFile(t, strict)
	if a, f1, _ := w.Run(old); !a || len(f1) > 0 {
		t.Fatalf("the old policy refuses its own example: %v", f1)
	}
	if _, f2, _ := w.Run(neu); len(f2) != 1 || f2[0] != 4 {
		t.Fatalf("the new policy fails %v of the example, want constraint 4", f2)
	}

	r = runCLI(t, noServer, "policy", "diff", "../../examples/tshirt.policy", "../../examples/tshirt.policy")
	wantInOrder(t, r.stdout, []string{"old ", "new ", "equivalent: both accept exactly the same intents and evidence\n",
		"nothing that the new one accepts, the old one refuses\n", "nothing that the old one accepts, the new one refuses\n"})
}
