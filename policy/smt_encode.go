package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The encoding of policies into SMT-LIB: every expression becomes a pair of terms, its
// value and whether evaluating it comes to a value at all ("ok"), so that the solver
// reasons about exactly what the VM does: a missing or ill-typed evidence field, an
// absent parameter, an overflow of int64 or an unknown decision time fails the
// expression, and `and`, `or` and chains stop early as the VM does, so that a fault in
// a part never reached does not count. A constraint holds when it is ok and true, or
// when it is an optional: constraint and an optional parameter it reads is absent.
//
// Integers are the solver's mathematical integers, bounded to int64 where values enter
// (parameters, evidence, the context) and checked for overflow after each operation.
// Strings are SMT-LIB strings (Unicode code points, as len counts them). lower and upper
// are uninterpreted functions that keep a string's length (Go's case mapping maps code
// point to code point); what else they do is learnt from the VM, one witness at a time
// (analysis.go). Sets are cvc5's finite sets.

// errUnsupported is a policy the encoding cannot express exactly for the solver at
// hand; the analysis refuses it rather than answer wrongly.
var errUnsupported = errors.New("policy: the analysis cannot express")

// smtVar is a parameter or an evidence field, shared by the policies of one question:
// whether it is present, which of the types the policies give it it has, and a value
// of each of those types.
type smtVar struct {
	name    string
	present string
	tag     string // an Int symbol, "" when the policies agree on one type
	types   []Type
	vals    map[Type]string
}

// hasType is the term "the value is of type t".
func (v *smtVar) hasType(t Type) string {
	if v.tag == "" {
		return "true"
	}
	return "(= " + v.tag + " " + strconv.Itoa(slices.Index(v.types, t)) + ")"
}

// ufApp is an application of lower or upper: the refinement learns its value at the
// argument the solver chose.
type ufApp struct {
	fn       fn
	arg, val string
}

// encoder writes the declarations of one question's variables and policies.
type encoder struct {
	d         Dialect
	out       strings.Builder
	params    map[string]*smtVar
	evidence  map[string]*smtVar
	ctx       [numCtx]string
	timeKnown string
	ufs       []ufApp
	n         int
	err       error
}

// newEncoder declares the variables of the policies: the union of their parameters,
// their evidence fields and the context.
func newEncoder(d Dialect, ps ...*Policy) *encoder {
	e := &encoder{d: d, params: map[string]*smtVar{}, evidence: map[string]*smtVar{}}
	e.line("(declare-fun lower (String) String)")
	e.line("(declare-fun upper (String) String)")
	for _, p := range ps {
		for _, f := range p.evidence {
			if f.Type == TypeAny {
				e.fail("evidence.%s, whose type the policy leaves open (any): declare it in an evidence block", f.Name)
			}
		}
	}
	e.declare("P", e.params, func(p *Policy) []Field {
		fs := make([]Field, len(p.params))
		for i, d := range p.params {
			fs[i] = Field{Name: d.Name, Type: d.Type}
		}
		return fs
	}, ps)
	e.declare("E", e.evidence, func(p *Policy) []Field { return p.evidence }, ps)
	for v := ctxVal(0); v < numCtx; v++ {
		if v == ctxAmount {
			continue // each policy's own amount
		}
		e.ctx[v] = "C." + strings.ReplaceAll(ctxNames[v], ".", "_")
		e.line("(declare-const " + e.ctx[v] + " Int)")
		e.assert(inRange(e.ctx[v]))
	}
	e.timeKnown = "C.time_known"
	e.line("(declare-const C.time_known Bool)")
	// The engine's totals are sums of non-negative amounts, within the period and
	// overall; a decision's time is never the zero time.Time, which means "no time".
	sp, pu, psp, ppu := e.ctx[ctxSpent], e.ctx[ctxPurchases], e.ctx[ctxPeriodSpent], e.ctx[ctxPeriodPurchases]
	e.assert("(<= 0 " + psp + " " + sp + ")")
	e.assert("(<= 0 " + ppu + " " + pu + ")")
	e.assert("(=> (= " + pu + " 0) (= " + sp + " 0))")
	e.assert("(=> (= " + ppu + " 0) (= " + psp + " 0))")
	e.assert("(not (= " + e.ctx[ctxTime] + " " + intTerm(zeroTimeUnix) + "))")
	return e
}

// zeroTimeUnix is the Unix time of time.Time's zero value, which a Context reads as
// "no decision time".
const zeroTimeUnix = -62135596800

func (e *encoder) line(s string) {
	e.out.WriteString(s)
	e.out.WriteByte('\n')
}

func (e *encoder) assert(term string) { e.line("(assert " + term + ")") }

func (e *encoder) fail(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf("%w %s", errUnsupported, fmt.Sprintf(format, args...))
	}
}

// declare declares the variables of one kind (P parameters, E evidence) of every policy.
func (e *encoder) declare(kind string, vars map[string]*smtVar, fields func(*Policy) []Field, ps []*Policy) {
	var names []string
	for _, p := range ps {
		for _, f := range fields(p) {
			v, ok := vars[f.Name]
			if !ok {
				v = &smtVar{name: f.Name, vals: map[Type]string{}}
				vars[f.Name] = v
				names = append(names, f.Name)
			}
			if !slices.Contains(v.types, f.Type) {
				v.types = append(v.types, f.Type)
			}
		}
	}
	slices.Sort(names)
	for _, name := range names {
		v := vars[name]
		base := kind + "." + name
		v.present = base + ".present"
		e.line("(declare-const " + v.present + " Bool)")
		if len(v.types) > 1 {
			v.tag = base + ".type"
			e.line("(declare-const " + v.tag + " Int)")
			e.assert(fmt.Sprintf("(<= 0 %s %d)", v.tag, len(v.types)-1))
		}
		for _, t := range v.types {
			sym := base + "." + typeSymbol(t)
			v.vals[t] = sym
			e.line("(declare-const " + sym + " " + e.sort(t) + ")")
			switch t {
			case TypeInt:
				e.assert(inRange(sym))
			case TypeString:
				// Nothing in memory is longer; said, it spares the solver a search
				// for strings of 2^63 characters.
				e.assert(scalarString(sym))
				e.assert("(<= (str.len " + sym + ") " + intTerm(math.MaxInt64) + ")")
			case TypeStringSet, TypeIntSet:
				e.assert("(<= (set.card " + sym + ") " + intTerm(math.MaxInt64) + ")")
			}
		}
	}
}

func sortedKeys(m map[string]*smtVar) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func typeSymbol(t Type) string {
	switch t {
	case TypeStringSet:
		return "strset"
	case TypeIntSet:
		return "intset"
	}
	return t.String()
}

// sort is the SMT sort of a type.
func (e *encoder) sort(t Type) string {
	switch t {
	case TypeInt:
		return "Int"
	case TypeString:
		return "String"
	case TypeBool:
		return "Bool"
	case TypeStringSet, TypeIntSet:
		if e.d != DialectCVC5 {
			e.fail("sets with %s (it has no finite sets with cardinality): install cvc5", e.d)
		}
		if t == TypeIntSet {
			return "(Set Int)"
		}
		return "(Set String)"
	}
	e.fail("a value of type %s", t)
	return "Bool"
}

// scalarString keeps a string variable to Unicode scalar values, which is what a Go
// string read from JSON holds: SMT-LIB's characters include the surrogates. (Said as
// "holds no surrogate", which cvc5 decides far faster than "is a run of the others".)
func scalarString(sym string) string {
	return `(not (str.in_re ` + sym + ` (re.++ re.all (re.range "\u{d800}" "\u{dfff}") re.all)))`
}

// inRange is the term "x is an int64".
func inRange(x string) string {
	return "(<= " + intTerm(math.MinInt64) + " " + x + " " + intTerm(math.MaxInt64) + ")"
}

func intTerm(n int64) string {
	if n < 0 {
		return "(- " + strings.TrimPrefix(strconv.FormatInt(n, 10), "-") + ")"
	}
	return strconv.FormatInt(n, 10)
}

// strTerm is an SMT-LIB 2.6 string literal: printable ASCII as itself, a quote
// doubled, everything else (and the backslash, which would start an escape) as
// \u{...}. The solvers' alphabet ends at U+2FFFF.
func (e *encoder) strTerm(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r > 0x2ffff:
			e.fail("the character %U of a string literal (the solver's strings end at U+2FFFF)", r)
		case r == '"':
			b.WriteString(`""`)
		case r >= 0x20 && r < 0x7f && r != '\\':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, `\u{%x}`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func and(terms ...string) string { return junction("and", "true", "false", terms) }

func or(terms ...string) string { return junction("or", "false", "true", terms) }

// junction is (op terms...) with the terms equal to unit left out, zero if one is
// zero, and the one term left as itself: the terms the encoding writes stay small.
func junction(op, unit, zero string, terms []string) string {
	var keep []string
	for _, t := range terms {
		switch t {
		case unit:
		case zero:
			return zero
		default:
			keep = append(keep, t)
		}
	}
	switch len(keep) {
	case 0:
		return unit
	case 1:
		return keep[0]
	}
	return "(" + op + " " + strings.Join(keep, " ") + ")"
}

func not(t string) string {
	switch t {
	case "true":
		return "false"
	case "false":
		return "true"
	}
	return "(not " + t + ")"
}

func implies(a, b string) string { return or(not(a), b) }

// policyTerms are the terms of one policy of a question.
type policyTerms struct {
	p *Policy
	// holds is each constraint's "it holds" (a Bool symbol); evaluated is "it is
	// evaluated on complete values": the optional parameters of an optional:
	// constraint present, every evidence field present with its type, the decision
	// time known if the policy reads it.
	holds, evaluated []string
	// reached is "the optional parameters of an optional: constraint are given", so
	// that it is evaluated rather than skipped; true for other constraints.
	reached []string
	// valid is "the intent's attrs are accepted": each required parameter present,
	// each given one of its declared type, no other; accepted is valid and every
	// constraint holding.
	valid, accepted string
}

// polEnc encodes one policy's expressions, its symbols named with a prefix of its own.
type polEnc struct {
	e      *encoder
	p      *Policy
	prefix string
	amount [2]string // the amount part's value and ok, when it has one
}

// encode declares the terms of p.
func (e *encoder) encode(p *Policy, prefix string) *policyTerms {
	pe := &polEnc{e: e, p: p, prefix: prefix}
	if p.f.amount != nil {
		v, ok := pe.expr(p.f.amount)
		pe.amount = [2]string{v, and(ok, "(<= 0 "+v+")")}
	}
	pt := &policyTerms{p: p}
	var valid []string
	for _, d := range p.params {
		v := e.params[d.Name]
		if d.Optional {
			valid = append(valid, implies(v.present, v.hasType(d.Type)))
		} else {
			valid = append(valid, v.present, v.hasType(d.Type))
		}
	}
	for _, name := range sortedKeys(e.params) {
		if _, ok := p.param(name); !ok {
			valid = append(valid, not(e.params[name].present))
		}
	}
	pt.valid = pe.def("Bool", "valid", and(valid...))
	var complete []string
	for _, f := range p.evidence {
		v := e.evidence[f.Name]
		complete = append(complete, v.present, v.hasType(f.Type))
	}
	if p.reads&DecisionTime != 0 {
		complete = append(complete, e.timeKnown)
	}
	all := []string{pt.valid}
	for i, c := range p.cons {
		v, ok := pe.expr(c.x)
		hold := and(ok, v)
		eval, reached := complete, "true"
		if c.optional {
			var skip []string
			for _, s := range c.optSlots {
				skip = append(skip, not(e.params[p.params[s].Name].present))
			}
			hold = or(append(skip, hold)...)
			reached = pe.def("Bool", "r"+strconv.Itoa(i), not(or(skip...)))
			eval = append(slices.Clone(complete), reached)
		}
		pt.reached = append(pt.reached, reached)
		pt.holds = append(pt.holds, pe.def("Bool", "h"+strconv.Itoa(i), hold))
		pt.evaluated = append(pt.evaluated, pe.def("Bool", "ev"+strconv.Itoa(i), and(eval...)))
		all = append(all, pt.holds[i])
	}
	pt.accepted = pe.def("Bool", "accepted", and(all...))
	return pt
}

// def names a term, so that a term used twice is written once: the value of a node is
// read by its ok term and by its parent's.
func (pe *polEnc) def(sort, name, term string) string {
	if !strings.ContainsAny(term, " ()") {
		return term
	}
	sym := pe.prefix + "." + name
	pe.e.line("(define-fun " + sym + " () " + sort + " " + term + ")")
	return sym
}

// node names the term of an expression node.
func (pe *polEnc) node(sort, term string) string {
	pe.e.n++
	return pe.def(sort, "n"+strconv.Itoa(pe.e.n), term)
}

// expr is the value and the ok term of x.
func (pe *polEnc) expr(x expr) (v, ok string) {
	e := pe.e
	switch x := x.(type) {
	case *intLit:
		return intTerm(x.v), "true"
	case *strLit:
		return e.strTerm(x.v), "true"
	case *boolLit:
		return strconv.FormatBool(x.v), "true"
	case *setLit:
		return pe.setLit(x), "true"
	case *ref:
		if x.evidence {
			f := pe.p.evidence[x.slot]
			sv := e.evidence[f.Name]
			return sv.vals[f.Type], and(sv.present, sv.hasType(f.Type))
		}
		d := pe.p.params[x.slot]
		sv := e.params[d.Name]
		return sv.vals[d.Type], and(sv.present, sv.hasType(d.Type))
	case *ctxRef:
		switch x.v {
		case ctxAmount:
			return pe.amount[0], pe.amount[1]
		case ctxTime:
			return e.ctx[ctxTime], e.timeKnown
		}
		return e.ctx[x.v], "true"
	case *unary:
		xv, xok := pe.expr(x.x)
		if x.op == opNot {
			return pe.node("Bool", not(xv)), xok
		}
		v := pe.node("Int", "(- "+xv+")")
		return v, pe.node("Bool", and(xok, inRange(v)))
	case *binaryExpr:
		return pe.binary(x)
	case *chain:
		return pe.chain(x)
	case *call:
		return pe.call(x)
	}
	e.fail("an expression of kind %T", x)
	return "false", "false"
}

func (pe *polEnc) setLit(x *setLit) string {
	var elems []string
	for _, s := range x.strs {
		elems = append(elems, pe.e.strTerm(s))
	}
	for _, n := range x.ints {
		elems = append(elems, intTerm(n))
	}
	if pe.e.d != DialectCVC5 {
		pe.e.fail("sets with %s (it has no finite sets with cardinality): install cvc5", pe.e.d)
		return "false"
	}
	if len(elems) == 1 {
		return "(set.singleton " + elems[0] + ")"
	}
	last := len(elems) - 1
	sort := "(Set String)"
	if x.elem == TypeInt {
		sort = "(Set Int)"
	}
	return pe.node(sort, "(set.insert "+strings.Join(elems[:last], " ")+" (set.singleton "+elems[last]+"))")
}

func (pe *polEnc) binary(x *binaryExpr) (v, ok string) {
	if lit, isLit := x.y.(*setLit); isLit && (x.op == opIn || x.op == opNotIn) {
		// Membership in a literal is a disjunction of equalities: no set theory,
		// which z3 here lacks and cvc5 needs more time for.
		xv, xok := pe.expr(x.x)
		var eqs []string
		for _, s := range lit.strs {
			eqs = append(eqs, "(= "+xv+" "+pe.e.strTerm(s)+")")
		}
		for _, n := range lit.ints {
			eqs = append(eqs, "(= "+xv+" "+intTerm(n)+")")
		}
		in := or(eqs...)
		if x.op == opNotIn {
			in = not(in)
		}
		return pe.node("Bool", in), xok
	}
	xv, xok := pe.expr(x.x)
	yv, yok := pe.expr(x.y)
	switch x.op {
	case opAnd:
		return pe.node("Bool", and(xv, yv)), pe.node("Bool", and(xok, implies(xv, yok)))
	case opOr:
		return pe.node("Bool", or(xv, yv)), pe.node("Bool", and(xok, or(xv, yok)))
	case opAdd, opSub, opMul:
		v := pe.node("Int", "("+map[op]string{opAdd: "+", opSub: "-", opMul: "*"}[x.op]+" "+xv+" "+yv+")")
		return v, pe.node("Bool", and(xok, yok, inRange(v)))
	}
	return pe.node("Bool", pe.compare(x.op, xv, yv)), pe.node("Bool", and(xok, yok))
}

// smtCompare is each comparison's SMT function, and whether the result is negated.
var smtCompare = map[op]struct {
	fn  string
	not bool
}{
	opEq: {"=", false}, opNe: {"=", true}, opLt: {"<", false}, opLe: {"<=", false},
	opGt: {">", false}, opGe: {">=", false}, opIn: {"set.member", false}, opNotIn: {"set.member", true},
}

// compare is a comparison or a membership of two values.
func (pe *polEnc) compare(o op, x, y string) string {
	c, ok := smtCompare[o]
	if !ok {
		pe.e.fail("the operator %s", o)
		return "false"
	}
	t := "(" + c.fn + " " + x + " " + y + ")"
	if c.not {
		return not(t)
	}
	return t
}

// chain is a op1 b op2 c ...: each link is evaluated only if the ones before it held.
func (pe *polEnc) chain(x *chain) (v, ok string) {
	vals := make([]string, len(x.xs))
	oks := make([]string, len(x.xs))
	for i, xi := range x.xs {
		vals[i], oks[i] = pe.expr(xi)
	}
	links := make([]string, len(x.ops))
	for j, o := range x.ops {
		links[j] = pe.node("Bool", pe.compare(o, vals[j], vals[j+1]))
	}
	// Operand j+1 is evaluated only when link j-1 held.
	rest := "true"
	for j := len(x.ops) - 1; j >= 1; j-- {
		rest = implies(links[j-1], and(oks[j+1], rest))
	}
	return pe.node("Bool", and(links...)), pe.node("Bool", and(oks[0], oks[1], rest))
}

func (pe *polEnc) call(x *call) (v, ok string) {
	args := make([]string, len(x.args))
	oks := make([]string, len(x.args))
	for i, a := range x.args {
		args[i], oks[i] = pe.expr(a)
	}
	ok = pe.node("Bool", and(oks...))
	switch x.fn {
	case fnLen:
		if x.args[0].node().typ == TypeString {
			return pe.node("Int", "(str.len "+args[0]+")"), ok
		}
		return pe.node("Int", "(set.card "+args[0]+")"), ok
	case fnLower, fnUpper:
		if lit, ok := x.args[0].(*strLit); ok {
			mapped := strings.ToLower(lit.v)
			if x.fn == fnUpper {
				mapped = strings.ToUpper(lit.v)
			}
			return pe.e.strTerm(mapped), "true"
		}
		v := pe.node("String", "("+fnNames[x.fn]+" "+args[0]+")")
		pe.e.ufs = append(pe.e.ufs, ufApp{fn: x.fn, arg: args[0], val: v})
		pe.e.assert("(= (str.len " + v + ") (str.len " + args[0] + "))")
		return v, ok
	case fnContains:
		return pe.node("Bool", "(str.contains "+args[0]+" "+args[1]+")"), ok
	case fnStartsWith:
		return pe.node("Bool", "(str.prefixof "+args[1]+" "+args[0]+")"), ok
	case fnEndsWith:
		return pe.node("Bool", "(str.suffixof "+args[1]+" "+args[0]+")"), ok
	case fnSubset:
		return pe.node("Bool", "(set.subset "+args[0]+" "+args[1]+")"), ok
	case fnIntersects:
		sort := pe.e.sort(x.args[0].node().typ)
		return pe.node("Bool", "(not (= (set.inter "+args[0]+" "+args[1]+") (as set.empty "+sort+")))"), ok
	}
	pe.e.fail("the function %s", x.name)
	return "false", "false"
}
