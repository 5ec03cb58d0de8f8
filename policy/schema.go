package policy

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"
)

// The JSON Schema of the requirements: the evidence object, each field with its type,
// and what the residuals of simple forms require of one field, in the schema's words
// (enum, const, minimum and maximum, not). A residual of another form (two fields in
// one sum, a function, a context value, or) is left to its text, and its constraint
// says so (InSchema false). What the schema captures, it captures exactly: over values
// of the field's type, the schema accepts a field exactly when the residual holds.

// SchemaDialect is the JSON Schema dialect of the requirements' schema.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// jsonType is the schema of a field's type.
func jsonType(t Type) map[string]any {
	switch t {
	case TypeInt:
		return map[string]any{"type": "integer"}
	case TypeString:
		return map[string]any{"type": "string"}
	case TypeBool:
		return map[string]any{"type": "boolean"}
	case TypeStringSet:
		return map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	case TypeIntSet:
		return map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}
	}
	return map[string]any{}
}

// rule is what one residual, or one conjunct of it, requires of one field: schema
// keywords to hold of the field's value.
type rule struct {
	field string
	kw    map[string]any
}

// schema writes the requirements' schema and sets InSchema of the open residuals it
// captures.
func (p *Policy) schema(rs []Residual) json.RawMessage {
	props := map[string]map[string]any{}
	for _, f := range p.evidence {
		props[f.Name] = jsonType(f.Type)
	}
	required := map[string]bool{}
	for i := range rs {
		r := &rs[i]
		if !r.open {
			continue
		}
		for _, f := range p.mustRead(r.x) {
			required[f] = true
		}
		rules, ok := p.capture(r.x, nil)
		if !ok {
			continue
		}
		r.InSchema = true
		for _, ru := range rules {
			addRule(props[ru.field], ru.kw)
		}
	}
	s := map[string]any{"$schema": SchemaDialect, "type": "object", "properties": props}
	if len(required) > 0 {
		names := make([]string, 0, len(required))
		for f := range required {
			names = append(names, f)
		}
		slices.Sort(names)
		s["required"] = names
	}
	b, err := json.Marshal(s)
	if err != nil {
		// Maps of strings, numbers and bools always marshal.
		panic("policy: marshal the requirements' schema: " + err.Error())
	}
	return b
}

// addRule adds kw to a field's schema, beside its type when no keyword of it is there
// yet, in allOf otherwise: two constraints on one field each keep their own.
func addRule(prop, kw map[string]any) {
	for k := range kw {
		if _, ok := prop[k]; ok {
			all, _ := prop["allOf"].([]any)
			prop["allOf"] = append(all, kw)
			return
		}
	}
	for k, v := range kw {
		prop[k] = v
	}
}

// capture is the rules that say what x requires, appended to rules, and whether the
// schema captures x whole: a conjunction of simple forms of one field each.
func (p *Policy) capture(x expr, rules []rule) ([]rule, bool) {
	switch x := x.(type) {
	case *binaryExpr:
		if x.op == opAnd {
			rules, ok := p.capture(x.x, rules)
			if !ok {
				return nil, false
			}
			return p.capture(x.y, rules)
		}
		return p.captureCmp(x.op, x.x, x.y, rules)
	case *chain:
		for i, o := range x.ops {
			var ok bool
			if rules, ok = p.captureCmp(o, x.xs[i], x.xs[i+1], rules); !ok {
				return nil, false
			}
		}
		return rules, true
	case *ref:
		if f, ok := p.evidenceField(x, TypeBool); ok {
			return append(rules, rule{f, map[string]any{"const": true}}), true
		}
	case *unary:
		if r, ok := x.x.(*ref); ok && x.op == opNot {
			if f, ok := p.evidenceField(r, TypeBool); ok {
				return append(rules, rule{f, map[string]any{"const": false}}), true
			}
		}
	}
	return nil, false
}

// evidenceField is the name of the evidence field e reads, when e is a reference to
// one of type t.
func (p *Policy) evidenceField(e expr, t Type) (string, bool) {
	r, ok := e.(*ref)
	if !ok || !r.evidence || p.evidence[r.slot].Type != t {
		return "", false
	}
	return r.name, true
}

// literalValue is the value of a literal node.
func literalValue(e expr) (any, bool) {
	switch e := e.(type) {
	case *intLit:
		return e.v, true
	case *strLit:
		return e.v, true
	case *boolLit:
		return e.v, true
	}
	return nil, false
}

// mirrored is the comparison that says the same with its operands swapped.
var mirrored = map[op]op{opEq: opEq, opNe: opNe, opLt: opGt, opGt: opLt, opLe: opGe, opGe: opLe}

// captureCmp captures the comparison a o b.
func (p *Policy) captureCmp(o op, a, b expr, rules []rule) ([]rule, bool) {
	switch o {
	case opIn, opNotIn:
		return p.captureIn(o, a, b, rules)
	}
	if _, ok := mirrored[o]; !ok {
		return nil, false
	}
	if _, lit := literalValue(a); lit {
		a, b, o = b, a, mirrored[o]
	}
	k, ok := literalValue(b)
	if !ok {
		return nil, false
	}
	if n, ok := k.(int64); ok {
		if f, c, ok := p.linear(a); ok {
			return intRule(f, c, o, n, rules)
		}
		return nil, false
	}
	// A string or a bool: equal to the literal, or not.
	t := TypeString
	if _, ok := k.(bool); ok {
		t = TypeBool
	}
	f, ok := p.evidenceField(a, t)
	if !ok {
		return nil, false
	}
	switch o {
	case opEq:
		return append(rules, rule{f, map[string]any{"const": k}}), true
	case opNe:
		return append(rules, rule{f, map[string]any{"not": map[string]any{"const": k}}}), true
	}
	return nil, false
}

// captureIn captures evidence.f in {...} and its not in, and "lit" in evidence.s for a
// set field.
func (p *Policy) captureIn(o op, a, b expr, rules []rule) ([]rule, bool) {
	if s, ok := b.(*setLit); ok {
		f, ok := p.evidenceField(a, s.elem)
		if !ok {
			return nil, false
		}
		var enum []any
		for _, v := range s.strs {
			enum = append(enum, v)
		}
		for _, v := range s.ints {
			enum = append(enum, v)
		}
		kw := map[string]any{"enum": enum}
		if o == opNotIn {
			kw = map[string]any{"not": kw}
		}
		return append(rules, rule{f, kw}), true
	}
	k, ok := literalValue(a)
	if !ok {
		return nil, false
	}
	t := TypeStringSet
	if _, ok := k.(int64); ok {
		t = TypeIntSet
	}
	f, ok := p.evidenceField(b, t)
	if !ok {
		return nil, false
	}
	kw := map[string]any{"contains": map[string]any{"const": k}}
	if o == opNotIn {
		kw = map[string]any{"not": kw}
	}
	return append(rules, rule{f, kw}), true
}

// linear reads e as evidence.f + c: the field alone, or with a constant added or
// taken away (evidence.f + 500, 500 + evidence.f, evidence.f - 500).
func (p *Policy) linear(e expr) (string, *big.Int, bool) {
	if f, ok := p.evidenceField(e, TypeInt); ok {
		return f, new(big.Int), true
	}
	b, ok := e.(*binaryExpr)
	if !ok || b.op != opAdd && b.op != opSub {
		return "", nil, false
	}
	if f, ok := p.evidenceField(b.x, TypeInt); ok {
		if n, ok := b.y.(*intLit); ok {
			c := big.NewInt(n.v)
			if b.op == opSub {
				c.Neg(c)
			}
			return f, c, true
		}
	}
	if f, ok := p.evidenceField(b.y, TypeInt); ok && b.op == opAdd {
		if n, ok := b.x.(*intLit); ok {
			return f, big.NewInt(n.v), true
		}
	}
	return "", nil, false
}

var (
	minInt64 = big.NewInt(math.MinInt64)
	maxInt64 = big.NewInt(math.MaxInt64)
)

// intRule is the rule of evidence.f + c o k: the ints f for which the sum does not
// overflow and the comparison holds, an interval, or all ints but one for !=.
func intRule(f string, c *big.Int, o op, k int64, rules []rule) ([]rule, bool) {
	// The sum is in int64: f in [min - c, max - c].
	lo := new(big.Int).Sub(minInt64, c)
	hi := new(big.Int).Sub(maxInt64, c)
	bound := new(big.Int).Sub(big.NewInt(k), c) // f + c o k: f o k - c
	one := big.NewInt(1)
	switch o {
	case opLe:
		hi = minBig(hi, bound)
	case opLt:
		hi = minBig(hi, new(big.Int).Sub(bound, one))
	case opGe:
		lo = maxBig(lo, bound)
	case opGt:
		lo = maxBig(lo, new(big.Int).Add(bound, one))
	case opEq:
		lo, hi = maxBig(lo, bound), minBig(hi, bound)
	case opNe:
		if c.Sign() != 0 {
			// The sum's overflow would need bounds beside the excluded value.
			return nil, false
		}
		return append(rules, rule{f, map[string]any{"not": map[string]any{"const": k}}}), true
	}
	lo, hi = maxBig(lo, minInt64), minBig(hi, maxInt64)
	if lo.Cmp(hi) > 0 {
		// No int passes: the constraint would fail whatever the field, which the
		// schema leaves to the text.
		return nil, false
	}
	if lo.Cmp(hi) == 0 {
		return append(rules, rule{f, map[string]any{"const": lo.Int64()}}), true
	}
	kw := map[string]any{}
	if lo.Cmp(minInt64) > 0 {
		kw["minimum"] = lo.Int64()
	}
	if hi.Cmp(maxInt64) < 0 {
		kw["maximum"] = hi.Int64()
	}
	if len(kw) == 0 {
		return rules, true
	}
	return append(rules, rule{f, kw}), true
}

func minBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

func maxBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

// mustRead is the evidence fields x reads on every evaluation that holds, and those
// the amount part reads when x needs purchase.amount on every such evaluation: with
// one of them missing, x fails.
func (p *Policy) mustRead(x expr) []string {
	set := map[string]bool{}
	p.holdReads(x, set)
	var out []string
	for f := range set {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// holdReads adds to set the fields every evaluation of x that comes out true reads.
func (p *Policy) holdReads(x expr, set map[string]bool) {
	switch x := x.(type) {
	case *binaryExpr:
		switch x.op {
		case opAnd:
			p.holdReads(x.x, set)
			p.holdReads(x.y, set)
			return
		case opOr:
			p.valueReads(x.x, set)
			return
		}
	case *chain:
		// Every link holds, so every operand is read.
		for _, e := range x.xs {
			p.valueReads(e, set)
		}
		return
	}
	p.valueReads(x, set)
}

// valueReads adds to set the fields every evaluation of x that gives a value reads.
func (p *Policy) valueReads(x expr, set map[string]bool) {
	switch x := x.(type) {
	case *ref:
		if x.evidence {
			set[x.name] = true
		}
	case *ctxRef:
		if x.v == ctxAmount && p.f.amount != nil {
			p.valueReads(p.f.amount, set)
		}
	case *unary:
		p.valueReads(x.x, set)
	case *binaryExpr:
		p.valueReads(x.x, set)
		if x.op != opAnd && x.op != opOr {
			p.valueReads(x.y, set)
		}
	case *chain:
		p.valueReads(x.xs[0], set)
		p.valueReads(x.xs[1], set)
	case *call:
		for _, a := range x.args {
			p.valueReads(a, set)
		}
	}
}
