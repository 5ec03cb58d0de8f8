package policy

import (
	"math"
	"strings"
)

// checker resolves references to declaration slots, types every expression and
// enforces the limits. For a policy without an evidence block (the older dialect) it
// first infers each evidence field's type from its uses: passes over the constraints
// assign a type to a field wherever the context fixes one, until a pass assigns
// nothing; fields still unknown are requested as any and checked when evaluated.
type checker struct {
	f      *file
	errs   *errList
	report bool // false during inference passes: they only learn types

	params   map[string]*fieldDecl
	paramIdx map[string]int
	ev       map[string]*fieldDecl
	evIdx    map[string]int

	// Older dialect: inferred types, and where each was inferred from.
	infer   bool
	evTypes map[string]Type
	evFrom  map[string]Pos
	changed bool

	// inAmount is set while the amount part is checked: it may read evidence and
	// parameters only.
	inAmount bool
}

// checkResult is the checked declarations, sorted by name: their index is the slot.
type checkResult struct {
	params   []*fieldDecl
	evidence []*fieldDecl
}

func check(f *file) (*checkResult, error) {
	errs := &errList{}
	c := &checker{f: f, errs: errs, report: true}
	res := &checkResult{}
	res.params, c.params, c.paramIdx = c.decls(f.params, "parameters", MaxParameters, true)
	if f.agents != nil {
		c.agents(f.agents)
	}
	if f.evidenceDeclared {
		res.evidence, c.ev, c.evIdx = c.decls(f.evidence, "evidence", MaxEvidence, false)
	}
	switch n := len(f.constraints); {
	case n == 0:
		errs.add(f.requiresPos, "requires block is empty (want at least one constraint)")
	case n > MaxConstraints:
		errs.add(f.constraints[MaxConstraints].pos, "more than %d constraints, the limit", MaxConstraints)
	}
	deep := make([]bool, len(f.constraints))
	for i, k := range f.constraints {
		if d := depth(k.x); d > MaxDepth {
			errs.add(k.pos, "expression nests %d levels deep, over the limit of %d", d, MaxDepth)
			deep[i] = true
		}
	}
	deepAmount := false
	if f.amount != nil {
		if d := depth(f.amount); d > MaxDepth {
			errs.add(f.amount.node().pos, "expression nests %d levels deep, over the limit of %d", d, MaxDepth)
			deepAmount = true
		}
	}
	if !f.evidenceDeclared {
		res.evidence = c.inferEvidence(deep, deepAmount)
	}
	if f.amount != nil && !deepAmount {
		c.amount()
	}
	if f.period != periodNone && f.amount == nil {
		errs.add(f.periodPos, "period needs an amount part (amount EXPR): the period totals are sums of the amounts of purchases")
	}
	for i, k := range f.constraints {
		if deep[i] {
			continue
		}
		if t := c.expr(k.x, TypeBool); t != TypeBool && t != typeUnknown {
			errs.add(k.x.node().pos, "a constraint must be bool: %s is %s", c.show(k.x), t)
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *checker) decls(ds []*fieldDecl, block string, limit int, params bool) ([]*fieldDecl, map[string]*fieldDecl, map[string]int) {
	byName := make(map[string]*fieldDecl, len(ds))
	for i, d := range ds {
		if i == limit {
			c.errs.add(d.pos, "more than %d %s fields, the limit", limit, block)
		}
		if first, ok := byName[d.name]; ok {
			c.errs.add(d.pos, "field %q declared twice in %s (first at %s)", d.name, block, first.pos)
			continue
		}
		if !d.typ.isValue() {
			c.errs.add(d.pos, "field %q has no valid type", d.name)
		}
		if d.optional && !params {
			c.errs.add(d.pos, "optional is only allowed in parameters")
		}
		if !isIdent(d.name) {
			c.errs.add(d.pos, "field name %q is not an identifier", d.name)
		}
		byName[d.name] = d
	}
	sorted := sortDecls(ds)
	idx := make(map[string]int, len(sorted))
	out := sorted[:0:0]
	for _, d := range sorted {
		if byName[d.name] == d {
			idx[d.name] = len(out)
			out = append(out, d)
		}
	}
	return out, byName, idx
}

// agents checks the parameter an agents part names and resolves its slot. It must be
// a set<string>, of the agents' Base58 public keys, and not optional: an intent that
// left it out would not say whether it delegates to no agent or is undelegated, and
// a policy without the part already means undelegated.
func (c *checker) agents(r *ref) {
	d, ok := c.params[r.name]
	if !ok {
		c.errs.add(r.pos, "agents names an undeclared parameter %q (%s)", r.name, declared(c.f.params, "the policy declares no parameters"))
		return
	}
	r.slot = c.paramIdx[r.name]
	switch {
	case !d.typ.isValue():
		// decls has said so.
	case d.typ != TypeStringSet:
		c.errs.add(r.pos, "agents needs a set<string> parameter (the agents' Base58 public keys): parameters.%s is %s", r.name, d.typ)
	case d.optional:
		c.errs.add(r.pos, "agents needs a parameter that is not optional: parameters.%s is optional, and an intent without it would not say whom it delegates to", r.name)
	}
}

// amount checks the amount part: an int, of evidence and parameters only.
func (c *checker) amount() {
	c.inAmount = true
	defer func() { c.inAmount = false }()
	if t := c.expr(c.f.amount, TypeInt); concrete(t) && t != TypeInt {
		c.errs.add(c.f.amount.node().pos, "the amount must be an int (the amount of one purchase): %s is %s", c.show(c.f.amount), t)
	}
}

// ctxRef checks where a context value is read. The amount is one purchase's price, so
// it cannot depend on the mandate or the time; the mandate's totals are sums of
// amounts, so they need the amount part, and the period totals a period to count in.
func (c *checker) ctxRef(e *ctxRef) {
	name := ctxNames[e.v]
	switch {
	case c.inAmount:
		c.errorf(e.pos, "the amount may read only evidence and parameters, not %s: it is the price of one purchase, whatever the mandate's totals or the time", name)
	case e.v == ctxAmount && c.f.amount == nil:
		c.errorf(e.pos, "purchase.amount needs an amount part (amount EXPR): it is the value of that expression")
	case e.v.isMandate() && c.f.amount == nil:
		c.errorf(e.pos, "%s needs an amount part (amount EXPR): the mandate's totals are sums of the amounts of its purchases", name)
	case e.v.inPeriod() && c.f.period == periodNone:
		c.errorf(e.pos, "%s needs a period part (period day, week or month): the calendar period its total counts in", name)
	}
}

func isIdent(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// inferEvidence finds the evidence fields of an older-dialect policy and their types,
// from the constraints and the amount part.
func (c *checker) inferEvidence(deep []bool, deepAmount bool) []*fieldDecl {
	c.infer = true
	c.evTypes = map[string]Type{}
	c.evFrom = map[string]Pos{}
	var order []*ref
	see := func(e expr) {
		if r, ok := e.(*ref); ok && r.evidence {
			if _, seen := c.evTypes[r.name]; !seen {
				c.evTypes[r.name] = typeUnknown
				order = append(order, r)
			}
		}
	}
	for i, k := range c.f.constraints {
		if !deep[i] {
			walk(k.x, see)
		}
	}
	amount := c.f.amount != nil && !deepAmount
	if amount {
		walk(c.f.amount, see)
	}
	if len(order) > MaxEvidence {
		c.errs.add(order[MaxEvidence].pos, "more than %d evidence fields, the limit", MaxEvidence)
	}
	c.report = false
	for pass := 0; pass <= len(order); pass++ {
		c.changed = false
		for i, k := range c.f.constraints {
			if !deep[i] {
				c.expr(k.x, TypeBool)
			}
		}
		if amount {
			c.expr(c.f.amount, TypeInt)
		}
		if !c.changed {
			break
		}
	}
	c.report = true
	ds := make([]*fieldDecl, 0, len(order))
	for _, r := range order {
		t := c.evTypes[r.name]
		if t == typeUnknown {
			t = TypeAny
			c.evTypes[r.name] = t
		}
		ds = append(ds, &fieldDecl{pos: r.pos, name: r.name, typ: t})
	}
	ds = sortDecls(ds)
	c.evIdx = make(map[string]int, len(ds))
	for i, d := range ds {
		c.evIdx[d.name] = i
	}
	return ds
}

func walk(e expr, f func(expr)) {
	f(e)
	switch e := e.(type) {
	case *unary:
		walk(e.x, f)
	case *binaryExpr:
		walk(e.x, f)
		walk(e.y, f)
	case *chain:
		for _, x := range e.xs {
			walk(x, f)
		}
	case *call:
		for _, x := range e.args {
			walk(x, f)
		}
	}
}

// concrete reports whether t is a known value type (not any, not unknown).
func concrete(t Type) bool { return t.isValue() }

// show is an expression as an error message quotes it, with an inferred type's origin.
func (c *checker) show(e expr) string {
	s := exprString(e)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	if r, ok := e.(*ref); ok && r.evidence && c.infer {
		if p, ok := c.evFrom[r.name]; ok && p != r.pos {
			s += " (inferred from its use at " + p.String() + ")"
		}
	}
	return s
}

func (c *checker) errorf(p Pos, format string, args ...any) {
	if c.report {
		c.errs.add(p, format, args...)
	}
}

// need checks that e has type want (any passes: it is checked when evaluated).
func (c *checker) need(e expr, want Type, what string) {
	t := c.expr(e, want)
	if concrete(t) && t != want {
		c.errorf(e.node().pos, "%s needs %s: %s is %s", what, article(want), c.show(e), t)
	}
}

func article(t Type) string {
	switch t {
	case TypeInt:
		return "an int"
	case TypeString:
		return "a string"
	case TypeBool:
		return "a bool"
	}
	return "a " + t.String()
}

// expr types e. want is the type the context asks for; inference uses it to type an
// evidence field, and the caller checks it.
func (c *checker) expr(e expr, want Type) Type {
	t := c.typeOf(e, want)
	e.node().typ = t
	return t
}

func (c *checker) typeOf(e expr, want Type) Type {
	switch e := e.(type) {
	case *intLit:
		if e.v < 0 && e.v != math.MinInt64 {
			c.errorf(e.pos, "negative integer literal %d: a negative number is the negation of a literal", e.v)
		}
		return TypeInt
	case *strLit:
		c.checkString(e.pos, e.v)
		return TypeString
	case *boolLit:
		return TypeBool
	case *setLit:
		if e.len() == 0 || e.len() > MaxSetElements {
			c.errorf(e.pos, "set literal has %d elements (want 1 to %d)", e.len(), MaxSetElements)
		}
		for _, s := range e.strs {
			c.checkString(e.pos, s)
		}
		return setOf(e.elem)
	case *ref:
		return c.ref(e, want)
	case *ctxRef:
		c.ctxRef(e)
		return TypeInt
	case *unary:
		if e.op == opNeg {
			c.need(e.x, TypeInt, "operator -")
			return TypeInt
		}
		c.need(e.x, TypeBool, "operator not")
		return TypeBool
	case *binaryExpr:
		switch e.op {
		case opAnd, opOr:
			c.need(e.x, TypeBool, "operator "+e.op.String())
			c.need(e.y, TypeBool, "operator "+e.op.String())
			return TypeBool
		case opAdd, opSub, opMul:
			c.need(e.x, TypeInt, "operator "+e.op.String())
			c.need(e.y, TypeInt, "operator "+e.op.String())
			return TypeInt
		case opIn, opNotIn:
			c.in(e)
			return TypeBool
		}
		c.compare([]op{e.op}, []expr{e.x, e.y}, []Pos{e.opPos})
		return TypeBool
	case *chain:
		c.compare(e.ops, e.xs, e.opPos)
		return TypeBool
	case *call:
		return c.call(e)
	}
	return typeUnknown
}

func (c *checker) checkString(p Pos, s string) {
	if len(s) > MaxStringBytes {
		c.errorf(p, "string literal is %d bytes, over the limit of %d bytes (4 KiB)", len(s), MaxStringBytes)
	}
}

func (c *checker) ref(e *ref, want Type) Type {
	if !e.evidence {
		d, ok := c.params[e.name]
		if !ok {
			c.errorf(e.pos, "undeclared parameter %q (%s)", e.name, declared(c.f.params, "the policy declares no parameters"))
			return typeUnknown
		}
		e.slot = c.paramIdx[e.name]
		if c.inAmount && d.optional {
			// Every purchase of every intent has an amount; optional: does not reach it.
			c.errorf(e.pos, "the amount cannot read an optional parameter: parameters.%s is optional, and the purchases of an intent without it would have no amount", e.name)
		}
		return d.typ
	}
	if !c.infer {
		d, ok := c.ev[e.name]
		if !ok {
			c.errorf(e.pos, "undeclared evidence field %q (%s)", e.name, declared(c.f.evidence, "the evidence block declares none"))
			return typeUnknown
		}
		e.slot = c.evIdx[e.name]
		return d.typ
	}
	t := c.evTypes[e.name]
	if t == typeUnknown && concrete(want) && !c.report {
		t = want
		c.evTypes[e.name] = t
		c.evFrom[e.name] = e.pos
		c.changed = true
	}
	if c.report {
		e.slot = c.evIdx[e.name]
	}
	return t
}

// declared lists the declared names for an "undeclared" message.
func declared(ds []*fieldDecl, none string) string {
	if len(ds) == 0 {
		return none
	}
	var b strings.Builder
	b.WriteString("declared: ")
	for i, d := range sortDecls(ds) {
		if i == 10 {
			b.WriteString(", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.name)
	}
	return b.String()
}

func (c *checker) in(e *binaryExpr) {
	tx := c.expr(e.x, typeUnknown)
	ty := c.expr(e.y, setOf(tx))
	if !c.report && tx == typeUnknown && ty.isSet() {
		tx = c.expr(e.x, ty.elem())
	}
	switch {
	case concrete(ty) && !ty.isSet():
		c.errorf(e.y.node().pos, "operator %s needs a set on its right: %s is %s", e.op, c.show(e.y), ty)
	case ty.isSet() && concrete(tx) && tx != ty.elem():
		c.errorf(e.x.node().pos, "operator %s needs %s on its left for a %s: %s is %s", e.op, article(ty.elem()), ty, c.show(e.x), tx)
	case tx.isSet() || tx == TypeBool:
		c.errorf(e.x.node().pos, "operator %s needs a string or an int on its left: %s is %s", e.op, c.show(e.x), tx)
	}
}

// compare checks a comparison or a chain of them: ordering needs ints, == and != two
// values of one type.
func (c *checker) compare(ops []op, xs []expr, opPos []Pos) {
	ts := make([]Type, len(xs))
	ordering := func(i int) bool { // operand i touches an ordering operator
		return i > 0 && ops[i-1] >= opLt || i < len(ops) && ops[i] >= opLt
	}
	for i, x := range xs {
		want := typeUnknown
		if ordering(i) {
			want = TypeInt
		} else if i > 0 && concrete(ts[i-1]) {
			want = ts[i-1]
		}
		ts[i] = c.expr(x, want)
	}
	if !c.report {
		// Equality passes a known type to an unknown neighbour, in both directions.
		for i := len(xs) - 2; i >= 0; i-- {
			if ts[i] == typeUnknown && concrete(ts[i+1]) {
				ts[i] = c.expr(xs[i], ts[i+1])
			}
		}
		return
	}
	for i, o := range ops {
		x, y, tx, ty := xs[i], xs[i+1], ts[i], ts[i+1]
		if o >= opLt {
			for _, s := range [...]struct {
				e expr
				t Type
			}{{x, tx}, {y, ty}} {
				if concrete(s.t) && s.t != TypeInt {
					c.errorf(s.e.node().pos, "operator %s needs int operands: %s is %s", o, c.show(s.e), s.t)
				}
			}
			continue
		}
		if concrete(tx) && concrete(ty) && tx != ty {
			pos := x.node().pos
			if i < len(opPos) { // a decoded tree has no operator positions
				pos = opPos[i]
			}
			c.errorf(pos, "cannot compare %s (%s) with %s (%s): the types differ", c.show(x), tx, c.show(y), ty)
		}
	}
}

func (c *checker) call(e *call) Type {
	if e.fn == fnUnknown {
		c.errorf(e.pos, "unknown function %q (want %s)", e.name, fnList)
		for _, a := range e.args {
			c.expr(a, typeUnknown)
		}
		return typeUnknown
	}
	result := TypeBool
	switch e.fn {
	case fnLen:
		result = TypeInt
	case fnLower, fnUpper:
		result = TypeString
	}
	if n := e.fn.arity(); len(e.args) != n {
		plural := "s"
		if n == 1 {
			plural = ""
		}
		c.errorf(e.pos, "%s takes %d argument%s, got %d", e.name, n, plural, len(e.args))
		for _, a := range e.args {
			c.expr(a, typeUnknown)
		}
		return result
	}
	switch e.fn {
	case fnLen:
		if t := c.expr(e.args[0], typeUnknown); concrete(t) && t != TypeString && !t.isSet() {
			c.errorf(e.args[0].node().pos, "len needs a string or a set: %s is %s", c.show(e.args[0]), t)
		}
	case fnLower, fnUpper:
		c.need(e.args[0], TypeString, e.name)
	case fnContains, fnStartsWith, fnEndsWith:
		c.need(e.args[0], TypeString, e.name)
		c.need(e.args[1], TypeString, e.name)
	case fnSubset, fnIntersects:
		a, b := e.args[0], e.args[1]
		ta := c.expr(a, typeUnknown)
		hint := typeUnknown
		if ta.isSet() {
			hint = ta
		}
		tb := c.expr(b, hint)
		if !c.report && ta == typeUnknown && tb.isSet() {
			ta = c.expr(a, tb)
		}
		for _, s := range [...]struct {
			e expr
			t Type
		}{{a, ta}, {b, tb}} {
			if concrete(s.t) && !s.t.isSet() {
				c.errorf(s.e.node().pos, "%s needs two sets: %s is %s", e.name, c.show(s.e), s.t)
			}
		}
		if ta.isSet() && tb.isSet() && ta != tb {
			c.errorf(e.pos, "%s needs two sets of one type: %s is %s, %s is %s", e.name, c.show(a), ta, c.show(b), tb)
		}
	}
	return result
}
