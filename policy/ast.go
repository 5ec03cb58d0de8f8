package policy

import (
	"cmp"
	"slices"
)

// The syntax tree holds the canonical form only: spellings (intent/parameters, &&/and,
// !/not, ||/or), parentheses and comments are gone once parsed, so the compiler has
// nothing to be non-deterministic about, and Decode can rebuild the same tree from
// bytecode.

type file struct {
	name             string
	namePos          Pos
	extractor        string
	hasExtractor     bool
	params           []*fieldDecl
	evidence         []*fieldDecl
	evidenceDeclared bool
	requiresPos      Pos
	constraints      []*constraint
	// agents is the parameter an agents part names (the checker sets its slot, which
	// is what the bytecode writes), or nil: a policy without the part is undelegated.
	agents *ref
	// amount is the expression of an amount part, the amount of one purchase under a
	// mandate, or nil; period is the calendar period of a period part, or periodNone.
	// Their positions are the parts' words, for errors.
	amount    expr
	amountPos Pos
	period    period
	periodPos Pos
}

type fieldDecl struct {
	pos      Pos
	name     string
	typ      Type
	optional bool
}

type constraint struct {
	pos      Pos
	optional bool
	x        expr
}

// expr is a node of an expression. typ is set by the checker.
type expr interface {
	node() *exprNode
}

type exprNode struct {
	pos Pos
	typ Type
	// text is the node's canonical text, set when the policy is built: explanations
	// quote subexpressions, and printing them for every failure would cost more than
	// the evaluation itself. It is part of its constraint's text (setTexts).
	text string
	// paren says an explanation quotes the node in parentheses (a comparison quoted
	// inside a comparison needs them back), and lit that it quotes it without a value
	// (a literal's text is its value). Also set when the policy is built.
	paren, lit bool
}

func (n *exprNode) node() *exprNode { return n }

type intLit struct {
	exprNode
	v int64
}

type strLit struct {
	exprNode
	v string
}

type boolLit struct {
	exprNode
	v bool
}

// setLit is a set literal. Its elements are sorted and distinct (newSetLit sees to
// it), which is what makes element order not matter to the bytecode.
type setLit struct {
	exprNode
	elem Type // TypeString or TypeInt
	strs []string
	ints []int64
	// val is the set as a value, made when the policy is built so that explaining a
	// failure does not allocate one each time it reads the literal.
	val *setValue
}

func newStrSetLit(p Pos, elems []string) *setLit {
	s := slices.Clone(elems)
	slices.Sort(s)
	return &setLit{exprNode: exprNode{pos: p}, elem: TypeString, strs: slices.Compact(s)}
}

func newIntSetLit(p Pos, elems []int64) *setLit {
	s := slices.Clone(elems)
	slices.Sort(s)
	return &setLit{exprNode: exprNode{pos: p}, elem: TypeInt, ints: slices.Compact(s)}
}

func (s *setLit) len() int { return len(s.strs) + len(s.ints) }

// ref is parameters.x or evidence.x. slot indexes the sorted declarations.
type ref struct {
	exprNode
	evidence bool
	name     string
	slot     int
}

// ctxRef is a value of the decision's context: a mandate's running totals, the
// purchase's amount, the decision's time (mandate.go).
type ctxRef struct {
	exprNode
	v ctxVal
}

type unary struct {
	exprNode
	op op // opNeg or opNot
	x  expr
}

type binaryExpr struct {
	exprNode
	op    op
	x, y  expr
	opPos Pos
}

// chain is a chained comparison a op1 b op2 c ..., with at least three operands.
type chain struct {
	exprNode
	ops   []op
	xs    []expr
	opPos []Pos
}

type call struct {
	exprNode
	fn   fn
	name string
	args []expr
}

// depth is the nesting depth of e, the measure MaxDepth limits. A run of one
// left-associative operator (a and b and c) counts as one level: it is flat to read
// and flat to evaluate.
func depth(e expr) int {
	switch e := e.(type) {
	case *unary:
		return 1 + depth(e.x)
	case *binaryExpr:
		l := depth(e.x)
		if b, ok := e.x.(*binaryExpr); !ok || b.op.prec() != e.op.prec() || e.op.prec() == precCmp {
			l++
		}
		return max(l, 1+depth(e.y))
	case *chain:
		d := 0
		for _, x := range e.xs {
			d = max(d, depth(x))
		}
		return 1 + d
	case *call:
		d := 0
		for _, x := range e.args {
			d = max(d, depth(x))
		}
		return 1 + d
	}
	return 0
}

func sortDecls(ds []*fieldDecl) []*fieldDecl {
	s := slices.Clone(ds)
	slices.SortStableFunc(s, func(a, b *fieldDecl) int { return cmp.Compare(a.name, b.name) })
	return s
}
