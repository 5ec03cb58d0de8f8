package policy_test

import (
	"context"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/policy/smt"
)

var analysisRounds = flag.Int("analysis.rounds", 2000, "generated policies TestAnalyzeAgainstSearch decides")

// slowMachine is the time a test gives the solver for a question whose answer it
// asserts: ample, so that a loaded machine does not turn an answer into unknown.
const slowMachine = 20 * time.Second

// generatedTimeout is the time of a question about a generated policy: what a solver
// does not settle in it is counted unknown, which the tests bound, and most of the
// corpus's time went to waiting out the default on the few such questions.
const generatedTimeout = 500 * time.Millisecond

// solverOrSkip is the named solver, or a skip saying how to install it.
func solverOrSkip(t testing.TB, name string) *smt.Solver {
	t.Helper()
	s, err := smt.Find(name)
	if err != nil {
		t.Skipf("%v (apt-get install cvc5 z3)", err)
	}
	return s
}

func compile(t testing.TB, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Compile(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return p
}

func analyze(t testing.TB, p *policy.Policy, s policy.Solver, opt policy.AnalyzeOptions) *policy.Analysis {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := policy.Analyze(ctx, p, s, opt)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Pretty())
	}
	return a
}

// TestAnalyzeAgainstSearch decides thousands of generated policies (half with sets)
// with cvc5 and checks each answer with judges that share none of its code: a policy
// said satisfiable has a witness the VM passes; one said unsatisfiable has no passing
// intent and evidence over small domains, and, without sets, z3 does not find it
// satisfiable either.
func TestAnalyzeAgainstSearch(t *testing.T) {
	cvc5 := solverOrSkip(t, "cvc5")
	z3, z3err := smt.Find("z3")
	if z3err != nil {
		t.Logf("no cross-check with z3: %v", z3err)
	}
	n := *analysisRounds
	if testing.Short() {
		n /= 10
	}
	var sat, unsat, unknown, z3checked int
	start := time.Now()
	for seed := range n {
		sets := seed%2 == 1
		src := newAgen(uint64(seed), sets).source()
		p := compile(t, src)
		a := analyze(t, p, cvc5, policy.AnalyzeOptions{SatisfiableOnly: true, CheckTimeout: generatedTimeout})
		switch {
		case a.Satisfiable:
			sat++
			if ok, failed, err := a.Witness.Run(p); err != nil || !ok || len(failed) > 0 {
				t.Fatalf("seed %d: witness %+v fails %v (%v)\n%s", seed, a.Witness, failed, err, src)
			}
		case len(a.Unknown) > 0:
			unknown++
			continue
		default:
			unsat++
			search(p, sets, func(w *policy.Witness, failed []int) bool {
				if len(failed) == 0 {
					t.Fatalf("seed %d: said unsatisfiable, and %+v passes\n%s", seed, w, src)
				}
				return true
			})
		}
		if z3 != nil && !sets {
			b := analyze(t, p, z3, policy.AnalyzeOptions{SatisfiableOnly: true, CheckTimeout: generatedTimeout})
			if len(b.Unknown) == 0 {
				z3checked++
				if b.Satisfiable != a.Satisfiable {
					t.Fatalf("seed %d: cvc5 says satisfiable %v, z3 %v\n%s", seed, a.Satisfiable, b.Satisfiable, src)
				}
			}
		}
	}
	t.Logf("%d policies: %d satisfiable, %d not, %d unknown; %d also decided by z3; %v a policy", n, sat, unsat, unknown, z3checked, time.Since(start)/time.Duration(n))
	if unknown > n/20 {
		t.Errorf("%d of %d policies undecided", unknown, n)
	}
	if unsat < n/20 || sat < n/20 {
		t.Errorf("the generator gives %d satisfiable and %d unsatisfiable policies of %d: too few of one to judge", sat, unsat, n)
	}
}

// TestAnalyzeFindingsAgainstSearch runs the whole analysis on generated policies and
// checks each finding, and each witness, against the search.
func TestAnalyzeFindingsAgainstSearch(t *testing.T) {
	cvc5 := solverOrSkip(t, "cvc5")
	n := *analysisRounds / 10
	if testing.Short() {
		n /= 10
	}
	kinds := map[string]int{}
	for seed := range n {
		sets := seed%2 == 1
		src := newAgen(uint64(seed)+1<<32, sets).source()
		p := compile(t, src)
		a := analyze(t, p, cvc5, policy.AnalyzeOptions{CheckTimeout: generatedTimeout})
		for _, f := range a.Findings {
			kinds[f.Kind]++
			checkFinding(t, p, sets, f, src)
		}
	}
	t.Logf("%d policies: findings %v", n, kinds)
	// The generator's optional: constraints seldom come out unreachable; the examples
	// (TestAnalyzeExamples) have one.
	for _, k := range []string{policy.FindingNever, policy.FindingAlways, policy.FindingImplied} {
		if kinds[k] == 0 {
			t.Errorf("no finding of kind %s among %d generated policies: the generator does not exercise it", k, n)
		}
	}
}

// checkFinding checks a finding against the search: no intent and evidence of the
// small domains contradicts it, and its witness does what the finding says.
func checkFinding(t *testing.T, p *policy.Policy, sets bool, f policy.Finding, src string) {
	t.Helper()
	i := f.Constraint
	holds := func(failed []int, k int) bool { return !slices.Contains(failed, k) }
	optional := isOptional(p, i)
	search(p, sets, func(w *policy.Witness, failed []int) bool {
		if _, given := w.Attrs["po"]; optional && !given {
			return true // the constraint is skipped, not evaluated
		}
		switch f.Kind {
		case policy.FindingNever:
			all := holds(failed, i)
			for _, k := range f.Given {
				all = all && holds(failed, k)
			}
			if all {
				t.Fatalf("constraint %d said never (given %v), and holds on %+v\n%s", i, f.Given, w, src)
			}
		case policy.FindingAlways:
			if !holds(failed, i) {
				t.Fatalf("constraint %d said always, and fails on %+v\n%s", i, w, src)
			}
		case policy.FindingImplied, policy.FindingUnreachable:
			if slices.Equal(failed, []int{i}) {
				t.Fatalf("constraint %d said %s by %v, and alone fails on %+v\n%s", i, f.Kind, f.Given, w, src)
			}
		}
		return true
	})
	if f.Witness == nil {
		return
	}
	ok, failed, err := f.Witness.Run(p)
	if err != nil || !ok {
		t.Fatalf("finding %+v: witness not an intent of the policy (%v)\n%s", f, err, src)
	}
	switch f.Kind {
	case policy.FindingNever:
		if len(f.Given) == 0 && !slices.Equal(failed, []int{i}) || len(f.Given) > 0 && !holds(failed, i) {
			t.Fatalf("finding %+v: its witness fails %v\n%s", f, failed, src)
		}
	case policy.FindingAlways:
		if !holds(failed, i) {
			t.Fatalf("finding %+v: its witness fails %v\n%s", f, failed, src)
		}
	default:
		if len(failed) > 0 {
			t.Fatalf("finding %+v: its witness fails %v\n%s", f, failed, src)
		}
	}
}

func isOptional(p *policy.Policy, i int) bool { return p.Constraints()[i].Optional }

// TestAnalyzeUnsupported: what the analysis cannot say exactly, it refuses, naming it.
func TestAnalyzeUnsupported(t *testing.T) {
	tests := []struct {
		name, solver, src, want string
	}{
		{"an evidence field of no type", "cvc5", "name a\nrequires { evidence.a == evidence.b; }", "evidence.a, whose type the policy leaves open"},
		{"sets with z3", "z3", "name a\nevidence { s: set<string> }\nrequires { \"x\" in evidence.s; }", "sets with z3"},
		{"a character beyond U+2FFFF", "cvc5", "name a\nevidence { s: string }\nrequires { evidence.s == \"\\udb40\\udc01\"; }", "U+E0001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := solverOrSkip(t, tt.solver)
			_, err := policy.Analyze(context.Background(), compile(t, tt.src), s, policy.AnalyzeOptions{})
			if !errors.Is(err, policy.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrUnsupported naming %q", err, tt.want)
			}
		})
	}
}
