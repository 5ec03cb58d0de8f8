package policy

import (
	"strconv"
)

// explainer says why a constraint failed. It evaluates the constraint's tree with the
// operations the machine uses (apply1, apply2), in the machine's order, so it meets
// the same values, and turns what decided the outcome into a sentence. It only runs
// for failures, but a proposal that misses its policy can fail most constraints at
// once, so the sentences are appended to one buffer, with the subexpressions' text
// printed once when the policy was built, rather than assembled from strings.
type explainer struct {
	p        *Policy
	fr       *frame
	attrs    Attrs
	evidence map[string]any
	// missing is the evidence field whose absence or type stopped the evaluation, if
	// one did. The evaluation stops at the first value it cannot use, as the machine
	// does, so there is at most one; it is a slice because that is the Failure's form.
	missing []string
	// buf holds the reasons written so far, one after another; ends says where each
	// one ends.
	buf  []byte
	ends []int
}

const valueLimit = 16 // elements of a set, or about 4x that many bytes of a string

// reason is why e does not hold, as a string of its own.
func (x *explainer) reason(e expr) string {
	n := len(x.buf)
	x.appendReason(e, resFault)
	r := string(x.buf[n:])
	x.buf = x.buf[:n]
	return r
}

// eval is the value of e, or the reason it has none.
func (x *explainer) eval(e expr) (Value, string) {
	n := len(x.buf)
	v, bad := x.evalInto(e)
	r := ""
	if bad {
		r = string(x.buf[n:])
	}
	x.buf = x.buf[:n]
	return v, r
}

// appendReason appends why e does not hold; res is what the machine found. When it
// found false, the tree evaluates without a fault to false (the machine and the
// explainer share their operations and order), so only the sentence is left to make.
func (x *explainer) appendReason(e expr, res result) {
	if res == resFalse {
		x.why(e, false)
		x.missing = nil
		return
	}
	v, faulted := x.evalInto(e)
	if faulted {
		// evalInto wrote the reason.
		return
	}
	switch {
	case v.t != TypeBool:
		x.buf = append(x.buf, e.node().text...)
		x.buf = append(x.buf, " is "...)
		x.buf = appendValue(x.buf, v, valueLimit)
		x.buf = append(x.buf, ", not a bool"...)
	case v.n != 0:
		// The machine said otherwise: report rather than hide it.
		x.buf = append(x.buf, "the constraint could not be decided"...)
	default:
		x.why(e, false)
	}
	// Only a value the evaluation stopped at counts; the sentence-making above reads
	// values again, and what it meets is not a cause.
	x.missing = nil
}

// evalInto is the value of e; when e has none, it appends the reason and reports true.
func (x *explainer) evalInto(e expr) (Value, bool) {
	switch e := e.(type) {
	case *intLit:
		return IntValue(e.v), false
	case *strLit:
		return StringValue(e.v), false
	case *boolLit:
		return BoolValue(e.v), false
	case *setLit:
		return Value{t: setOf(e.elem), set: e.val}, false
	case *ref:
		return x.ref(e)
	case *ctxRef:
		return x.ctx(e)
	case *unary:
		v, bad := x.evalInto(e.x)
		if bad {
			return v, true
		}
		out, f := apply1(opCode[e.op], v)
		if f != faultNone {
			x.fault(e, f, e.op.String(), []expr{e.x}, []Value{v})
			return out, true
		}
		return out, false
	case *binaryExpr:
		v, bad := x.evalInto(e.x)
		if bad {
			return v, true
		}
		if e.op == opAnd || e.op == opOr {
			if v.t != TypeBool {
				x.fault(e, faultType, e.op.String(), []expr{e.x}, []Value{v})
				return v, true
			}
			if (v.n != 0) == (e.op == opOr) {
				return v, false
			}
			w, bad := x.evalInto(e.y)
			if !bad && w.t != TypeBool {
				x.fault(e, faultType, e.op.String(), []expr{e.y}, []Value{w})
				bad = true
			}
			return w, bad
		}
		w, bad := x.evalInto(e.y)
		if bad {
			return w, true
		}
		out, f := apply2(opCode[e.op], v, w)
		if f != faultNone {
			x.fault(e, f, e.op.String(), []expr{e.x, e.y}, []Value{v, w})
			return out, true
		}
		return out, false
	case *chain:
		return x.evalChain(e)
	case *call:
		// Functions take one or two arguments; the array keeps them off the heap.
		var arr [2]Value
		vs := arr[:0]
		for _, a := range e.args {
			v, bad := x.evalInto(a)
			if bad {
				return v, true
			}
			vs = append(vs, v)
		}
		var out Value
		var f fault
		if len(vs) == 1 {
			out, f = apply1(fnCode[e.fn], vs[0])
		} else {
			out, f = apply2(fnCode[e.fn], vs[0], vs[1])
		}
		if f != faultNone {
			x.fault(e, f, e.name, e.args, vs)
			return out, true
		}
		return out, false
	}
	x.buf = append(x.buf, "unknown expression"...)
	return Value{}, true
}

// evalChain is evalInto of a chained comparison: its links in order, up to the first
// that fails.
func (x *explainer) evalChain(e *chain) (Value, bool) {
	v, bad := x.evalInto(e.xs[0])
	if bad {
		return v, true
	}
	for i, o := range e.ops {
		w, bad := x.evalInto(e.xs[i+1])
		if bad {
			return w, true
		}
		out, f := apply2(opCode[o], v, w)
		if f != faultNone {
			x.fault(e, f, o.String(), e.xs[i:i+2], []Value{v, w})
			return out, true
		}
		if out.n == 0 {
			return out, false
		}
		v = w
	}
	return boolean(true), false
}

func (x *explainer) ref(e *ref) (Value, bool) {
	if !e.evidence {
		v := x.fr.params[e.slot]
		d := x.p.params[e.slot]
		switch v.t {
		case typeAbsent:
			x.buf = append(x.buf, "parameters."...)
			x.buf = append(x.buf, e.name...)
			if d.Optional {
				x.buf = append(x.buf, " is absent from the intent (an optional parameter: only a constraint marked optional: holds without it)"...)
			} else {
				x.buf = append(x.buf, " is missing from the intent"...)
			}
			return v, true
		case typeBad:
			x.buf = append(x.buf, "parameters."...)
			x.buf = append(x.buf, e.name...)
			x.buf = append(x.buf, ": want "...)
			x.buf = append(x.buf, d.Type.String()...)
			x.buf = append(x.buf, ", got "...)
			x.buf = append(x.buf, describeType(x.attrs[e.name])...)
			return v, true
		}
		return v, false
	}
	v := x.fr.ev[e.slot]
	switch v.t {
	case typeAbsent:
		x.missing = []string{e.name}
		x.buf = append(x.buf, "evidence."...)
		x.buf = append(x.buf, e.name...)
		x.buf = append(x.buf, " is missing from the evidence"...)
		return v, true
	case typeBad:
		x.missing = []string{e.name}
		_, why := convert(x.evidence[e.name], x.p.evidence[e.slot].Type, true)
		x.buf = append(x.buf, "evidence."...)
		x.buf = append(x.buf, e.name...)
		x.buf = append(x.buf, ": "...)
		x.buf = append(x.buf, why...)
		return v, true
	}
	return v, false
}

// ctx is the value of a context value, or appends why it has none.
func (x *explainer) ctx(e *ctxRef) (Value, bool) {
	v := x.fr.ctx[e.v]
	if v.t.isValue() {
		return v, false
	}
	if e.v == ctxAmount {
		x.buf = append(x.buf, "purchase.amount has no value: "...)
		x.appendAmountFault()
		return v, true
	}
	// Only the time can be absent: the totals are numbers, zero for a mandate with no
	// purchase yet.
	x.buf = append(x.buf, "decision.time is not known: the decision was made without a time"...)
	return v, true
}

// appendAmountFault appends why the amount part has no value, as the machine found:
// what stopped its evaluation, or that the amount is negative.
func (x *explainer) appendAmountFault() {
	a := x.p.f.amount
	v, bad := x.evalInto(a)
	if bad {
		return
	}
	x.buf = appendDescribe(x.buf, a, v)
	if v.t == TypeInt && v.n < 0 {
		x.buf = append(x.buf, " is negative (the amount of a purchase is 0 or more)"...)
		return
	}
	// The machine said otherwise: report rather than hide it.
	x.buf = append(x.buf, " could not be computed"...)
}

// fault appends the reason an operation could not give a value.
func (x *explainer) fault(e expr, f fault, what string, args []expr, vs []Value) {
	if f == faultOverflow {
		x.buf = append(x.buf, e.node().text...)
		x.buf = append(x.buf, " overflows int64: "...)
		if _, ok := e.(*unary); ok {
			x.buf = append(x.buf, "-("...)
			x.buf = strconv.AppendInt(x.buf, vs[0].n, 10)
			x.buf = append(x.buf, ')')
			return
		}
		x.buf = strconv.AppendInt(x.buf, vs[0].n, 10)
		x.buf = append(x.buf, ' ')
		x.buf = append(x.buf, what...)
		x.buf = append(x.buf, ' ')
		x.buf = strconv.AppendInt(x.buf, vs[1].n, 10)
		return
	}
	x.buf = append(x.buf, what...)
	x.buf = append(x.buf, " cannot be applied to "...)
	for i := range args {
		if i > 0 {
			x.buf = append(x.buf, " and "...)
		}
		x.buf = appendDescribe(x.buf, args[i], vs[i])
		x.buf = append(x.buf, " ("...)
		x.buf = append(x.buf, typeName(vs[i])...)
		x.buf = append(x.buf, ')')
	}
	x.buf = append(x.buf, ": wrong type"...)
}

func typeName(v Value) string {
	if v.t.isSet() && v.set.len() == 0 {
		return "empty set"
	}
	return v.t.String()
}

func isLiteral(e expr) bool {
	switch e.(type) {
	case *intLit, *strLit, *boolLit, *setLit:
		return true
	}
	return false
}

// appendDescribe appends "expr = value", or the literal alone.
func appendDescribe(b []byte, e expr, v Value) []byte {
	n := e.node()
	if n.paren {
		b = append(b, '(')
		b = append(b, n.text...)
		b = append(b, ')')
	} else {
		b = append(b, n.text...)
	}
	if n.lit {
		return b
	}
	b = append(b, " = "...)
	return appendValue(b, v, valueLimit)
}

// value is the value of e, which the evaluation has already reached without a fault.
// A reason eval would give is dropped: it is not what the sentence is about.
func (x *explainer) value(e expr) Value {
	// Most operands are references: their value is in the frame.
	if r, ok := e.(*ref); ok {
		v := x.fr.ev
		if !r.evidence {
			v = x.fr.params
		}
		if v[r.slot].t.isValue() {
			return v[r.slot]
		}
	}
	n := len(x.buf)
	v, _ := x.evalInto(e)
	x.buf = x.buf[:n]
	return v
}

// appendPhrase appends how a comparison that came out as got reads: "<=", "not <=",
// "in", "not in".
func appendPhrase(b []byte, o op, got bool) []byte {
	if o == opNotIn {
		o, got = opIn, !got
	}
	if !got {
		b = append(b, "not "...)
	}
	return append(b, o.String()...)
}

// why appends why e, evaluated without a fault, came out as got.
func (x *explainer) why(e expr, got bool) {
	switch e := e.(type) {
	case *unary:
		if e.op == opNot {
			x.why(e.x, !got)
			return
		}
	case *binaryExpr:
		switch e.op {
		case opAnd, opOr:
			left := x.value(e.x).n != 0
			if (e.op == opAnd) != got {
				// and that fails, or that holds: one operand decided.
				if left == got {
					x.why(e.x, got)
				} else {
					x.why(e.y, got)
				}
				return
			}
			x.why(e.x, got)
			x.buf = append(x.buf, ", and "...)
			x.why(e.y, got)
			return
		case opEq, opNe, opLt, opLe, opGt, opGe, opIn, opNotIn:
			x.link(e.op, e.x, e.y, got)
			return
		}
	case *chain:
		start := len(x.buf)
		v := x.value(e.xs[0])
		for i, o := range e.ops {
			w := x.value(e.xs[i+1])
			out, _ := apply2(opCode[o], v, w)
			if !got && out.n == 0 {
				// The link that broke the chain is the whole reason.
				x.buf = x.buf[:start]
				x.link(o, e.xs[i], e.xs[i+1], false)
				return
			}
			if i > 0 {
				x.buf = append(x.buf, ", and "...)
			}
			x.link(o, e.xs[i], e.xs[i+1], true)
			v = w
		}
		return
	case *boolLit:
		x.buf = append(x.buf, "the constraint is the literal "...)
		x.buf = strconv.AppendBool(x.buf, e.v)
		return
	case *call:
		x.buf = append(x.buf, e.text...)
		x.buf = append(x.buf, " is "...)
		x.buf = strconv.AppendBool(x.buf, got)
		with := false
		for _, a := range e.args {
			if isLiteral(a) {
				continue
			}
			if with {
				x.buf = append(x.buf, " and "...)
			} else {
				x.buf = append(x.buf, ", with "...)
				with = true
			}
			v := x.value(a)
			x.buf = appendDescribe(x.buf, a, v)
		}
		return
	}
	x.buf = append(x.buf, e.node().text...)
	x.buf = append(x.buf, " is "...)
	x.buf = strconv.AppendBool(x.buf, got)
}

func (x *explainer) link(o op, a, b expr, got bool) {
	va := x.value(a)
	x.buf = appendDescribe(x.buf, a, va)
	x.buf = append(x.buf, ", which is "...)
	x.buf = appendPhrase(x.buf, o, got)
	x.buf = append(x.buf, ' ')
	vb := x.value(b)
	x.buf = appendDescribe(x.buf, b, vb)
}
