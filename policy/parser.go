package policy

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
)

// parser is a recursive-descent parser over the token slice. An error inside a
// constraint or a declaration abandons that piece (a bailout panic, recovered at the
// piece's boundary), skips to where the next piece starts, and goes on.
type parser struct {
	toks  []token
	p     int
	tok   token
	errs  *errList
	depth int
	// paramsWord is how the parameters block was spelled (parameters or intent).
	paramsWord string
}

type bailout struct{}

// parse reads src into a syntax tree. A non-nil error is an ErrorList.
func parse(src string) (*file, error) {
	errs := &errList{}
	if len(src) > MaxSourceBytes {
		errs.add(Pos{1, 1}, "source is %d bytes, over the limit of %d bytes (64 KiB)", len(src), MaxSourceBytes)
		return nil, errs.err()
	}
	p := &parser{toks: lex(src, errs), errs: errs}
	p.tok = p.toks[0]
	f := p.file()
	if len(errs.list) > 0 {
		// Keep the first error of a line: the ones after it are mostly echoes of it.
		sort.SliceStable(errs.list, func(i, j int) bool { return errs.list[i].Pos.before(errs.list[j].Pos) })
		errs.list = slices.CompactFunc(errs.list, func(a, b *Error) bool { return a.Pos.Line == b.Pos.Line })
		return nil, errs.err()
	}
	return f, nil
}

func (p *parser) next() {
	if p.p < len(p.toks)-1 {
		p.p++
	}
	p.tok = p.toks[p.p]
}

func (p *parser) peek(i int) token {
	if p.p+i < len(p.toks) {
		return p.toks[p.p+i]
	}
	return p.toks[len(p.toks)-1]
}

// fail records an error and abandons the current piece.
func (p *parser) fail(pos Pos, format string, args ...any) {
	// The lexer has reported an invalid token already; its report says more.
	if p.tok.kind != tIllegal || pos != p.tok.pos {
		p.errs.add(pos, format, args...)
	}
	panic(bailout{})
}

func (p *parser) expect(k tokKind, what string) Pos {
	pos := p.tok.pos
	if p.tok.kind != k {
		p.fail(pos, "expected %s, found %s", what, p.tok.describe())
	}
	p.next()
	return pos
}

func (p *parser) ident(what string) token {
	t := p.tok
	if t.kind != tIdent {
		p.fail(t.pos, "expected %s, found %s", what, t.describe())
	}
	p.next()
	return t
}

// recovering runs f; after a bailout it runs sync and reports false.
func (p *parser) recovering(f func(), sync func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(bailout); !is {
				panic(r)
			}
			p.depth = 0
			if p.errs.full() {
				panic(r)
			}
			sync()
			ok = false
		}
	}()
	f()
	return true
}

var sectionWords = map[string]string{
	"name": "name", "extractor": "extractor", "agents": "agents", "amount": "amount", "period": "period",
	"parameters": "parameters", "intent": "parameters", "evidence": "evidence", "requires": "requires",
}

const sectionList = "name, extractor, agents, amount, period, parameters, evidence or requires"

// startsExpr reports whether a token of kind k may start an expression.
func startsExpr(k tokKind) bool {
	switch k {
	case tIdent, tInt, tString, tLParen, tLBrace, tMinus, tBang:
		return true
	}
	return false
}

// atSection reports whether the current token starts a top-level section.
func (p *parser) atSection() bool {
	if p.tok.kind != tIdent || sectionWords[p.tok.text] == "" || p.p > 0 && p.toks[p.p-1].kind == tDot {
		return false
	}
	switch nx := p.peek(1); p.tok.text {
	case "name", "agents", "period":
		return nx.kind == tIdent
	case "amount":
		// A word is a part only where it starts one: a field called amount is
		// followed by ':', a reference to one comes after a '.'.
		return startsExpr(nx.kind)
	case "extractor":
		return nx.kind == tString
	default:
		return nx.kind == tLBrace
	}
}

func (p *parser) syncSection() {
	p.next()
	for p.tok.kind != tEOF && !p.atSection() {
		p.next()
	}
}

func (p *parser) file() *file {
	f := &file{}
	seen := map[string]Pos{}
	defer func() {
		// Too many errors: stop where we are.
		if r := recover(); r != nil {
			if _, is := r.(bailout); !is {
				panic(r)
			}
		}
	}()
	for p.tok.kind != tEOF {
		p.recovering(func() { p.section(f, seen) }, p.syncSection)
	}
	if _, ok := seen["name"]; !ok {
		p.errs.add(Pos{1, 1}, "missing name: a policy starts with `name IDENT`")
	}
	if _, ok := seen["requires"]; !ok {
		p.errs.add(p.tok.pos, "missing requires block: want `requires { constraint; ... }`")
	}
	return f
}

func (p *parser) section(f *file, seen map[string]Pos) {
	t := p.tok
	key := sectionWords[t.text]
	if t.kind != tIdent || key == "" {
		p.fail(t.pos, "expected %s, found %s", sectionList, t.describe())
	}
	p.next()
	first, repeated := seen[key]
	if repeated {
		also := ""
		if key == "parameters" && t.text != p.paramsWord {
			also = "; intent is another spelling of parameters"
		}
		switch key {
		case "name", "extractor":
			p.errs.add(t.pos, "repeated %s (first at %s)", key, first)
		case "agents":
			// "repeated agents" would read as agents named twice, not the part twice.
			p.errs.add(t.pos, "repeated agents part (first at %s): a policy delegates to the agents of one parameter", first)
		case "amount":
			p.errs.add(t.pos, "repeated amount part (first at %s): a purchase has one amount", first)
		case "period":
			p.errs.add(t.pos, "repeated period part (first at %s): the period totals count in one period", first)
		default:
			p.errs.add(t.pos, "repeated %s block (first at %s%s)", key, first, also)
		}
	} else {
		seen[key] = t.pos
		if key == "parameters" {
			p.paramsWord = t.text
		}
	}
	// A repeated section is still parsed, for its own errors, into a throwaway file.
	dst := f
	if repeated {
		dst = &file{}
	}
	switch key {
	case "name":
		n := p.ident("the policy name (an identifier)")
		dst.name, dst.namePos = n.text, n.pos
	case "extractor":
		s := p.tok
		p.expect(tString, "the extractor name as a string")
		if err := checkExtractorName(s.text); err != "" {
			p.fail(s.pos, "%s", err)
		}
		dst.extractor, dst.hasExtractor = s.text, true
	case "agents":
		dst.agents = p.agentsRef()
	case "amount":
		dst.amount, dst.amountPos = p.amountExpr(), t.pos
	case "period":
		dst.period, dst.periodPos = p.periodWord(), t.pos
	case "parameters":
		dst.params = p.fieldBlock(t.text, true)
	case "evidence":
		dst.evidence = p.fieldBlock("evidence", false)
		dst.evidenceDeclared = true
	case "requires":
		dst.requiresPos = t.pos
		p.requires(dst)
	}
}

// agentsRef reads what follows agents: parameters.NAME, or intent.NAME, the other
// spelling of parameters. It is read as a reference and not as an expression, because
// the part names a parameter rather than computing a value, and an error can then say
// what is wanted. Only a parameter will do: its value is in the intent's attrs, which
// the person signs, so the delegation is signed with the intent; evidence comes from the
// extractor and says nothing the person vouched for.
func (p *parser) agentsRef() *ref {
	t := p.tok
	switch {
	case t.is("evidence") && p.peek(1).kind == tDot:
		p.fail(t.pos, "agents names a parameter, not evidence: the agents must be in the intent's signed attrs (want parameters.NAME)")
	case !t.is("parameters") && !t.is("intent"):
		p.fail(t.pos, "expected parameters.NAME after agents (the parameter that lists the agents), found %s", t.describe())
	}
	p.next()
	if p.tok.kind != tDot {
		p.fail(p.tok.pos, "expected '.' and a parameter name after %s, found %s", t.text, p.tok.describe())
	}
	p.next()
	n := p.ident("a parameter name after " + t.text + ".")
	return &ref{exprNode: exprNode{pos: t.pos}, name: n.text}
}

// amountExpr reads what follows amount: an expression, the amount of one purchase.
// It ends where the expression does, as a constraint would at its ';': the next part
// starts with a word that no expression continues with.
func (p *parser) amountExpr() expr {
	if p.tok.kind == tEOF || p.tok.kind == tSemi || p.atSection() {
		p.fail(p.tok.pos, "expected an int expression after amount (the amount of one purchase, such as evidence.price_cents), found %s", p.tok.describe())
	}
	return p.expr()
}

// periodWord reads what follows period: day, week or month.
func (p *parser) periodWord() period {
	t := p.tok
	if t.kind != tIdent {
		p.fail(t.pos, "expected day, week or month after period (the calendar period, in UTC, that the period totals count in), found %s", t.describe())
	}
	v := lookupPeriod(t.text)
	if v == periodNone {
		p.fail(t.pos, "unknown period %q (want day, week or month)", t.text)
	}
	p.next()
	return v
}

// checkExtractorName returns what is wrong with an extractor name, or "".
func checkExtractorName(s string) string {
	if s == "" {
		return "extractor name is empty"
	}
	if len(s) > maxExtractorName {
		return fmt.Sprintf("extractor name is %d bytes, over the limit of %d", len(s), maxExtractorName)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !isDigit(c) && c != '-' && c != '.' {
			return fmt.Sprintf("extractor name %s: want letters, digits, '_', '-' and '.' only", quote(s))
		}
	}
	return ""
}

func (p *parser) fieldBlock(block string, params bool) []*fieldDecl {
	p.expect(tLBrace, "'{' after "+block)
	var ds []*fieldDecl
	for p.tok.kind != tRBrace && p.tok.kind != tEOF {
		p.recovering(func() {
			ds = append(ds, p.fieldDecl(params))
			for p.tok.kind == tComma || p.tok.kind == tSemi {
				p.next()
			}
		}, func() {
			// Skip to the next `name:` or the end of the block.
			for p.tok.kind != tEOF && p.tok.kind != tRBrace && !(p.tok.kind == tIdent && p.peek(1).kind == tColon) {
				p.next()
			}
		})
	}
	p.expect(tRBrace, "'}' to close the "+block+" block")
	return ds
}

func (p *parser) fieldDecl(params bool) *fieldDecl {
	n := p.ident("a field name")
	if p.tok.kind != tColon {
		p.fail(p.tok.pos, "expected ':' after field name %q, found %s", n.text, p.tok.describe())
	}
	p.next()
	d := &fieldDecl{pos: n.pos, name: n.text}
	if p.tok.is("optional") {
		if !params {
			p.fail(p.tok.pos, "optional is only allowed in parameters: evidence fields are asked of the extractor, and a missing one fails its constraints")
		}
		d.optional = true
		p.next()
	}
	d.typ = p.typ()
	return d
}

const typeList = "int, string, bool, set<string>, set<int>"

func (p *parser) typ() Type {
	t := p.tok
	if t.kind != tIdent {
		p.fail(t.pos, "expected a type (%s), found %s", typeList, t.describe())
	}
	p.next()
	switch t.text {
	case "int":
		return TypeInt
	case "string":
		return TypeString
	case "bool":
		return TypeBool
	case "set":
		p.expect(tLt, "'<' after set (set<string> or set<int>)")
		e := p.tok
		if e.kind != tIdent || e.text != "string" && e.text != "int" {
			p.fail(e.pos, "unknown set element type %s (want set<string> or set<int>)", e.describe())
		}
		p.next()
		p.expect(tGt, "'>' to close set<"+e.text)
		if e.text == "int" {
			return TypeIntSet
		}
		return TypeStringSet
	case "optional":
		p.fail(t.pos, "optional may be given once, before the type")
	}
	p.fail(t.pos, "unknown type %q (want %s)", t.text, typeList)
	return typeUnknown
}

func (p *parser) requires(f *file) {
	p.expect(tLBrace, "'{' after requires")
	for p.tok.kind != tRBrace && p.tok.kind != tEOF {
		p.recovering(func() {
			f.constraints = append(f.constraints, p.constraint())
		}, p.syncConstraint)
	}
	p.expect(tRBrace, "'}' to close the requires block")
}

// syncConstraint skips to after the next ';', or to the '}' that closes requires.
func (p *parser) syncConstraint() {
	braces := 0
	for p.tok.kind != tEOF {
		switch p.tok.kind {
		case tSemi:
			if braces <= 0 {
				p.next()
				return
			}
		case tLBrace:
			braces++
		case tRBrace:
			if braces <= 0 {
				return
			}
			braces--
		}
		p.next()
	}
}

func (p *parser) constraint() *constraint {
	c := &constraint{pos: p.tok.pos}
	if p.tok.is("optional") && p.peek(1).kind == tColon {
		c.optional = true
		p.next()
		p.next()
	}
	c.x = p.expr()
	if p.tok.kind != tSemi {
		p.fail(p.tok.pos, "expected ';' after the constraint, found %s", p.tok.describe())
	}
	p.next()
	return c
}

func (p *parser) enter(pos Pos) {
	p.depth++
	if p.depth > MaxDepth {
		p.fail(pos, "expression nests deeper than the limit of %d levels", MaxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

func (p *parser) expr() expr { return p.or() }

func (p *parser) or() expr {
	x := p.and()
	for p.tok.is("or") || p.tok.kind == tOrOr {
		pos := p.tok.pos
		p.next()
		y := p.and()
		x = &binaryExpr{exprNode: exprNode{pos: x.node().pos}, op: opOr, x: x, y: y, opPos: pos}
	}
	return x
}

func (p *parser) and() expr {
	x := p.not()
	for p.tok.is("and") || p.tok.kind == tAndAnd {
		pos := p.tok.pos
		p.next()
		y := p.not()
		x = &binaryExpr{exprNode: exprNode{pos: x.node().pos}, op: opAnd, x: x, y: y, opPos: pos}
	}
	return x
}

func (p *parser) not() expr {
	if p.tok.is("not") || p.tok.kind == tBang {
		pos := p.tok.pos
		p.next()
		p.enter(pos)
		x := p.not()
		p.leave()
		return &unary{exprNode: exprNode{pos: pos}, op: opNot, x: x}
	}
	return p.cmp()
}

// cmpOp returns the comparison operator at the current token and how many tokens it
// spans.
func (p *parser) cmpOp() (op, int) {
	switch p.tok.kind {
	case tEq:
		return opEq, 1
	case tNe:
		return opNe, 1
	case tLt:
		return opLt, 1
	case tLe:
		return opLe, 1
	case tGt:
		return opGt, 1
	case tGe:
		return opGe, 1
	case tIdent:
		if p.tok.text == "in" {
			return opIn, 1
		}
		if p.tok.text == "not" && p.peek(1).is("in") {
			return opNotIn, 2
		}
	}
	return opNone, 0
}

func (p *parser) cmp() expr {
	x := p.add()
	o, n := p.cmpOp()
	if o == opNone {
		return x
	}
	xs := []expr{x}
	var ops []op
	var opPos []Pos
	for o != opNone {
		opPos = append(opPos, p.tok.pos)
		ops = append(ops, o)
		for ; n > 0; n-- {
			p.next()
		}
		xs = append(xs, p.add())
		o, n = p.cmpOp()
	}
	if len(ops) == 1 {
		return &binaryExpr{exprNode: exprNode{pos: x.node().pos}, op: ops[0], x: xs[0], y: xs[1], opPos: opPos[0]}
	}
	for i, o := range ops {
		if o == opIn || o == opNotIn {
			p.fail(opPos[i], "%s cannot be chained with another comparison: use parentheses", o)
		}
	}
	return &chain{exprNode: exprNode{pos: x.node().pos}, ops: ops, xs: xs, opPos: opPos}
}

func (p *parser) add() expr {
	x := p.mul()
	for p.tok.kind == tPlus || p.tok.kind == tMinus {
		o := opAdd
		if p.tok.kind == tMinus {
			o = opSub
		}
		pos := p.tok.pos
		p.next()
		y := p.mul()
		x = &binaryExpr{exprNode: exprNode{pos: x.node().pos}, op: o, x: x, y: y, opPos: pos}
	}
	return x
}

func (p *parser) mul() expr {
	x := p.unary()
	for p.tok.kind == tStar {
		pos := p.tok.pos
		p.next()
		y := p.unary()
		x = &binaryExpr{exprNode: exprNode{pos: x.node().pos}, op: opMul, x: x, y: y, opPos: pos}
	}
	return x
}

// minInt64Digits is the one integer literal beyond int64 that a minus sign brings back in.
const minInt64Digits = "9223372036854775808"

func (p *parser) unary() expr {
	if p.tok.kind != tMinus {
		return p.primary()
	}
	pos := p.tok.pos
	p.next()
	if p.tok.kind == tInt && p.tok.text == minInt64Digits {
		p.next()
		return &intLit{exprNode: exprNode{pos: pos}, v: math.MinInt64}
	}
	p.enter(pos)
	x := p.unary()
	p.leave()
	return &unary{exprNode: exprNode{pos: pos}, op: opNeg, x: x}
}

func (p *parser) intValue(t token) int64 {
	v, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil {
		p.fail(t.pos, "integer literal %s is out of the int64 range", t.text)
	}
	return v
}

var exprWords = map[string]bool{"and": true, "or": true, "not": true, "in": true}

func (p *parser) primary() expr {
	t := p.tok
	switch t.kind {
	case tInt:
		p.next()
		return &intLit{exprNode: exprNode{pos: t.pos}, v: p.intValue(t)}
	case tString:
		p.next()
		return &strLit{exprNode: exprNode{pos: t.pos}, v: t.text}
	case tLParen:
		p.next()
		p.enter(t.pos)
		x := p.expr()
		p.leave()
		if p.tok.kind != tRParen {
			p.fail(p.tok.pos, "expected ')' to close the '(' at %s, found %s", t.pos, p.tok.describe())
		}
		p.next()
		return x
	case tLBrace:
		return p.setLit()
	case tIdent:
		switch t.text {
		case "true", "false":
			p.next()
			return &boolLit{exprNode: exprNode{pos: t.pos}, v: t.text == "true"}
		case "parameters", "intent", "evidence":
			p.next()
			if p.tok.kind != tDot {
				p.fail(p.tok.pos, "expected '.' and a field name after %s, found %s", t.text, p.tok.describe())
			}
			p.next()
			n := p.ident("a field name after " + t.text + ".")
			return &ref{exprNode: exprNode{pos: t.pos}, evidence: t.text == "evidence", name: n.text}
		case "mandate", "purchase", "decision":
			// Values of the decision's context. Only with the dot: alone, the words
			// are what they always were, names a reference or a call may use.
			if p.peek(1).kind == tDot {
				return p.ctxRef()
			}
		}
		if exprWords[t.text] {
			p.fail(t.pos, "expected an expression, found %s", t.describe())
		}
		if p.peek(1).kind == tLParen {
			return p.call()
		}
		p.fail(t.pos, "unknown name %q (want parameters.%s, evidence.%s, a literal or a function call)", t.text, t.text, t.text)
	}
	p.fail(t.pos, "expected an expression, found %s", t.describe())
	return nil
}

// ctxRef reads mandate.NAME, purchase.NAME or decision.NAME; which values there are,
// and where each may be read, is the checker's.
func (p *parser) ctxRef() expr {
	t := p.tok
	p.next()
	p.next() // '.'
	n := p.ident("a value name after " + t.text + ".")
	v, ok := lookupCtx(t.text, n.text)
	if !ok {
		p.fail(t.pos, "unknown value %s.%s (want %s)", t.text, n.text, ctxList(t.text))
	}
	return &ctxRef{exprNode: exprNode{pos: t.pos}, v: v}
}

func (p *parser) call() expr {
	t := p.tok
	p.next()
	p.next() // '('
	p.enter(t.pos)
	c := &call{exprNode: exprNode{pos: t.pos}, fn: lookupFn(t.text), name: t.text}
	if p.tok.kind != tRParen {
		for {
			c.args = append(c.args, p.expr())
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
	}
	if p.tok.kind != tRParen {
		p.fail(p.tok.pos, "expected ',' or ')' in the arguments of %s, found %s", t.text, p.tok.describe())
	}
	p.next()
	p.leave()
	return c
}

func (p *parser) setLit() expr {
	open := p.tok.pos
	p.next()
	var strs []string
	var ints []int64
	n := 0
	for p.tok.kind != tRBrace {
		t := p.tok
		switch {
		case t.kind == tString:
			strs = append(strs, t.text)
			p.next()
		case t.kind == tInt:
			ints = append(ints, p.intValue(t))
			p.next()
		case t.kind == tMinus && p.peek(1).kind == tInt:
			p.next()
			if p.tok.text == minInt64Digits {
				ints = append(ints, math.MinInt64)
			} else {
				ints = append(ints, -p.intValue(p.tok))
			}
			p.next()
		default:
			p.fail(t.pos, "expected a string or integer literal in the set, found %s", t.describe())
		}
		n++
		if strs != nil && ints != nil {
			p.fail(t.pos, "set literal mixes strings and integers (want set<string> or set<int>)")
		}
		if n > MaxSetElements {
			p.fail(t.pos, "set literal has more than %d elements, the limit", MaxSetElements)
		}
		if p.tok.kind == tComma {
			p.next()
			continue
		}
		if p.tok.kind != tRBrace {
			p.fail(p.tok.pos, "expected ',' or '}' in the set literal, found %s", p.tok.describe())
		}
	}
	p.next()
	if n == 0 {
		p.fail(open, "empty set literal (want at least one element)")
	}
	if ints != nil {
		return newIntSetLit(open, ints)
	}
	return newStrSetLit(open, strs)
}
