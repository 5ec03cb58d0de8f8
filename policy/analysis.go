package policy

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The analysis answers questions about a policy exactly: can anything pass it, can a
// constraint ever hold, does it always hold, is it implied by the others, does an
// optional: constraint ever decide anything, and do two policies accept the same
// intents and evidence. Each question is put to an SMT solver over the encoding of
// smt_encode.go. An answer "yes, here is one" comes with a witness that the VM has
// run and agreed with; an answer "no" is the solver's proof that none exists. A
// question the solver cannot settle in its time (a product of two unknowns, say), or
// whose witness the VM does not confirm, is reported as unknown, never guessed.

// ErrUnsupported is returned for a policy the analysis cannot encode exactly for the
// solver at hand: an evidence field of no fixed type, sets with z3, a string literal
// beyond U+2FFFF. Its message says which.
var ErrUnsupported = errUnsupported

// AnalyzeOptions tunes an analysis.
type AnalyzeOptions struct {
	// CheckTimeout bounds each question put to the solver; zero is DefaultCheckTimeout.
	// A question not settled in it is reported unknown.
	CheckTimeout time.Duration
	// SatisfiableOnly asks only whether anything can pass the policy, without the
	// findings of each constraint: one question instead of two or more a constraint.
	SatisfiableOnly bool
}

// DefaultCheckTimeout is the time the solver has for one question.
const DefaultCheckTimeout = 2 * time.Second

// maxRefine is how many times a witness that lower or upper made wrong is sent back
// to the solver with the case mapping of its strings learnt.
const maxRefine = 4

// The kinds of a Finding.
const (
	// FindingNever: the constraint can never hold: alone (Given empty), or together
	// with the constraints before it that Given lists. For an optional: constraint,
	// when its optional parameters are given: an intent that gives them cannot pass.
	FindingNever = "never"
	// FindingAlways: the constraint holds for every intent and every complete evidence:
	// it protects nothing beyond asking for the values it reads.
	FindingAlways = "always"
	// FindingImplied: whenever the others hold (those Given lists suffice), it holds
	// too: it never decides an outcome.
	FindingImplied = "implied"
	// FindingUnreachable: an optional: constraint that never decides anything: when
	// its optional parameters are given and it fails, another constraint fails too.
	FindingUnreachable = "unreachable"
)

// Analysis is what Analyze found.
type Analysis struct {
	// PolicyID is the policy analysed.
	PolicyID string `json:"policy_id"`
	// Solver is the solver that answered: cvc5 or z3.
	Solver string `json:"solver"`
	// Satisfiable: some intent and evidence pass every constraint; Witness is one. It
	// is false when none does (Conflict then lists constraints that cannot hold
	// together) and when the solver could not tell (Unknown says so).
	Satisfiable bool     `json:"satisfiable"`
	Witness     *Witness `json:"witness"`
	Conflict    []int    `json:"conflict,omitempty"`
	// Findings are what the analysis found of each constraint, in the order of the
	// constraints.
	Findings []Finding `json:"findings"`
	// Unknown lists the questions the solver did not settle.
	Unknown []Unknown `json:"unknown,omitempty"`
}

// Finding is one thing found of one constraint.
type Finding struct {
	Constraint int    `json:"constraint"`
	Kind       string `json:"kind"`
	PrettyExpr string `json:"pretty_expr"`
	// Given are the other constraints the finding depends on: for never, the earlier
	// constraints it cannot hold with; for implied and unreachable, constraints that
	// imply it. Empty for a finding of the constraint alone.
	Given []int `json:"given,omitempty"`
	// Message says it in words.
	Message string `json:"message"`
	// Witness shows the finding on an example that the VM confirmed: for never, the
	// constraint failing while every other holds (or, for never given others, the
	// constraint holding alone while one of those fails); for always, the constraint
	// holding; for implied and unreachable, every constraint holding. Nil when no
	// such example exists (never, with others that cannot all hold either).
	Witness *Witness `json:"witness"`
}

// Unknown is a question the solver did not settle.
type Unknown struct {
	// Constraint is the constraint asked about, or -1 for the policy as a whole.
	Constraint int `json:"constraint"`
	// Question is "satisfiable", "never", "always", "implied", or for a comparison
	// "new_accepts_more" or "old_accepts_more".
	Question string `json:"question"`
	Reason   string `json:"reason"`
}

// Analyze puts every question of the analysis about p to the solver.
func Analyze(ctx context.Context, p *Policy, s Solver, opt AnalyzeOptions) (*Analysis, error) {
	e := newEncoder(s.Dialect(), p)
	pt := e.encode(p, "A")
	if e.err != nil {
		return nil, e.err
	}
	e.assert(pt.valid)
	q, err := startQuestions(ctx, s, e, opt, p)
	if err != nil {
		return nil, err
	}
	defer q.close()
	a := &Analysis{PolicyID: p.ID(), Solver: s.Dialect().String(), Findings: []Finding{}}
	all := make([]int, len(p.cons))
	for i := range all {
		all[i] = i
	}
	ans, err := q.ask(pt, nil, all, func(w *Witness) bool { return w.passes(p) })
	if err != nil {
		return nil, err
	}
	switch ans.status {
	case "sat":
		a.Satisfiable, a.Witness = true, ans.w
	case "unsat":
		a.Conflict = ans.core
	default:
		a.Unknown = append(a.Unknown, Unknown{Constraint: -1, Question: "satisfiable", Reason: ans.reason})
	}
	if opt.SatisfiableOnly {
		return a, nil
	}
	prefixSat := true
	for i := range p.cons {
		var err error
		switch {
		case !a.Satisfiable:
			prefixSat, err = q.never(a, pt, i, prefixSat)
		case p.cons[i].optional:
			// The policy can pass with the optional parameters left out; whether it
			// can with them given is this constraint's own question.
			_, err = q.never(a, pt, i, true)
		}
		if err != nil {
			return nil, err
		}
		always, err := q.always(a, pt, i)
		if err != nil {
			return nil, err
		}
		if a.Satisfiable && !always {
			if err := q.implied(a, pt, i); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}

// never asks whether constraint i can hold, alone and then with the ones before it
// (while those can hold together: once they cannot, every later constraint cannot
// either, and saying so of each would hide the first).
func (q *questions) never(a *Analysis, pt *policyTerms, i int, prefixSat bool) (bool, error) {
	p := pt.p
	alone, err := q.ask(pt, []string{pt.reached[i]}, []int{i}, func(w *Witness) bool {
		return w.reaches(p, i) && w.holdsAll(p, []int{i})
	})
	if err != nil {
		return false, err
	}
	switch alone.status {
	case "unknown":
		a.Unknown = append(a.Unknown, Unknown{Constraint: i, Question: FindingNever, Reason: alone.reason})
		return false, nil
	case "unsat":
		others := without(len(p.cons), i)
		blocking, err := q.ask(pt, []string{pt.reached[i], not(pt.holds[i])}, others, func(w *Witness) bool {
			return w.reaches(p, i) && w.failsOnly(p, i)
		})
		if err != nil {
			return false, err
		}
		a.Findings = append(a.Findings, Finding{Constraint: i, Kind: FindingNever, PrettyExpr: p.cons[i].pretty,
			Message: "can never hold: no intent and evidence satisfy it", Witness: blocking.w})
		return false, nil
	}
	if !prefixSat {
		return false, nil
	}
	prefix, err := q.ask(pt, []string{pt.reached[i]}, upTo(i+1), func(w *Witness) bool {
		return w.reaches(p, i) && w.holdsAll(p, upTo(i+1))
	})
	if err != nil {
		return false, err
	}
	switch prefix.status {
	case "unknown":
		a.Unknown = append(a.Unknown, Unknown{Constraint: i, Question: FindingNever, Reason: prefix.reason})
		return false, nil
	case "unsat":
		given := slices.DeleteFunc(prefix.core, func(k int) bool { return k == i })
		a.Findings = append(a.Findings, Finding{Constraint: i, Kind: FindingNever, PrettyExpr: p.cons[i].pretty, Given: given,
			Message: "can never hold together with " + constraintList(given) + " before it", Witness: alone.w})
		return false, nil
	}
	return true, nil
}

// always asks whether constraint i can fail on complete values; it reports whether
// it found that it cannot.
func (q *questions) always(a *Analysis, pt *policyTerms, i int) (bool, error) {
	p := pt.p
	ans, err := q.ask(pt, []string{pt.evaluated[i], not(pt.holds[i])}, nil, func(w *Witness) bool {
		return w.complete(p) && w.reaches(p, i) && w.fails(p, i)
	})
	if err != nil {
		return false, err
	}
	switch ans.status {
	case "unknown":
		a.Unknown = append(a.Unknown, Unknown{Constraint: i, Question: FindingAlways, Reason: ans.reason})
		return false, nil
	case "sat":
		return false, nil
	}
	example, err := q.ask(pt, []string{pt.evaluated[i]}, []int{i}, func(w *Witness) bool {
		return w.complete(p) && w.reaches(p, i) && w.holdsAll(p, []int{i})
	})
	if err != nil {
		return false, err
	}
	a.Findings = append(a.Findings, Finding{Constraint: i, Kind: FindingAlways, PrettyExpr: p.cons[i].pretty,
		Message: "always holds when its values are there: it protects nothing", Witness: example.w})
	return true, nil
}

// implied asks whether constraint i can fail, on complete values, while every other
// holds: for an optional: constraint, whether it can ever decide anything.
func (q *questions) implied(a *Analysis, pt *policyTerms, i int) error {
	p := pt.p
	others := without(len(p.cons), i)
	ans, err := q.ask(pt, []string{pt.evaluated[i], not(pt.holds[i])}, others, func(w *Witness) bool {
		return w.complete(p) && w.reaches(p, i) && w.failsOnly(p, i)
	})
	if err != nil {
		return err
	}
	kind, msg := FindingImplied, "is implied by "
	if p.cons[i].optional {
		kind, msg = FindingUnreachable, "never decides anything: when it is evaluated and fails, so does "
	}
	switch ans.status {
	case "unknown":
		a.Unknown = append(a.Unknown, Unknown{Constraint: i, Question: kind, Reason: ans.reason})
		return nil
	case "sat":
		return nil
	}
	example, err := q.ask(pt, []string{pt.evaluated[i]}, upTo(len(p.cons)), func(w *Witness) bool {
		return w.complete(p) && w.reaches(p, i) && w.passes(p)
	})
	if err != nil {
		return err
	}
	a.Findings = append(a.Findings, Finding{Constraint: i, Kind: kind, PrettyExpr: p.cons[i].pretty, Given: ans.core,
		Message: msg + constraintList(ans.core), Witness: example.w})
	return nil
}

func upTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func without(n, i int) []int {
	return slices.DeleteFunc(upTo(n), func(k int) bool { return k == i })
}

func constraintList(ks []int) string {
	if len(ks) == 0 {
		return "the intent's parameters alone"
	}
	words := make([]string, len(ks))
	for i, k := range ks {
		words[i] = strconv.Itoa(k)
	}
	if len(ks) == 1 {
		return "constraint " + words[0]
	}
	return "constraints " + strings.Join(words[:len(ks)-1], ", ") + " and " + words[len(ks)-1]
}

// Diff is what Compare found of two versions of a policy.
type Diff struct {
	// Equivalent: both accept exactly the same intents and evidence (in the same
	// decision context). False when they differ and when the solver could not tell.
	Equivalent bool `json:"equivalent"`
	// NewAcceptsMore is an intent and evidence the new policy accepts and the old one
	// refuses (its attrs are not an intent of it, or a constraint fails); nil if none.
	NewAcceptsMore *Witness `json:"new_accepts_more"`
	// OldAcceptsMore is the reverse.
	OldAcceptsMore *Witness  `json:"old_accepts_more"`
	Unknown        []Unknown `json:"unknown,omitempty"`
}

// Compare asks whether two policies accept the same intents and evidence.
func Compare(ctx context.Context, old, new *Policy, s Solver, opt AnalyzeOptions) (*Diff, error) {
	e := newEncoder(s.Dialect(), old, new)
	po, pn := e.encode(old, "A"), e.encode(new, "B")
	if e.err != nil {
		return nil, e.err
	}
	q, err := startQuestions(ctx, s, e, opt, old, new)
	if err != nil {
		return nil, err
	}
	defer q.close()
	d := &Diff{}
	more := func(yes, no *policyTerms, question string) (*Witness, bool, error) {
		ans, err := q.ask(yes, []string{yes.accepted, not(no.accepted)}, nil, func(w *Witness) bool {
			return w.passes(yes.p) && !w.passes(no.p)
		})
		if err != nil {
			return nil, false, err
		}
		if ans.status == "unknown" {
			d.Unknown = append(d.Unknown, Unknown{Constraint: -1, Question: question, Reason: ans.reason})
		}
		return ans.w, ans.status == "unsat", nil
	}
	var noNew, noOld bool
	if d.NewAcceptsMore, noNew, err = more(pn, po, "new_accepts_more"); err != nil {
		return nil, err
	}
	if d.OldAcceptsMore, noOld, err = more(po, pn, "old_accepts_more"); err != nil {
		return nil, err
	}
	d.Equivalent = noNew && noOld
	return d, nil
}

// questions is a session with the solver about one encoding.
type questions struct {
	s  SolverSession
	e  *encoder
	ps []*Policy
	// limit is the command that sets the solver's time for one question; hint is
	// the time of the case-mapped try before it (askCaseMapped).
	limit string
	hint  time.Duration
	terms []string
	// facts are what the VM taught the solver about lower and upper.
	facts []string
	// seen are the witnesses the solver gave so far, for later questions that one
	// of them answers (cached: the questions are of one policy, whose runs they
	// remember); at most maxSeen.
	seen   []*Witness
	cached bool
}

func startQuestions(ctx context.Context, s Solver, e *encoder, opt AnalyzeOptions, ps ...*Policy) (*questions, error) {
	sess, err := s.Start(ctx)
	if err != nil {
		return nil, err
	}
	q := &questions{s: sess, e: e, ps: ps, terms: e.modelTerms(), cached: len(ps) == 1}
	limit := opt.CheckTimeout
	if limit <= 0 {
		limit = DefaultCheckTimeout
	}
	q.hint = limit / 4
	q.limit = q.limitCmd(limit)
	cmds := append([]string{q.limit}, strings.Split(strings.TrimSuffix(e.out.String(), "\n"), "\n")...)
	if err := q.doAll(cmds); err != nil {
		q.close()
		return nil, err
	}
	return q, nil
}

func (q *questions) close() { q.s.Close() }

// maxSeen bounds the witnesses kept for later questions: each is run against every
// question that follows.
const maxSeen = 64

// keep remembers a witness for later questions.
func (q *questions) keep(w *Witness) {
	if q.cached && len(q.seen) < maxSeen {
		q.seen = append(q.seen, w)
	}
}

// doAll sends commands that must each answer success.
func (q *questions) doAll(cmds []string) error {
	got, err := q.s.DoAll(cmds)
	if err != nil {
		return err
	}
	for i, g := range got {
		if g != "success" {
			return fmt.Errorf("policy: the solver answered %q to %.80s, want success", g, cmds[i])
		}
	}
	return nil
}

// do sends a command that must answer want.
func (q *questions) do(cmd, want string) error {
	got, err := q.s.Do(cmd)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("policy: the solver answered %q to %.80s, want %s", got, cmd, want)
	}
	return nil
}

// answer is the solver's answer to one question.
type answer struct {
	status string // sat, unsat, unknown
	w      *Witness
	core   []int // unsat: the named constraints the proof used
	reason string
}

// ask asks whether the terms and the holding of the named constraints can all be
// true; confirm says the same of a witness, on the VM. A witness an earlier question
// found that confirm accepts answers at once, without the solver. Otherwise, on sat the
// witness is read and run by confirm: one the VM does not confirm is sent back with
// what lower and upper really do with its strings, up to maxRefine times, and is
// otherwise unknown. On unsat the core lists the named constraints the solver needed.
func (q *questions) ask(pt *policyTerms, terms []string, named []int, confirm func(*Witness) bool) (answer, error) {
	if q.cached {
		for _, w := range q.seen {
			if confirm(w) {
				return answer{status: "sat", w: w}, nil
			}
		}
	}
	cmds := append([]string{"(push 1)"}, q.facts...)
	for _, t := range terms {
		cmds = append(cmds, "(assert "+t+")")
	}
	for _, k := range named {
		cmds = append(cmds, "(assert (! "+pt.holds[k]+" :named k"+strconv.Itoa(k)+"))")
	}
	if err := q.doAll(cmds); err != nil {
		return answer{}, err
	}
	defer q.s.Do("(pop 1)")
	if ans, ok, err := q.askCaseMapped(confirm); err != nil || ok {
		return ans, err
	}
	for round := 0; ; round++ {
		got, err := q.s.Do("(check-sat)")
		if err != nil {
			return answer{}, err
		}
		switch got {
		case "unsat":
			if len(named) == 0 {
				return answer{status: "unsat"}, nil
			}
			ans, err := q.core()
			if err != nil {
				return answer{}, err
			}
			ans.core, err = q.minimize(pt, terms, ans.core)
			return ans, err
		case "unknown":
			return answer{status: "unknown", reason: q.why()}, nil
		case "sat":
		default:
			return answer{}, fmt.Errorf("policy: the solver answered %q to check-sat", got)
		}
		model, err := q.model()
		if err != nil {
			return answer{}, err
		}
		w, err := q.e.witness(model, q.ps)
		if err != nil {
			return answer{status: "unknown", reason: "the solver's model is no intent and evidence: " + err.Error()}, nil
		}
		q.keep(w)
		if confirm(w) {
			return answer{status: "sat", w: w}, nil
		}
		learnt, err := q.learn(model)
		if err != nil {
			return answer{}, err
		}
		if !learnt || round == maxRefine {
			return answer{status: "unknown", reason: "the evaluator did not confirm the solver's witness"}, nil
		}
	}
}

// askCaseMapped asks the question first with lower and upper read as functions the
// solver knows: first as leaving a string as it is (right for strings without
// capitals, and cheap), then, with cvc5, as its str.to_lower and str.to_upper, which map
// ASCII letters as Go does and leave other characters alone. A witness found so, once
// the VM confirms it, is a witness, where the uninterpreted functions alone would have
// the solver guess one case mapping after another. ok is false when none is found so
// (one may need a character beyond ASCII), and the question is then asked in full.
func (q *questions) askCaseMapped(confirm func(*Witness) bool) (answer, bool, error) {
	if len(q.e.ufs) == 0 {
		return answer{}, false, nil
	}
	hints := []func(u ufApp) string{func(u ufApp) string { return u.arg }}
	if q.e.d == DialectCVC5 {
		hints = append(hints, func(u ufApp) string {
			if u.fn == fnUpper {
				return "(str.to_upper " + u.arg + ")"
			}
			return "(str.to_lower " + u.arg + ")"
		})
	}
	for _, hint := range hints {
		ans, ok, err := q.askHinted(confirm, hint)
		if err != nil || ok {
			return ans, ok, err
		}
	}
	return answer{}, false, nil
}

// askHinted asks the question with each application of lower and upper equal to its
// hint, in a short time: a hint, not the question.
func (q *questions) askHinted(confirm func(*Witness) bool, hint func(ufApp) string) (answer, bool, error) {
	cmds := []string{"(push 1)"}
	for _, u := range q.e.ufs {
		cmds = append(cmds, "(assert (= "+u.val+" "+hint(u)+"))")
	}
	if err := q.doAll(append(cmds, q.limitCmd(q.hint))); err != nil {
		return answer{}, false, err
	}
	defer q.s.Do("(pop 1)")
	got, err := q.s.Do("(check-sat)")
	if err == nil {
		err = q.do(q.limit, "success")
	}
	if err != nil || got != "sat" {
		return answer{}, false, err
	}
	model, err := q.model()
	if err != nil {
		return answer{}, false, err
	}
	w, err := q.e.witness(model, q.ps)
	if err != nil {
		return answer{}, false, nil
	}
	q.keep(w)
	if !confirm(w) {
		return answer{}, false, nil
	}
	return answer{status: "sat", w: w}, true, nil
}

// limitCmd is the command that gives each question d.
func (q *questions) limitCmd(d time.Duration) string {
	ms := strconv.FormatInt(max(d.Milliseconds(), 1), 10)
	if q.e.d == DialectCVC5 {
		return "(set-option :tlimit-per " + ms + ")"
	}
	return "(set-option :timeout " + ms + ")"
}

// core reads the unsat core: the names k<index> of the constraints it holds.
func (q *questions) core() (answer, error) {
	got, err := q.s.Do("(get-unsat-core)")
	if err != nil {
		return answer{}, err
	}
	x, err := parseSexp(got)
	if err != nil || !x.isList {
		return answer{}, fmt.Errorf("policy: the solver's unsat core %.80q: %v", got, err)
	}
	var core []int
	for _, n := range x.list {
		if k, err := strconv.Atoi(strings.TrimPrefix(n.atom, "k")); err == nil && strings.HasPrefix(n.atom, "k") {
			core = append(core, k)
		}
	}
	slices.Sort(core)
	return answer{status: "unsat", core: core}, nil
}

// minimize drops from an unsat core each constraint without which the rest is still
// unsat, one question each: the solver's own cores hold more than they need, and its
// minimal ones cost more than this. It leaves the question's scope holding the terms
// and the core it returns.
func (q *questions) minimize(pt *policyTerms, terms []string, core []int) ([]int, error) {
	for i := 0; i < len(core) && len(core) > 1; {
		trial := slices.Delete(slices.Clone(core), i, i+1)
		cmds := []string{"(pop 1)", "(push 1)"}
		cmds = append(cmds, q.facts...)
		for _, t := range terms {
			cmds = append(cmds, "(assert "+t+")")
		}
		for _, k := range trial {
			cmds = append(cmds, "(assert "+pt.holds[k]+")")
		}
		if err := q.doAll(cmds); err != nil {
			return nil, err
		}
		got, err := q.s.Do("(check-sat)")
		if err != nil {
			return nil, err
		}
		if got == "unsat" {
			core = trial
		} else {
			i++
		}
	}
	return core, nil
}

// why asks the solver why it answered unknown.
func (q *questions) why() string {
	got, err := q.s.Do("(get-info :reason-unknown)")
	if err != nil {
		return "the solver could not decide"
	}
	if x, err := parseSexp(got); err == nil && x.isList && len(x.list) == 2 {
		r := x.list[1].atom
		if x.list[1].isStr {
			r = x.list[1].str
		}
		switch r {
		case "timeout", "resourceout":
			return "the solver ran out of time"
		case "incomplete":
			return "beyond what the solver decides (a product of unknowns?)"
		}
		return "the solver could not decide: " + r
	}
	return "the solver could not decide"
}

// model reads the values of the model terms.
func (q *questions) model() (map[string]sexp, error) {
	got, err := q.s.Do("(get-value (" + strings.Join(q.terms, " ") + "))")
	if err != nil {
		return nil, err
	}
	x, err := parseSexp(got)
	if err != nil {
		return nil, fmt.Errorf("policy: the solver's model: %w", err)
	}
	if !x.isList || len(x.list) != len(q.terms) {
		return nil, fmt.Errorf("policy: the solver's model has %d values, want %d", len(x.list), len(q.terms))
	}
	model := make(map[string]sexp, len(q.terms))
	for i, pair := range x.list {
		if !pair.isList || len(pair.list) != 2 {
			return nil, fmt.Errorf("policy: the solver's model: %s is no (term value) pair", pair)
		}
		model[q.terms[i]] = pair.list[1]
	}
	return model, nil
}

// learn tells the solver what lower and upper give for the strings the model applied
// them to, and reports whether it told it anything new.
func (q *questions) learn(model map[string]sexp) (bool, error) {
	learnt := false
	for _, u := range q.e.ufs {
		arg := model[u.arg]
		if !arg.isStr {
			// A literal argument: its value is the literal.
			x, err := parseSexp(u.arg)
			if err != nil || !x.isStr {
				continue
			}
			arg = x
		}
		mapped := strings.ToLower(arg.str)
		if u.fn == fnUpper {
			mapped = strings.ToUpper(arg.str)
		}
		fact := "(assert (= (" + fnNames[u.fn] + " " + q.e.strTerm(arg.str) + ") " + q.e.strTerm(mapped) + "))"
		if slices.Contains(q.facts, fact) {
			continue
		}
		if err := q.do(fact, "success"); err != nil {
			return false, err
		}
		q.facts = append(q.facts, fact)
		learnt = true
	}
	if q.e.err != nil {
		return false, q.e.err
	}
	return learnt, nil
}
