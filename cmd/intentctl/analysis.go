package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/policy/smt"
)

// The analysis of policies, here and without a server: policy check FILE, which
// compiles and then analyses a policy, and policy diff OLD NEW. Both need an SMT
// solver on this machine (cvc5, or z3 for policies without sets).

// analysisFlags registers the analysis flags on the commands that analyse.
func analysisFlags(fs *flag.FlagSet, args []string) *string {
	solver := new(string)
	if len(args) > 0 && (args[0] == "check" || args[0] == "diff") {
		fs.StringVar(solver, "solver", "", "the SMT solver: cvc5 or z3, a name on PATH or a path (default cvc5, else z3)")
	}
	return solver
}

// checkReport is what policy check --json prints: the compiler's account of the
// policy, and the analysis.
type checkReport struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Parameters  []map[string]any `json:"parameters"`
	Constraints int              `json:"constraints"`
	*policy.Analysis
}

// analyse runs the analysis of p. Without a solver it returns smt.ErrNotFound.
func (c *cli) analyse(p *policy.Policy, solverName string) (*policy.Analysis, error) {
	s, err := smt.Find(solverName)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.g.timeout)
	defer cancel()
	return policy.Analyze(ctx, p, s, policy.AnalyzeOptions{})
}

// printAnalysis prints the analysis after the policy's id: whether anything passes,
// then each finding with its example, then what stayed unknown.
func (c *cli) printAnalysis(p *policy.Policy, a *policy.Analysis) {
	w := c.stdout
	if a.Satisfiable {
		fmt.Fprintf(w, "satisfiable: yes, for example\n")
		c.printWitness("  ", a.Witness)
	} else if len(a.Unknown) > 0 && a.Unknown[0].Constraint < 0 {
		fmt.Fprintf(w, "satisfiable: unknown (%s)\n", a.Unknown[0].Reason)
	} else {
		fmt.Fprintf(w, "satisfiable: no: nothing passes constraints %s together\n", joinInts(a.Conflict))
	}
	for _, f := range a.Findings {
		fmt.Fprintf(w, "constraint %d, %s: %s\n  %s\n", f.Constraint, f.Kind, f.PrettyExpr, f.Message)
		if f.Witness != nil {
			fmt.Fprintf(w, "  for example\n")
			c.printWitness("    ", f.Witness)
		}
	}
	for _, u := range a.Unknown {
		if u.Constraint >= 0 {
			fmt.Fprintf(w, "constraint %d, %s: unknown (%s)\n", u.Constraint, u.Question, u.Reason)
		}
	}
	if len(a.Findings) == 0 && len(a.Unknown) == 0 {
		fmt.Fprintf(w, "no findings: every constraint can fail, and decides something\n")
	}
}

func (c *cli) printWitness(indent string, w *policy.Witness) {
	attrs, _ := json.Marshal(w.Attrs)
	ev, _ := json.Marshal(w.Evidence)
	fmt.Fprintf(c.stdout, "%sattrs     %s\n%sevidence  %s\n", indent, attrs, indent, ev)
	if w.Context != nil {
		cx, _ := json.Marshal(w.Context)
		fmt.Fprintf(c.stdout, "%scontext   %s\n", indent, cx)
	}
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// noSolver is the note or error of an analysis that could not run.
func noSolver(err error) error {
	if errors.Is(err, smt.ErrNotFound) {
		return fmt.Errorf("not analysed: %w", err)
	}
	return err
}

// diffReport is what policy diff --json prints.
type diffReport struct {
	OldID string `json:"old_id"`
	NewID string `json:"new_id"`
	*policy.Diff
}

// policyDiff compares two versions of a policy: what each accepts that the other
// refuses, with an example of each.
func (c *cli) policyDiff(oldFile, newFile, solverName string) error {
	var ps [2]*policy.Policy
	for i, file := range []string{oldFile, newFile} {
		src, err := readSource(file)
		if err != nil {
			return err
		}
		p, err := policy.Compile(src)
		if err != nil {
			return &exitError{exitRefused, fmt.Errorf("%s does not compile: %v", file, err)}
		}
		ps[i] = p
	}
	s, err := smt.Find(solverName)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.g.timeout)
	defer cancel()
	d, err := policy.Compare(ctx, ps[0], ps[1], s, policy.AnalyzeOptions{})
	if err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(diffReport{OldID: ps[0].ID(), NewID: ps[1].ID(), Diff: d})
	}
	w := c.stdout
	fmt.Fprintf(w, "old %s\nnew %s\n", ps[0].ID(), ps[1].ID())
	switch {
	case d.Equivalent:
		fmt.Fprintf(w, "equivalent: both accept exactly the same intents and evidence\n")
	case len(d.Unknown) > 0:
		fmt.Fprintf(w, "equivalent: unknown\n")
	default:
		fmt.Fprintf(w, "equivalent: no\n")
	}
	for _, side := range []struct {
		what string
		w    *policy.Witness
		q    string
	}{{"the new one accepts, the old one refuses", d.NewAcceptsMore, "new_accepts_more"}, {"the old one accepts, the new one refuses", d.OldAcceptsMore, "old_accepts_more"}} {
		switch {
		case side.w != nil:
			fmt.Fprintf(w, "%s, for example\n", side.what)
			c.printWitness("  ", side.w)
		case unknownQuestion(d.Unknown, side.q) != "":
			fmt.Fprintf(w, "whether %s: unknown (%s)\n", side.what, unknownQuestion(d.Unknown, side.q))
		default:
			fmt.Fprintf(w, "nothing that %s\n", side.what)
		}
	}
	return nil
}

func unknownQuestion(us []policy.Unknown, q string) string {
	for _, u := range us {
		if u.Question == q {
			return u.Reason
		}
	}
	return ""
}
