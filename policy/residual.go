package policy

// Residuals: a policy partially evaluated on an intent's parameters. Before an agent
// searches for a solution, the parameters are known and the evidence is not: each
// constraint with every parameter put in and what that decides folded away either
// holds whatever the evidence, fails whatever the evidence, or leaves an expression
// over the evidence (and the decision's context), which tells the agent what to look
// for. The folding uses the machine's own operations (apply1, apply2) in the machine's
// order, and folds only what the evidence cannot change, faults included: a residual
// evaluated on any evidence holds, or fails with the same missing evidence, exactly
// when the constraint would.

// ResidualState is what a constraint's residual says before any evidence is seen.
type ResidualState string

// The states of a residual.
const (
	// ResidualHolds: the constraint holds whatever the evidence.
	ResidualHolds ResidualState = "holds"
	// ResidualFails: no evidence makes the constraint hold.
	ResidualFails ResidualState = "fails"
	// ResidualOpen: the evidence decides; Residual says how.
	ResidualOpen ResidualState = "open"
)

// Residual is one constraint partially evaluated on an intent's parameters.
type Residual struct {
	// Index is the constraint's number, from 0; PrettyExpr its canonical text.
	Index      int    `json:"index"`
	PrettyExpr string `json:"pretty_expr"`
	// Optional says the constraint is marked optional:, and holds when an optional
	// parameter it reads is absent.
	Optional bool `json:"optional,omitempty"`
	// State says whether the constraint holds or fails whatever the evidence, or is
	// open.
	State ResidualState `json:"state"`
	// Residual is the constraint with the parameters put in and folded, in the
	// language's canonical text: an expression over evidence.* and the context values
	// (mandate.*, purchase.amount, decision.time). It names a parameter only where its
	// value is not written as a literal: an absent one, an empty set, or a value past
	// the budget of MaxResidualLiteralBytes. Empty when
	// the constraint holds or fails whatever the evidence, and given for a failing one
	// whose way of failing still depends on the evidence.
	Residual string `json:"residual,omitempty"`
	// Reason says why a constraint fails whatever the evidence, in the words of a
	// failure's reason, or why an optional: constraint holds.
	Reason string `json:"reason,omitempty"`
	// InSchema says whether the requirements' JSON Schema captures the constraint: an
	// evidence that the schema accepts meets it. True for a constraint that holds
	// whatever the evidence, false for one that fails whatever it is.
	InSchema bool `json:"in_schema"`

	// x is the residual's tree, nil when there is none.
	x expr
	// open says the constraint may hold on some evidence (State is open).
	open bool
}

// partKind is what partial evaluation knows of a node.
type partKind uint8

const (
	partConst partKind = iota // a value, whatever the evidence
	partFault                 // no value, whatever the evidence, for a reason of the parameters
	partOpen                  // up to the evidence
)

// part is a node partially evaluated.
type part struct {
	k partKind
	// x is the residual tree: a literal for a constant whose value the language can
	// write, otherwise the node rebuilt from its operands' residuals.
	x expr
	// v is the value of a constant.
	v Value
	// src is the original node.
	src expr
	// For an open node: whether some evidence makes it true, or false (a bool), or
	// gives it a value at all (dead is true when none does: every evaluation faults).
	canTrue, canFalse, dead bool
	// blockTrue is the constant original node that keeps an open node from being
	// true, for the reason of a constraint that fails whatever the evidence.
	blockTrue, blockFalse expr
}

// partial evaluates trees of one policy with the intent's parameters.
type partial struct {
	p      *Policy
	params []Value
	// budget is what is left of MaxResidualLiteralBytes.
	budget int
}

func constPart(src expr, v Value) part {
	x := literal(v, src)
	if x == nil {
		x = cloneLeaf(src)
	}
	return part{k: partConst, x: x, v: v, src: src}
}

// MaxResidualLiteralBytes bounds the text of the strings and sets that partial
// evaluation writes into the residuals of one intent as literals. A parameter is
// written as its value wherever a constraint reads it, and a policy may read one
// parameter thousands of times: without a bound, an intent of a thousand-element set
// would answer gigabytes. Past it, a value stays as the expression that computes it
// (parameters.brands), which evaluates alike.
const MaxResidualLiteralBytes = 64 << 10

// valuePart is the constant v of node src, computed from the parameters: written as a
// literal while the literals' budget lasts, as fallback (which evaluates to v) after.
func (pe *partial) valuePart(src expr, v Value, fallback expr) part {
	if v.t == TypeString || v.t.isSet() {
		n := len(appendValue(nil, v, 0))
		if n > pe.budget {
			return part{k: partConst, x: fallback, v: v, src: src}
		}
		pe.budget -= n
	}
	out := constPart(src, v)
	if _, kept := out.x.(*ref); kept {
		// No literal writes it (an empty set): the fallback does.
		out.x = fallback
	}
	return out
}

// literal is v as a literal node, or nil when the language has no literal for it (an
// empty set).
func literal(v Value, src expr) expr {
	n := exprNode{pos: src.node().pos, typ: v.t}
	switch v.t {
	case TypeInt:
		return &intLit{exprNode: n, v: v.n}
	case TypeString:
		return &strLit{exprNode: n, v: v.s}
	case TypeBool:
		return &boolLit{exprNode: n, v: v.n != 0}
	case TypeStringSet:
		if v.set.len() > 0 {
			s := newStrSetLit(n.pos, v.set.strs)
			s.typ = v.t
			return s
		}
	case TypeIntSet:
		if v.set.len() > 0 {
			s := newIntSetLit(n.pos, v.set.ints)
			s.typ = v.t
			return s
		}
	}
	return nil
}

// cloneLeaf copies a reference or a literal, so that the residual tree shares no node
// with the policy's, whose texts explanations read.
func cloneLeaf(e expr) expr {
	switch e := e.(type) {
	case *ref:
		c := *e
		return &c
	case *ctxRef:
		c := *e
		return &c
	case *intLit:
		c := *e
		return &c
	case *strLit:
		c := *e
		return &c
	case *boolLit:
		c := *e
		return &c
	case *setLit:
		c := *e
		c.val = nil
		return &c
	}
	return e
}

// openPart is a node the evidence decides, of either truth value when a bool.
func openPart(src, x expr) part {
	return part{k: partOpen, x: x, src: src, canTrue: true, canFalse: true}
}

// deadPart is an open node that never gets a value: it faults on evidence that is
// missing, and for a reason of the parameters (block) otherwise.
func deadPart(src, x, block expr) part {
	return part{k: partOpen, x: x, src: src, dead: true, blockTrue: block, blockFalse: block}
}

func (pe *partial) eval(e expr) part {
	switch e := e.(type) {
	case *intLit, *strLit, *boolLit:
		v, _ := (&explainer{}).evalInto(e)
		return constPart(e, v)
	case *setLit:
		return constPart(e, Value{t: setOf(e.elem), set: &setValue{strs: e.strs, ints: e.ints}})
	case *ref:
		if e.evidence {
			return openPart(e, cloneLeaf(e))
		}
		v := pe.params[e.slot]
		if !v.t.isValue() {
			return part{k: partFault, x: cloneLeaf(e), src: e}
		}
		return pe.valuePart(e, v, cloneLeaf(e))
	case *ctxRef:
		return openPart(e, cloneLeaf(e))
	case *unary:
		return pe.unary(e)
	case *binaryExpr:
		switch e.op {
		case opAnd:
			return pe.and(e, pe.eval(e.x), func() part { return pe.eval(e.y) })
		case opOr:
			return pe.or(e, pe.eval(e.x), func() part { return pe.eval(e.y) })
		}
		ps := []part{pe.eval(e.x), pe.eval(e.y)}
		out := pe.strict(e, ps, func(vs []Value) (Value, fault) { return apply2(opCode[e.op], vs[0], vs[1]) },
			func(xs []expr) expr {
				return &binaryExpr{exprNode: exprNode{pos: e.pos, typ: e.typ}, op: e.op, x: xs[0], y: xs[1], opPos: e.opPos}
			})
		if y := ps[1]; out.k == partOpen && !out.dead && (e.op == opIn || e.op == opNotIn) && y.k == partConst && y.v.t.isSet() && y.v.set.len() == 0 {
			// Nothing is in an empty set: x in {} is false, x not in {} true, for
			// every x that has a value.
			if e.op == opIn {
				out.canTrue, out.blockTrue = false, e.y
			} else {
				out.canFalse, out.blockFalse = false, e.y
			}
		}
		return out
	case *chain:
		return pe.chain(e)
	case *call:
		ps := make([]part, len(e.args))
		for i, a := range e.args {
			ps[i] = pe.eval(a)
		}
		return pe.strict(e, ps, func(vs []Value) (Value, fault) {
			if len(vs) == 1 {
				return apply1(fnCode[e.fn], vs[0])
			}
			return apply2(fnCode[e.fn], vs[0], vs[1])
		}, func(xs []expr) expr {
			return &call{exprNode: exprNode{pos: e.pos, typ: e.typ}, fn: e.fn, name: e.name, args: xs}
		})
	}
	return part{k: partFault, x: e, src: e}
}

func (pe *partial) unary(e *unary) part {
	a := pe.eval(e.x)
	rebuild := func(x expr) expr { return &unary{exprNode: exprNode{pos: e.pos, typ: e.typ}, op: e.op, x: x} }
	switch {
	case a.k == partConst:
		v, f := apply1(opCode[e.op], a.v)
		if f != faultNone {
			return part{k: partFault, x: rebuild(a.x), src: e}
		}
		return constPart(e, v)
	case a.k == partFault:
		return part{k: partFault, x: rebuild(a.x), src: e}
	case a.dead:
		return deadPart(e, rebuild(a.x), a.blockTrue)
	case e.op == opNot:
		return part{k: partOpen, x: negate(e, a.x), src: e, canTrue: a.canFalse, canFalse: a.canTrue,
			blockTrue: a.blockFalse, blockFalse: a.blockTrue}
	}
	return openPart(e, rebuild(a.x))
}

// negated is the comparison that holds when o does not, on the same operands: each
// faults where the other does.
var negated = map[op]op{opEq: opNe, opNe: opEq, opLt: opGe, opGe: opLt, opLe: opGt, opGt: opLe, opIn: opNotIn, opNotIn: opIn}

// negate is not x, with the negation taken into a comparison or out of a double one.
func negate(src *unary, x expr) expr {
	switch x := x.(type) {
	case *binaryExpr:
		if o, ok := negated[x.op]; ok {
			c := *x
			c.op = o
			return &c
		}
	case *unary:
		if x.op == opNot {
			return x.x
		}
	}
	return &unary{exprNode: exprNode{pos: src.pos, typ: src.typ}, op: opNot, x: x}
}

// strict folds an operation that evaluates all its operands, left to right, before
// it applies: a constant when every operand is one, a fault when the first operand that
// is not a constant is one, dead when an operand the evidence reaches faults whatever it
// is.
func (pe *partial) strict(src expr, ps []part, apply func([]Value) (Value, fault), rebuild func([]expr) expr) part {
	xs := make([]expr, len(ps))
	for i := range ps {
		xs[i] = ps[i].x
	}
	open := false
	for _, a := range ps {
		switch {
		case a.k == partFault && !open:
			return part{k: partFault, x: rebuild(xs), src: src}
		case a.k == partFault:
			return deadPart(src, rebuild(xs), a.src)
		case a.k == partOpen && a.dead:
			return deadPart(src, rebuild(xs), a.blockTrue)
		case a.k == partOpen:
			open = true
		}
	}
	if open {
		return openPart(src, rebuild(xs))
	}
	vs := make([]Value, len(ps))
	for i := range ps {
		vs[i] = ps[i].v
	}
	v, f := apply(vs)
	if f != faultNone {
		return part{k: partFault, x: rebuild(xs), src: src}
	}
	return pe.valuePart(src, v, rebuild(xs))
}

// and folds l and r as the machine runs them: l first, r only when l is true, and a
// fault of either, or an operand that is not a bool, a fault of the whole.
func (pe *partial) and(src expr, l part, right func() part) part {
	return pe.logic(src, opAnd, l, right)
}

func (pe *partial) or(src expr, l part, right func() part) part {
	return pe.logic(src, opOr, l, right)
}

func joinLogic(src expr, o op, x, y expr) expr {
	typ := TypeBool
	if src != nil {
		typ = src.node().typ
	}
	return &binaryExpr{exprNode: exprNode{typ: typ}, op: o, x: x, y: y}
}

// logic is and (o is opAnd) and or: decides is the value of l that decides alone.
func (pe *partial) logic(src expr, o op, l part, right func() part) part {
	decides := o == opOr
	r := right()
	asFault := func(p part) part {
		if p.k == partConst && p.v.t != TypeBool {
			p.k = partFault
		}
		return p
	}
	l, r = asFault(l), asFault(r)
	switch {
	case l.k == partFault:
		return part{k: partFault, x: joinLogic(src, o, l.x, r.x), src: src}
	case l.k == partConst && (l.v.n != 0) == decides:
		return constPart(src, l.v)
	case l.k == partConst:
		return r
	case l.dead:
		return l
	}
	// l is open.
	x := joinLogic(src, o, l.x, r.x)
	out := part{k: partOpen, x: x, src: src}
	if o == opAnd {
		switch {
		case r.k == partConst && r.v.n != 0:
			return l
		case r.k == partConst:
			out.canFalse = l.canTrue || l.canFalse
			out.blockTrue, out.blockFalse = r.src, l.blockFalse
		case r.k == partFault:
			out.canFalse = l.canFalse
			out.blockTrue, out.blockFalse = r.src, l.blockFalse
		default:
			out.canTrue = l.canTrue && r.canTrue
			out.canFalse = l.canFalse || l.canTrue && r.canFalse
			out.blockTrue = l.blockTrue
			if out.blockTrue == nil {
				out.blockTrue = r.blockTrue
			}
			out.blockFalse = l.blockFalse
			if out.blockFalse == nil {
				out.blockFalse = r.blockFalse
			}
		}
	} else {
		switch {
		case r.k == partConst && r.v.n == 0:
			return l
		case r.k == partConst:
			out.canTrue = l.canTrue || l.canFalse
			out.blockFalse, out.blockTrue = r.src, l.blockTrue
		case r.k == partFault:
			out.canTrue = l.canTrue
			out.blockFalse, out.blockTrue = r.src, l.blockTrue
		default:
			out.canFalse = l.canFalse && r.canFalse
			out.canTrue = l.canTrue || l.canFalse && r.canTrue
			out.blockFalse = l.blockFalse
			if out.blockFalse == nil {
				out.blockFalse = r.blockFalse
			}
			out.blockTrue = l.blockTrue
			if out.blockTrue == nil {
				out.blockTrue = r.blockTrue
			}
		}
	}
	out.dead = !out.canTrue && !out.canFalse
	return out
}

// chain folds a chained comparison as the conjunction of its links, which it is: each
// operand is evaluated once in the chain and again in the next link of the
// conjunction, with the same outcome, since evaluation is pure. Links that hold
// whatever the evidence are dropped; the links left that follow one another print as a
// chain again.
func (pe *partial) chain(e *chain) part {
	ps := make([]part, len(e.xs))
	for i, x := range e.xs {
		ps[i] = pe.eval(x)
	}
	link := func(i int) part {
		o := e.ops[i]
		lsrc := &binaryExpr{exprNode: exprNode{pos: e.pos, typ: TypeBool, paren: true}, op: o, x: e.xs[i], y: e.xs[i+1]}
		// The link is no node of the policy's tree: its text is made here, for a reason
		// that quotes it.
		lsrc.text = exprString(lsrc)
		return pe.strict(lsrc, ps[i:i+2], func(vs []Value) (Value, fault) { return apply2(opCode[o], vs[0], vs[1]) },
			func(xs []expr) expr { return &binaryExpr{exprNode: exprNode{typ: TypeBool}, op: o, x: xs[0], y: xs[1]} })
	}
	var acc *part
	var kept []int
	var keptParts []part
	for i := range e.ops {
		lk := link(i)
		if lk.k == partConst && lk.v.n != 0 {
			continue
		}
		if acc == nil {
			if lk.k != partOpen {
				// The first link that does not hold whatever the evidence decides alone.
				lk.src = e
				return lk
			}
			a := lk
			acc = &a
		} else {
			a := pe.and(e, *acc, func() part { return lk })
			acc = &a
		}
		kept = append(kept, i)
		keptParts = append(keptParts, lk)
		if lk.k != partOpen || lk.dead || acc.dead {
			break
		}
	}
	if acc == nil {
		return constPart(e, boolean(true))
	}
	// Rebuild the text: runs of consecutive open links as chains, joined by and.
	var x expr
	for j := 0; j < len(kept); {
		k := j
		if keptParts[j].k == partOpen {
			for k+1 < len(kept) && kept[k+1] == kept[k]+1 && keptParts[k+1].k == partOpen {
				k++
			}
		}
		var term expr
		if k == j {
			term = keptParts[j].x
		} else {
			c := &chain{exprNode: exprNode{pos: e.pos, typ: TypeBool}}
			for i := kept[j]; i <= kept[k]; i++ {
				c.xs = append(c.xs, ps[i].x)
				c.ops = append(c.ops, e.ops[i])
			}
			c.xs = append(c.xs, ps[kept[k]+1].x)
			term = c
		}
		if x == nil {
			x = term
		} else {
			x = joinLogic(e, opAnd, x, term)
		}
		j = k + 1
	}
	acc.x, acc.src = x, e
	return *acc
}
