package policy

import "context"

// The analysis (analysis.go) decides questions about a policy exactly by asking an SMT
// solver. The solver is a separate program, reached through these interfaces so that
// the package stays a leaf: package policy/smt runs cvc5 or z3 over a pipe.

// Dialect is what a solver understands beyond standard SMT-LIB 2.6 with strings.
type Dialect uint8

const (
	// DialectCVC5 is cvc5: finite sets with cardinality (set.member, set.card, ...),
	// so every construct of the language has an exact encoding.
	DialectCVC5 Dialect = iota + 1
	// DialectZ3 is z3: strings and integers, and no finite sets with cardinality, so
	// a policy with set values cannot be analysed with it.
	DialectZ3
)

// String is the solver's name.
func (d Dialect) String() string {
	switch d {
	case DialectCVC5:
		return "cvc5"
	case DialectZ3:
		return "z3"
	}
	return "unknown solver"
}

// Solver starts sessions with an SMT solver.
type Solver interface {
	// Dialect says which solver it is, and so which encoding it takes.
	Dialect() Dialect
	// Start begins a session: a solver process that takes commands in turn until
	// Close, set up for the analysis: :print-success on, so that every command has
	// exactly one answer; models and unsat cores on; the logic ALL (with cvc5, its
	// extended string functions too). What the session declares and asserts is its
	// own: no later session sees it. ctx bounds the whole session: when it ends, the
	// process is stopped and Do fails.
	Start(ctx context.Context) (SolverSession, error)
}

// SolverSession is a session with a solver process in SMT-LIB's interactive mode.
type SolverSession interface {
	// Do sends one command and returns its answer: "success", "sat", "unsat",
	// "unknown", or the s-expression of get-value or get-unsat-core. An answer
	// (error "...") is returned as an error.
	Do(cmd string) (string, error)
	// DoAll sends commands together and returns their answers in order: one write and
	// one read for a run of commands whose answers need not be seen one by one. An
	// answer (error "...") fails the whole, once every answer is read.
	DoAll(cmds []string) ([]string, error)
	// Close stops the process.
	Close() error
}
