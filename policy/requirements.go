package policy

import (
	"encoding/json"
	"strings"
)

// Requirements is what the evidence about a solution must satisfy for an intent: the
// policy partially evaluated on the intent's parameters.
type Requirements struct {
	// Constraints are the residuals of the policy's constraints, in order.
	Constraints []Residual `json:"constraints"`
	// Schema is a JSON Schema (draft 2020-12) of the evidence object: each field with
	// its type, and what the constraints it captures (InSchema) require of it.
	Schema json.RawMessage `json:"schema"`
}

// Requirements partially evaluates every constraint on the intent's attrs (see
// Residual) and writes the JSON Schema of the evidence they allow where the schema can
// say it. Attrs missing a parameter, or holding one of another type, are evaluated as
// Evaluate would: the constraints that read it fail, or hold when marked optional: and
// the parameter is an optional one that is absent. The result depends on nothing but
// the policy and the attrs.
func (p *Policy) Requirements(a Attrs) Requirements {
	rs := p.residuals(a)
	return Requirements{Constraints: rs, Schema: p.schema(rs)}
}

// residuals partially evaluates each constraint on a.
func (p *Policy) residuals(a Attrs) []Residual {
	params := make([]Value, len(p.params))
	p.loadParams(params, a)
	pe := &partial{p: p, params: params, budget: MaxResidualLiteralBytes}
	out := make([]Residual, len(p.cons))
	for k := range p.cons {
		c := &p.cons[k]
		r := Residual{Index: k, PrettyExpr: c.pretty, Optional: c.optional}
		if c.optional && anyAbsent(params, c.optSlots) {
			r.State, r.InSchema = ResidualHolds, true
			r.Reason = p.optionalReason(params, c.optSlots)
			out[k] = r
			continue
		}
		pt := pe.eval(c.x)
		switch {
		case pt.k == partConst && pt.v.t == TypeBool && pt.v.n != 0:
			r.State, r.InSchema = ResidualHolds, true
		case pt.k != partOpen:
			r.State = ResidualFails
			r.Reason = p.constReason(params, a, c.x)
		default:
			prepare(pt.x)
			r.x, r.Residual = pt.x, pt.x.node().text
			r.State, r.open = ResidualOpen, pt.canTrue
			if !pt.canTrue {
				r.State = ResidualFails
				r.Reason = p.blockReason(params, a, pt.blockTrue)
			}
		}
		out[k] = r
	}
	return out
}

// optionalReason says which absent optional parameter lets an optional: constraint
// hold.
func (p *Policy) optionalReason(params []Value, slots []int32) string {
	var names []string
	for _, s := range slots {
		if params[s].t == typeAbsent {
			names = append(names, "parameters."+p.params[s].Name)
		}
	}
	verb := " is"
	if len(names) > 1 {
		verb = " are"
	}
	return strings.Join(names, ", ") + verb + " absent from the intent: an optional: constraint holds without it"
}

// explainerOn is an explainer over the parameters alone: no evidence, and no value of
// the context. It explains the nodes partial evaluation found constant, whose
// evaluation reads neither, so its reasons are the machine's on any evidence.
func (p *Policy) explainerOn(params []Value, a Attrs) *explainer {
	fr := &frame{params: params, ev: make([]Value, len(p.evidence)), ctx: make([]Value, numCtx)}
	for i := range fr.ev {
		fr.ev[i] = Value{t: typeAbsent}
	}
	for i := range fr.ctx {
		fr.ctx[i] = Value{t: typeAbsent}
	}
	return &explainer{p: p, fr: fr, attrs: a}
}

// constReason is why a constraint that does not hold whatever the evidence fails: the
// reason the machine gives on any evidence.
func (p *Policy) constReason(params []Value, a Attrs, x expr) string {
	return p.explainerOn(params, a).reason(x)
}

// blockReason is what a constant node that keeps a constraint from holding comes to:
// why it faults, or why it is true or false.
func (p *Policy) blockReason(params []Value, a Attrs, block expr) string {
	if block == nil {
		return "no evidence makes it hold"
	}
	x := p.explainerOn(params, a)
	v, bad := x.evalInto(block)
	if bad {
		return string(x.buf)
	}
	x.buf = x.buf[:0]
	if v.t == TypeBool {
		x.why(block, v.n != 0)
		return string(x.buf)
	}
	b := appendDescribe(nil, block, v)
	if v.t.isSet() && v.set.len() == 0 {
		b = append(b, ", which holds nothing"...)
	}
	return string(b)
}
