package policy

import (
	"fmt"
	"strings"
)

// explainer says why a constraint failed. It evaluates the constraint's tree with the
// operations the machine uses (apply1, apply2), in the machine's order, so it meets
// the same values, and turns what decided the outcome into a sentence. It only runs
// for failures, so it may allocate.
type explainer struct {
	p        *Policy
	fr       *frame
	attrs    Attrs
	evidence map[string]any
	// missing is the evidence field whose absence or type stopped the evaluation, if
	// one did. The evaluation stops at the first value it cannot use, as the machine
	// does, so there is at most one; it is a slice because that is the Failure's form.
	missing []string
}

const valueLimit = 16 // elements of a set, or about 4x that many bytes of a string

func (x *explainer) reason(e expr) string {
	v, fault := x.eval(e)
	if fault == "" {
		// Only a value the evaluation stopped at counts; the sentence-making below
		// reads values again, and what it meets is not a cause.
		defer func() { x.missing = nil }()
	}
	switch {
	case fault != "":
		return fault
	case v.t != TypeBool:
		return fmt.Sprintf("%s is %s, not a bool", exprString(e), formatValue(v, valueLimit))
	case v.n != 0:
		// The machine said otherwise: report rather than hide it.
		return "the constraint could not be decided"
	}
	return x.why(e, false)
}

// eval is the value of e, or the reason it has none.
func (x *explainer) eval(e expr) (Value, string) {
	switch e := e.(type) {
	case *intLit:
		return IntValue(e.v), ""
	case *strLit:
		return StringValue(e.v), ""
	case *boolLit:
		return BoolValue(e.v), ""
	case *setLit:
		return Value{t: setOf(e.elem), set: &setValue{strs: e.strs, ints: e.ints}}, ""
	case *ref:
		return x.ref(e)
	case *unary:
		v, r := x.eval(e.x)
		if r != "" {
			return v, r
		}
		out, f := apply1(opCode[e.op], v)
		if f != faultNone {
			return out, x.fault(e, f, e.op.String(), []expr{e.x}, []Value{v})
		}
		return out, ""
	case *binaryExpr:
		v, r := x.eval(e.x)
		if r != "" {
			return v, r
		}
		if e.op == opAnd || e.op == opOr {
			if v.t != TypeBool {
				return v, x.fault(e, faultType, e.op.String(), []expr{e.x}, []Value{v})
			}
			if (v.n != 0) == (e.op == opOr) {
				return v, ""
			}
			w, r := x.eval(e.y)
			if r == "" && w.t != TypeBool {
				r = x.fault(e, faultType, e.op.String(), []expr{e.y}, []Value{w})
			}
			return w, r
		}
		w, r := x.eval(e.y)
		if r != "" {
			return w, r
		}
		out, f := apply2(opCode[e.op], v, w)
		if f != faultNone {
			return out, x.fault(e, f, e.op.String(), []expr{e.x, e.y}, []Value{v, w})
		}
		return out, ""
	case *chain:
		v, r := x.eval(e.xs[0])
		if r != "" {
			return v, r
		}
		for i, o := range e.ops {
			w, r := x.eval(e.xs[i+1])
			if r != "" {
				return w, r
			}
			out, f := apply2(opCode[o], v, w)
			if f != faultNone {
				return out, x.fault(e, f, o.String(), e.xs[i:i+2], []Value{v, w})
			}
			if out.n == 0 {
				return out, ""
			}
			v = w
		}
		return boolean(true), ""
	case *call:
		vs := make([]Value, len(e.args))
		for i, a := range e.args {
			v, r := x.eval(a)
			if r != "" {
				return v, r
			}
			vs[i] = v
		}
		var out Value
		var f fault
		if len(vs) == 1 {
			out, f = apply1(fnCode[e.fn], vs[0])
		} else {
			out, f = apply2(fnCode[e.fn], vs[0], vs[1])
		}
		if f != faultNone {
			return out, x.fault(e, f, e.name, e.args, vs)
		}
		return out, ""
	}
	return Value{}, "unknown expression"
}

func (x *explainer) ref(e *ref) (Value, string) {
	if !e.evidence {
		v := x.fr.params[e.slot]
		d := x.p.params[e.slot]
		switch v.t {
		case typeAbsent:
			if d.Optional {
				return v, fmt.Sprintf("parameters.%s is absent from the intent (an optional parameter: only a constraint marked optional: holds without it)", e.name)
			}
			return v, fmt.Sprintf("parameters.%s is missing from the intent", e.name)
		case typeBad:
			return v, fmt.Sprintf("parameters.%s: want %s, got %s", e.name, d.Type, describeType(x.attrs[e.name]))
		}
		return v, ""
	}
	v := x.fr.ev[e.slot]
	switch v.t {
	case typeAbsent:
		x.missing = []string{e.name}
		return v, fmt.Sprintf("evidence.%s is missing from the evidence", e.name)
	case typeBad:
		x.missing = []string{e.name}
		_, why := convert(x.evidence[e.name], x.p.evidence[e.slot].Type, true)
		return v, fmt.Sprintf("evidence.%s: %s", e.name, why)
	}
	return v, ""
}

// fault explains an operation that could not give a value.
func (x *explainer) fault(e expr, f fault, what string, args []expr, vs []Value) string {
	parts := make([]string, len(args))
	for i := range args {
		parts[i] = describe(args[i], vs[i]) + " (" + typeName(vs[i]) + ")"
	}
	if f == faultOverflow {
		switch e := e.(type) {
		case *unary:
			return fmt.Sprintf("%s overflows int64: -(%d)", exprString(e), vs[0].n)
		default:
			return fmt.Sprintf("%s overflows int64: %d %s %d", exprString(e), vs[0].n, what, vs[1].n)
		}
	}
	return fmt.Sprintf("%s cannot be applied to %s: wrong type", what, strings.Join(parts, " and "))
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

// describe is "expr = value", or the literal alone.
func describe(e expr, v Value) string {
	s := exprString(e)
	if exprPrec(e) <= precCmp {
		// A comparison quoted inside a comparison needs its parentheses back.
		s = "(" + s + ")"
	}
	if isLiteral(e) {
		return s
	}
	return s + " = " + formatValue(v, valueLimit)
}

func (x *explainer) value(e expr) Value {
	v, _ := x.eval(e)
	return v
}

// phrase is how a comparison that came out as got reads: "<=", "not <=", "in", "not in".
func phrase(o op, got bool) string {
	if o == opNotIn {
		o, got = opIn, !got
	}
	if got {
		return o.String()
	}
	return "not " + o.String()
}

// why says why e, evaluated without a fault, came out as got.
func (x *explainer) why(e expr, got bool) string {
	switch e := e.(type) {
	case *unary:
		if e.op == opNot {
			return x.why(e.x, !got)
		}
	case *binaryExpr:
		switch e.op {
		case opAnd, opOr:
			left := x.value(e.x).n != 0
			if (e.op == opAnd) != got {
				// and that fails, or that holds: one operand decided.
				if left == got {
					return x.why(e.x, got)
				}
				return x.why(e.y, got)
			}
			return x.why(e.x, got) + ", and " + x.why(e.y, got)
		case opEq, opNe, opLt, opLe, opGt, opGe, opIn, opNotIn:
			return x.link(e.op, e.x, e.y, got)
		}
	case *chain:
		var parts []string
		v := x.value(e.xs[0])
		for i, o := range e.ops {
			w := x.value(e.xs[i+1])
			out, _ := apply2(opCode[o], v, w)
			if !got && out.n == 0 {
				return x.link(o, e.xs[i], e.xs[i+1], false)
			}
			parts = append(parts, x.link(o, e.xs[i], e.xs[i+1], true))
			v = w
		}
		return strings.Join(parts, ", and ")
	case *boolLit:
		return fmt.Sprintf("the constraint is the literal %t", e.v)
	case *call:
		var args []string
		for _, a := range e.args {
			if !isLiteral(a) {
				args = append(args, describe(a, x.value(a)))
			}
		}
		s := fmt.Sprintf("%s is %t", exprString(e), got)
		if len(args) > 0 {
			s += ", with " + strings.Join(args, " and ")
		}
		return s
	}
	return fmt.Sprintf("%s is %t", exprString(e), got)
}

func (x *explainer) link(o op, a, b expr, got bool) string {
	return describe(a, x.value(a)) + ", which is " + phrase(o, got) + " " + describe(b, x.value(b))
}
