package policytest

import (
	"fmt"
	"slices"

	"github.com/intentd/intentd/policy"
)

// Classifier is the failure kind an evaluation's failures make, KindConstraints or
// KindEvidence, as the engine decides it (intentd.ClassifyFailures). It is given to
// Run rather than written here so that a test and the engine cannot disagree on it.
type Classifier func([]policy.Failure) string

// Result is one case's run.
type Result struct {
	// Case is the case run.
	Case *Case
	// Err is why the case could not be evaluated: attrs the service would refuse for
	// the policy, or a failing index the policy does not have. Outcome and the rest
	// are then empty.
	Err error
	// Outcome is Success or Failure, Failures the constraints that did not hold, with
	// their reasons, and Failing their indexes.
	Outcome  string
	Failures []policy.Failure
	Failing  []int
	// FailureKind is the kind of the failure, or "" on success.
	FailureKind string
	// Diffs say how the outcome differs from the one expected, one line each; none
	// when the case passed.
	Diffs []string
}

// Passed reports whether the case ran and gave what it expected.
func (r *Result) Passed() bool { return r.Err == nil && len(r.Diffs) == 0 }

// ConstraintCoverage is what the cases saw of one constraint.
type ConstraintCoverage struct {
	policy.Constraint
	// Passing is set when the constraint was evaluated and held in at least one case;
	// an optional constraint that held because an optional parameter it reads was
	// absent was not evaluated. Failing is set when it failed in at least one case.
	Passing, Failing bool
}

// Coverage is what the cases saw of each constraint of a policy.
type Coverage []ConstraintCoverage

// Seen is the number of constraint outcomes seen: a constraint seen passing counts one,
// seen failing one more.
func (c Coverage) Seen() int {
	n := 0
	for _, k := range c {
		if k.Passing {
			n++
		}
		if k.Failing {
			n++
		}
	}
	return n
}

// Outcomes is the number of constraint outcomes there are to see: two a constraint.
func (c Coverage) Outcomes() int { return 2 * len(c) }

// Percent is Seen as a percentage of Outcomes.
func (c Coverage) Percent() float64 {
	if len(c) == 0 {
		return 100
	}
	return 100 * float64(c.Seen()) / float64(c.Outcomes())
}

// Reaches reports whether the coverage is at least threshold percent, compared
// exactly: 7 of 8 outcomes reach 87.5 and not 87.6.
func (c Coverage) Reaches(threshold float64) bool {
	return float64(c.Seen())*100 >= threshold*float64(c.Outcomes())
}

// Report is a run of a policy's cases.
type Report struct {
	Results  []Result
	Coverage Coverage
}

// Passed is the number of cases that passed.
func (r *Report) Passed() int {
	n := 0
	for i := range r.Results {
		if r.Results[i].Passed() {
			n++
		}
	}
	return n
}

// Run evaluates each case on p, compares its outcome with the one expected, and
// records what the cases that could be evaluated saw of each constraint, whether
// they passed or not: coverage is of the evaluations, not of the expectations.
func Run(p *policy.Policy, cases []Case, classify Classifier) *Report {
	rep := &Report{Results: make([]Result, len(cases))}
	for _, k := range p.Constraints() {
		rep.Coverage = append(rep.Coverage, ConstraintCoverage{Constraint: k})
	}
	for i := range cases {
		res := &rep.Results[i]
		*res = runCase(p, &cases[i], classify)
		if res.Err != nil {
			continue
		}
		for k := range rep.Coverage {
			switch {
			case slices.Contains(res.Failing, k):
				rep.Coverage[k].Failing = true
			case !p.Skipped(k, cases[i].Attrs):
				rep.Coverage[k].Passing = true
			}
		}
	}
	return rep
}

// runCase evaluates one case as the engine decides a proposal.
func runCase(p *policy.Policy, c *Case, classify Classifier) Result {
	res := Result{Case: c}
	if err := p.CheckAttrs(c.Attrs); err != nil {
		res.Err = fmt.Errorf("attrs: %w (the service refuses such an intent)", err)
		return res
	}
	if n := p.NumConstraints(); len(c.Failing) > 0 && c.Failing[len(c.Failing)-1] >= n {
		res.Err = fmt.Errorf("failing: the policy has no constraint %d (it has %d, 0 to %d)", c.Failing[len(c.Failing)-1], n, n-1)
		return res
	}
	res.Failures = p.EvaluateIn(c.Attrs, c.Evidence, c.Context)
	res.Outcome = Success
	if len(res.Failures) > 0 {
		res.Outcome = Failure
		res.FailureKind = classify(res.Failures)
	}
	for _, f := range res.Failures {
		res.Failing = append(res.Failing, f.Index)
	}
	switch {
	case res.Outcome != c.Expect:
		res.Diffs = append(res.Diffs, fmt.Sprintf("outcome: want %s, got %s", describeOutcome(c.Expect, c.Failing), describeOutcome(res.Outcome, res.Failing)))
	case !slices.Equal(res.Failing, c.Failing):
		res.Diffs = append(res.Diffs, fmt.Sprintf("failing constraints: want %s, got %s", indexList(c.Failing), indexList(res.Failing)))
	}
	if c.FailureKind != "" && res.Outcome == Failure && res.FailureKind != c.FailureKind {
		res.Diffs = append(res.Diffs, fmt.Sprintf("failure kind: want %s, got %s", c.FailureKind, res.FailureKind))
	}
	return res
}

// describeOutcome is an outcome with its failing constraints.
func describeOutcome(outcome string, failing []int) string {
	if outcome == Success {
		return Success
	}
	return "failure of " + indexList(failing)
}

// indexList writes constraint indexes as "constraints 1, 2 and 3" or "constraint 4".
func indexList(ix []int) string {
	switch len(ix) {
	case 0:
		return "no constraint"
	case 1:
		return fmt.Sprintf("constraint %d", ix[0])
	}
	s := "constraints "
	for i, n := range ix {
		switch {
		case i == len(ix)-1:
			s += " and "
		case i > 0:
			s += ", "
		}
		s += fmt.Sprint(n)
	}
	return s
}
