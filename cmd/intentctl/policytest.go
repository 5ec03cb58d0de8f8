package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/policy/policytest"
)

// The files of a test folder: NAME.tests.json tests NAME.policy beside it.
const (
	policyExt = ".policy"
	testsExt  = ".tests.json"
	// maxTestsFile bounds a test file read: a few hundred cases take a few hundred
	// KiB, and a file of gigabytes is a mistake to say rather than to read.
	maxTestsFile = 16 << 20
)

func init() {
	subcommands["policy test"] = command{name: "policy test", args: "DIR [--threshold N]",
		help: "run the test cases of each policy in DIR (NAME.tests.json beside NAME.policy) here, storing nothing: each case pass or FAIL, then each constraint's coverage; exit 1 when a case fails or a policy's coverage is below N %"}
}

// policyTestFlags registers the flags of policy test on the policy dispatcher's flag
// set when args name that subcommand, so that the other subcommands refuse them.
func policyTestFlags(fs *flag.FlagSet, args []string) *float64 {
	threshold := new(float64)
	if len(args) > 0 && args[0] == "test" {
		fs.Float64Var(threshold, "threshold", 0, "the coverage in percent (0 to 100) each tested policy must reach: constraint outcomes seen over twice the constraints")
	}
	return threshold
}

// testedPolicy is one policy of the folder and what its tests gave.
type testedPolicy struct {
	File  string `json:"file"`
	Tests string `json:"tests,omitempty"`
	Name  string `json:"name,omitempty"`
	ID    string `json:"id,omitempty"`
	// Error is why the policy's tests could not run: it does not compile, its test
	// file does not decode, or there is no policy for the test file.
	Error string `json:"error,omitempty"`
	// Untested is set for a policy without a test file.
	Untested bool `json:"untested,omitempty"`

	report *policytest.Report
}

// policyTest runs the tests of the folder dir and prints the results, then the
// coverage of each policy.
func (c *cli) policyTest(dir string, threshold float64) error {
	if math.IsNaN(threshold) || threshold < 0 || threshold > 100 {
		return usagef("--threshold %v: want a percentage from 0 to 100", threshold)
	}
	names, err := testFolder(dir)
	if err != nil {
		return err
	}
	var all []*testedPolicy
	for _, name := range names {
		all = append(all, testPolicy(dir, name))
	}
	sum := summarise(all, threshold)
	if c.g.json {
		if err := c.printJSON(jsonReport(all, sum, threshold)); err != nil {
			return err
		}
	} else {
		w := c.stdout
		for _, tp := range all {
			printTested(w, tp)
		}
		fmt.Fprintln(w, sum.line())
	}
	if msg := sum.failure(threshold); msg != "" {
		return &exitError{exitRefused, errors.New(msg)}
	}
	return nil
}

// testFolder lists the names NAME of dir that have a NAME.policy or a NAME.tests.json,
// sorted.
func testFolder(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, usagef("%v (want the folder of the policies and their NAME.tests.json)", err)
	}
	seen := map[string]bool{}
	tests := false
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name, ok := strings.CutSuffix(e.Name(), testsExt)
		if ok {
			tests = true
		} else if name, ok = strings.CutSuffix(e.Name(), policyExt); !ok {
			continue
		}
		seen[name] = true
	}
	if !tests {
		return nil, &exitError{exitRefused, fmt.Errorf("%s holds no NAME%s: nothing to test", dir, testsExt)}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// testPolicy compiles NAME.policy, reads NAME.tests.json and runs its cases.
func testPolicy(dir, name string) *testedPolicy {
	tp := &testedPolicy{File: filepath.Join(dir, name+policyExt), Tests: filepath.Join(dir, name+testsExt)}
	data, err := readTestsFile(tp.Tests)
	if errors.Is(err, os.ErrNotExist) {
		tp.Tests, tp.Untested = "", true
		return tp
	}
	if err != nil {
		tp.Error = err.Error()
		return tp
	}
	src, err := os.ReadFile(tp.File)
	if err != nil {
		tp.Error = fmt.Sprintf("cannot read the policy %s tests: %v", filepath.Base(tp.Tests), err)
		if errors.Is(err, os.ErrNotExist) {
			tp.Error = fmt.Sprintf("no such file, but %s tests it", filepath.Base(tp.Tests))
		}
		return tp
	}
	p, err := policy.Compile(string(src))
	if err != nil {
		tp.Error = "does not compile: " + strings.ReplaceAll(err.Error(), "\n", "; ")
		return tp
	}
	tp.Name, tp.ID = p.Name(), p.ID()
	cases, err := policytest.Decode(data)
	if err != nil {
		tp.Error = fmt.Sprintf("%s: %v", tp.Tests, err)
		return tp
	}
	tp.report = policytest.Run(p, cases, classify)
	return tp
}

// classify is the engine's classification of failures, so that a test expects the
// kind the service would state.
func classify(f []policy.Failure) string {
	kind, _ := intentd.ClassifyFailures(f)
	return string(kind)
}

// readTestsFile reads a test file, refusing one past maxTestsFile.
func readTestsFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTestsFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTestsFile {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxTestsFile>>20)
	}
	return data, nil
}

// testSummary counts the results of every policy of the folder.
type testSummary struct {
	policies, untested, broken int
	cases, passed              int
	// total is the coverage of every constraint of the policies tested.
	total policytest.Coverage
	// below are the policies whose coverage is below the threshold.
	below []string
}

func summarise(all []*testedPolicy, threshold float64) testSummary {
	var s testSummary
	for _, tp := range all {
		switch {
		case tp.Untested:
			s.untested++
			continue
		case tp.Error != "":
			s.broken++
			continue
		}
		s.policies++
		r := tp.report
		s.cases += len(r.Results)
		s.passed += r.Passed()
		s.total = append(s.total, r.Coverage...)
		if !r.Coverage.Reaches(threshold) {
			s.below = append(s.below, fmt.Sprintf("%s (%s)", tp.File, percent(r.Coverage.Percent())))
		}
	}
	return s
}

// line is the last line of the text report.
func (s testSummary) line() string {
	line := fmt.Sprintf("%d %s tested, %d %s: %d passed, %d failed",
		s.policies, plural(s.policies, "policy", "policies"), s.cases, plural(s.cases, "case", "cases"), s.passed, s.cases-s.passed)
	if s.policies > 0 {
		line += fmt.Sprintf("; coverage %s (%d of %d constraint outcomes)", percent(s.total.Percent()), s.total.Seen(), s.total.Outcomes())
	}
	if s.broken > 0 {
		line += fmt.Sprintf("; %d could not be tested", s.broken)
	}
	if s.untested > 0 {
		line += fmt.Sprintf("; %d without tests", s.untested)
	}
	return line
}

// failure is why the run fails, or "".
func (s testSummary) failure(threshold float64) string {
	var why []string
	if s.broken > 0 {
		why = append(why, fmt.Sprintf("%d %s could not be tested", s.broken, plural(s.broken, "policy", "policies")))
	}
	if n := s.cases - s.passed; n > 0 {
		why = append(why, fmt.Sprintf("%d of %d %s failed", n, s.cases, plural(s.cases, "case", "cases")))
	}
	if len(s.below) > 0 {
		why = append(why, fmt.Sprintf("coverage below --threshold %g %%: %s", threshold, strings.Join(s.below, ", ")))
	}
	return strings.Join(why, "; ")
}

// percent writes a percentage with one decimal, cut rather than rounded, so that a
// coverage just short of a threshold never prints as reaching it.
func percent(p float64) string {
	return fmt.Sprintf("%.1f %%", math.Floor(p*10)/10)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// printTested writes one policy's part of the text report: a line that names it, a
// line per case, and its coverage table.
func printTested(w io.Writer, tp *testedPolicy) {
	switch {
	case tp.Untested:
		fmt.Fprintf(w, "%s: not tested (no %s beside it)\n", tp.File, filepath.Base(strings.TrimSuffix(tp.File, policyExt)+testsExt))
		return
	case tp.Error != "":
		fmt.Fprintf(w, "%s: ERROR %s\n", tp.File, tp.Error)
		return
	}
	r := tp.report
	fmt.Fprintf(w, "%s  %s  %s\n", tp.File, tp.Name, tp.ID)
	fmt.Fprintf(w, "  %s: %d %s, %d passed, %d failed\n", tp.Tests, len(r.Results), plural(len(r.Results), "case", "cases"), r.Passed(), len(r.Results)-r.Passed())
	cov := r.Coverage
	for i := range r.Results {
		printResult(w, &r.Results[i], cov)
	}
	fmt.Fprintf(w, "  coverage %s (%d of %d constraint outcomes)\n", percent(cov.Percent()), cov.Seen(), cov.Outcomes())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    index\tpassing\tfailing\tconstraint\n")
	for _, k := range cov {
		text := k.Text
		if k.Optional {
			text = "optional: " + text
		}
		fmt.Fprintf(tw, "    %d\t%s\t%s\t%s\n", k.Index, yesNo(k.Passing), yesNo(k.Failing), text)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// printResult writes a case's line and, when it failed, what differed, with the
// reasons of the constraints that failed and the text of those expected to fail that
// held.
func printResult(w io.Writer, res *policytest.Result, cov policytest.Coverage) {
	c := res.Case
	if res.Err != nil {
		fmt.Fprintf(w, "  FAIL  %s\n        not run: %v\n", c.Name, res.Err)
		return
	}
	if res.Passed() {
		fmt.Fprintf(w, "  pass  %s -> %s\n", c.Name, outcomeText(res))
		return
	}
	fmt.Fprintf(w, "  FAIL  %s -> %s\n", c.Name, outcomeText(res))
	for _, d := range res.Diffs {
		fmt.Fprintf(w, "        %s\n", d)
	}
	for _, f := range res.Failures {
		fmt.Fprintf(w, "        constraint %d failed  %s\n          %s\n", f.Index, f.PrettyExpr, f.Reason)
	}
	for _, i := range c.Failing {
		if !slices.Contains(res.Failing, i) {
			fmt.Fprintf(w, "        constraint %d held  %s\n          expected to fail\n", i, cov[i].Text)
		}
	}
}

// outcomeText is a case's outcome as the report gives it: success, or the failing
// constraints and the kind.
func outcomeText(res *policytest.Result) string {
	if res.Outcome == policytest.Success {
		return "success"
	}
	return fmt.Sprintf("failure %s (%s)", indexes(res.Failing), res.FailureKind)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// indexes writes constraint indexes as a test file lists them: [1, 2, 3].
func indexes(ix []int) string {
	s := make([]string, len(ix))
	for i, n := range ix {
		s[i] = fmt.Sprint(n)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// The --json report: the text report's facts, each policy with its cases and its
// coverage, and the totals.
type (
	jsonTestReport struct {
		Policies  []jsonTestedPolicy `json:"policies"`
		Cases     int                `json:"cases"`
		Passed    int                `json:"passed"`
		Failed    int                `json:"failed"`
		Coverage  jsonCoverageTotal  `json:"coverage"`
		Threshold float64            `json:"threshold"`
		// OK is the exit status's verdict: every case passed, every policy could be
		// tested and reaches the threshold.
		OK bool `json:"ok"`
	}
	jsonTestedPolicy struct {
		*testedPolicy
		Cases    []jsonCase    `json:"cases,omitempty"`
		Coverage *jsonCoverage `json:"coverage,omitempty"`
	}
	jsonCase struct {
		Name   string       `json:"name"`
		Passed bool         `json:"passed"`
		Error  string       `json:"error,omitempty"`
		Expect jsonExpect   `json:"expect"`
		Got    *jsonOutcome `json:"got,omitempty"`
		Diffs  []string     `json:"diffs,omitempty"`
	}
	jsonExpect struct {
		Outcome     string `json:"outcome"`
		Failing     []int  `json:"failing,omitempty"`
		FailureKind string `json:"failure_kind,omitempty"`
	}
	jsonOutcome struct {
		Outcome     string           `json:"outcome"`
		Failing     []int            `json:"failing,omitempty"`
		FailureKind string           `json:"failure_kind,omitempty"`
		Failures    []policy.Failure `json:"failures,omitempty"`
	}
	jsonCoverageTotal struct {
		Seen     int     `json:"seen"`
		Outcomes int     `json:"outcomes"`
		Percent  float64 `json:"percent"`
	}
	jsonCoverage struct {
		jsonCoverageTotal
		Constraints []jsonConstraint `json:"constraints"`
	}
	jsonConstraint struct {
		Index    int    `json:"index"`
		Text     string `json:"text"`
		Optional bool   `json:"optional,omitempty"`
		Passing  bool   `json:"passing"`
		Failing  bool   `json:"failing"`
	}
)

func jsonReport(all []*testedPolicy, s testSummary, threshold float64) jsonTestReport {
	out := jsonTestReport{
		Policies: make([]jsonTestedPolicy, 0, len(all)),
		Cases:    s.cases, Passed: s.passed, Failed: s.cases - s.passed,
		Coverage:  coverageTotal(s.total),
		Threshold: threshold,
		OK:        s.failure(threshold) == "",
	}
	for _, tp := range all {
		jp := jsonTestedPolicy{testedPolicy: tp}
		if r := tp.report; r != nil {
			for i := range r.Results {
				jp.Cases = append(jp.Cases, jsonCaseOf(&r.Results[i]))
			}
			cov := &jsonCoverage{jsonCoverageTotal: coverageTotal(r.Coverage)}
			for _, k := range r.Coverage {
				cov.Constraints = append(cov.Constraints, jsonConstraint{Index: k.Index, Text: k.Text, Optional: k.Optional, Passing: k.Passing, Failing: k.Failing})
			}
			jp.Coverage = cov
		}
		out.Policies = append(out.Policies, jp)
	}
	return out
}

func coverageTotal(c policytest.Coverage) jsonCoverageTotal {
	return jsonCoverageTotal{Seen: c.Seen(), Outcomes: c.Outcomes(), Percent: c.Percent()}
}

func jsonCaseOf(res *policytest.Result) jsonCase {
	c := res.Case
	jc := jsonCase{Name: c.Name, Passed: res.Passed(), Diffs: res.Diffs,
		Expect: jsonExpect{Outcome: c.Expect, Failing: c.Failing, FailureKind: c.FailureKind}}
	if res.Err != nil {
		jc.Error = res.Err.Error()
		return jc
	}
	jc.Got = &jsonOutcome{Outcome: res.Outcome, Failing: res.Failing, FailureKind: res.FailureKind, Failures: res.Failures}
	return jc
}
