package policy

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/mr-tron/base58"
)

// Policy is a compiled policy. It is immutable and safe for concurrent use.
type Policy struct {
	f        *file
	params   []Param
	evidence []Field
	cons     []compiled
	pg       program
	maxStack int
	code     []byte
	id       string
	pretty   string
	// amountCode is the amount part's code, loaded, or nil; reads is the context
	// values the constraints read.
	amountCode []instr
	reads      ContextValues
}

// compiled is one constraint, loaded.
type compiled struct {
	optional bool
	optSlots []int32 // the optional parameters it reads
	code     []instr
	x        expr
	pretty   string
	// totalsOnly: the constraint reads no evidence and nothing of the context but a
	// mandate's overall totals, which only a success changes (Exhausted).
	totalsOnly bool
}

// Failure is a constraint that does not hold: the ConstraintFailure of the wire.
type Failure struct {
	Index      int    `json:"index"`
	PrettyExpr string `json:"pretty_expr"`
	Reason     string `json:"reason"`
	// MissingEvidence names the evidence fields the constraint read and found absent
	// or of another type than the policy's, when that is what kept it from holding; it
	// is empty when the constraint failed on evidence that was there. A caller tells
	// "the evidence breaks the rule" from "the rule could not be checked" by it, not by
	// reading Reason. It is not part of the wire's ConstraintFailure, whose fields the
	// spec fixes; the service states it beside the failures instead.
	MissingEvidence []string `json:"-"`
}

// Compile compiles policy source. A compile error is an ErrorList, sorted by position;
// each message names what was expected.
func Compile(src string) (*Policy, error) {
	f, err := parse(src)
	if err != nil {
		return nil, err
	}
	res, err := check(f)
	if err != nil {
		return nil, err
	}
	code, codes, amount := encode(f, res)
	return build(f, res, code, codes, amount)
}

// Decode loads bytecode written by Bytecode. Bytecode that is corrupt, truncated, of
// another version, or not exactly what the compiler writes for its policy is an error:
// a decoded policy can be trusted as much as a compiled one.
func Decode(bytecode []byte) (*Policy, error) {
	d, err := readBytecode(bytecode)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	pg := &program{}
	if d.amount != nil {
		x, err := pg.decompile(d, d.amount)
		if err != nil {
			return nil, fmt.Errorf("policy: amount: %w", err)
		}
		d.f.amount = x
	}
	for i, code := range d.codes {
		x, err := pg.decompile(d, code)
		if err != nil {
			return nil, fmt.Errorf("policy: constraint %d: %w", i, err)
		}
		d.f.constraints[i].x = x
	}
	if !isIdent(d.f.name) {
		return nil, fmt.Errorf("policy: bytecode name %q is not an identifier", d.f.name)
	}
	for _, e := range d.decls {
		if !isIdent(e.name) {
			return nil, fmt.Errorf("policy: bytecode evidence field %q is not an identifier", e.name)
		}
	}
	res, err := check(d.f)
	if err != nil {
		return nil, fmt.Errorf("policy: bytecode does not check: %w", err)
	}
	code, codes, amount := encode(d.f, res)
	if !bytes.Equal(code, bytecode) {
		return nil, fmt.Errorf("policy: bytecode is not in the canonical form the compiler writes")
	}
	return build(d.f, res, code, codes, amount)
}

// decompile loads one expression's code, a constraint's or the amount's, and rebuilds
// its tree.
func (pg *program) decompile(d *decoded, code []byte) (expr, error) {
	ins, _, err := pg.load(code, len(d.f.params), len(d.decls), d.ctx)
	if err != nil {
		return nil, err
	}
	dc := &decompiler{ins: ins, pg: pg, params: d.f.params, ev: d.decls}
	return dc.run(0, len(ins))
}

// prepare readies a checked tree for explanations: the text of every node, and the
// values of its set literals.
func prepare(x expr) {
	setTexts(x)
	walk(x, func(e expr) {
		n := e.node()
		n.paren, n.lit = exprPrec(e) <= precCmp, isLiteral(e)
		if s, ok := e.(*setLit); ok {
			s.val = &setValue{strs: s.strs, ints: s.ints}
		}
	})
}

func build(f *file, res *checkResult, code []byte, codes [][]byte, amount []byte) (*Policy, error) {
	sum := sha256.Sum256(code)
	p := &Policy{f: f, code: code, id: base58.Encode(sum[:])}
	for _, d := range res.params {
		p.params = append(p.params, Param{Name: d.name, Type: d.typ, Optional: d.optional})
	}
	for _, d := range res.evidence {
		p.evidence = append(p.evidence, Field{Name: d.name, Type: d.typ})
	}
	if !f.evidenceDeclared {
		// The printer leaves the block out; the schema is the inferred one.
		f.evidence = nil
	}
	if f.amount != nil {
		ins, h, err := p.pg.load(amount, len(p.params), len(p.evidence), false)
		if err != nil {
			return nil, fmt.Errorf("policy: internal error loading the amount: %w", err)
		}
		p.amountCode, p.maxStack = ins, h
		prepare(f.amount)
	}
	p.cons = make([]compiled, len(f.constraints))
	for i, c := range f.constraints {
		ins, h, err := p.pg.load(codes[i], len(p.params), len(p.evidence), true)
		if err != nil {
			return nil, fmt.Errorf("policy: internal error loading constraint %d: %w", i, err)
		}
		p.maxStack = max(p.maxStack, h)
		prepare(c.x)
		p.reads |= readsOf(c.x)
		k := compiled{optional: c.optional, code: ins, x: c.x, pretty: c.x.node().text, totalsOnly: totalsOnly(c.x)}
		if c.optional {
			walk(c.x, func(e expr) {
				if r, ok := e.(*ref); ok && !r.evidence && p.params[r.slot].Optional && !slices.Contains(k.optSlots, int32(r.slot)) {
					k.optSlots = append(k.optSlots, int32(r.slot))
				}
			})
		}
		p.cons[i] = k
	}
	exprs := make([]string, len(p.cons))
	for i := range p.cons {
		exprs[i] = p.cons[i].pretty
	}
	p.pretty = printFile(f, exprs)
	return p, nil
}

// ID is the policy's identity: Base58 of the SHA-256 of its bytecode.
func (p *Policy) ID() string { return p.id }

// Bytecode is the versioned, deterministic bytecode (see docs/bytecode.md). The
// caller must not modify it.
func (p *Policy) Bytecode() []byte { return p.code }

// Pretty is the canonical text: compiling it gives the same id.
func (p *Policy) Pretty() string { return p.pretty }

// Name is the policy's name.
func (p *Policy) Name() string { return p.f.name }

// Extractor is the evidence extractor the policy names, or "".
func (p *Policy) Extractor() string { return p.f.extractor }

// Agents returns the name of the parameter that lists the agents the policy's intents
// delegate to, and whether the policy has an agents part. An intent of a policy
// without one is undelegated.
func (p *Policy) Agents() (param string, ok bool) {
	if p.f.agents == nil {
		return "", false
	}
	return p.f.agents.name, true
}

// Parameters are the declared parameters, sorted by name.
func (p *Policy) Parameters() []Param { return slices.Clone(p.params) }

// EvidenceDeclared reports whether the policy has an evidence block (otherwise its
// evidence schema is inferred: the older dialect).
func (p *Policy) EvidenceDeclared() bool { return p.f.evidenceDeclared }

// EvidenceSchema is the evidence fields and their types, sorted by name: as declared,
// or for the older dialect as inferred from their use, TypeAny where no use fixes one.
func (p *Policy) EvidenceSchema() []Field { return slices.Clone(p.evidence) }

// NumConstraints is the number of constraints.
func (p *Policy) NumConstraints() int { return len(p.cons) }

// loadParams puts the intent's attrs into params, in the order the policy declares its
// parameters: an absent one as typeAbsent, one of another type than declared as typeBad,
// which the constraints that read them treat as such.
func (p *Policy) loadParams(params []Value, a Attrs) {
	for i, d := range p.params {
		v, ok := a[d.Name]
		switch {
		case !ok:
			v = Value{t: typeAbsent}
		case v.t != d.Type:
			v = Value{t: typeBad}
		}
		params[i] = v
	}
}

// Evaluate runs every constraint on the intent's attrs and the extracted evidence and
// returns the ones that do not hold, in order; nil when all hold. Evidence is a flat
// JSON object decoded with UseNumber (see convert for the Go values accepted). A
// constraint that reads an absent evidence field, a value of the wrong type or an
// overflowing computation fails; an optional: constraint holds when an optional
// parameter it reads is absent. A failure that came of an absent or wrongly typed
// evidence field names it in MissingEvidence. The result depends on nothing but the
// arguments.
//
// Evaluate is EvaluateIn with a zero Context: for a policy that reads no context
// value (Reads is none), the decision of either.
func (p *Policy) Evaluate(a Attrs, evidence map[string]any) []Failure {
	return p.EvaluateIn(a, evidence, Context{})
}

// EvaluateIn is Evaluate with the mandate's running totals and the decision time,
// which the constraints read as mandate.*, decision.time, and purchase.amount, the
// amount part on this evidence. The result depends on nothing but the arguments.
func (p *Policy) EvaluateIn(a Attrs, evidence map[string]any, c Context) []Failure {
	return p.evaluate(a, evidence, c, false)
}

// evaluate runs the constraints, or only those of totalsOnly when totals is set.
func (p *Policy) evaluate(a Attrs, evidence map[string]any, c Context, totals bool) []Failure {
	var local [inlineValues]Value
	var big *valueBuf
	n := p.values()
	var vals []Value
	if n <= len(local) {
		vals = local[:n]
	} else {
		big = valueBufs.Get().(*valueBuf)
		if cap(big.v) < n {
			big.v = make([]Value, n)
		}
		vals = big.v[:n]
	}
	fr := p.frameOf(vals)
	p.loadParams(fr.params, a)
	p.loadEvidence(fr.ev, evidence)
	if p.reads != 0 {
		p.loadContext(&fr, c)
	}
	// Every constraint runs before any is explained, so that the failures are counted
	// and their slice made at its length: one allocation of what is needed, not of room
	// for every constraint left. The explainer reads only the parameters and evidence,
	// which running does not change. A bit a constraint says which failed and which
	// of those could not be decided; a passing evaluation sets none.
	var failedBits, faultBits [MaxConstraints / 64]uint64
	var bits results
	if len(p.cons) <= MaxConstraints {
		bits = results{failed: failedBits[:], fault: faultBits[:]}
	} else {
		bits = results{failed: make([]uint64, (len(p.cons)+63)/64), fault: make([]uint64, (len(p.cons)+63)/64)}
	}
	failed := 0
	for k := range p.cons {
		c := &p.cons[k]
		if c.optional && anyAbsent(fr.params, c.optSlots) || totals && !c.totalsOnly {
			continue
		}
		switch p.pg.run(c.code, &fr) {
		case resFalse:
			bits.failed[k/64] |= 1 << (k % 64)
			failed++
		case resFault:
			bits.failed[k/64] |= 1 << (k % 64)
			bits.fault[k/64] |= 1 << (k % 64)
			failed++
		}
	}
	var fails []Failure
	if failed > 0 {
		// The explainer reads the values from a heap copy. Escape analysis cannot
		// tell its appends to its own buffer from a leak of what it points to, so a
		// pointer to the array on the stack would move that array to the heap for
		// every evaluation, passing ones too.
		h := big
		if h == nil {
			h = valueBufs.Get().(*valueBuf)
			h.v = append(h.v[:0], vals...)
		}
		h.fr = p.frameOf(h.v[:n])
		fails = p.explain(&h.fr, bits, failed, a, evidence)
		h.fr = frame{}
		if h != big {
			clear(h.v)
			valueBufs.Put(h)
		}
	}
	if big != nil {
		// Drop references to the caller's strings and sets before pooling.
		clear(vals)
		valueBufs.Put(big)
	}
	return fails
}

// values is how many Values an evaluation of p holds: its stack, its parameters and
// evidence, and the context when it reads any.
func (p *Policy) values() int {
	n := p.maxStack + len(p.params) + len(p.evidence)
	if p.reads != 0 {
		n += int(numCtx)
	}
	return n
}

// frameOf lays a frame over vals, p.values() of them. The context is a slice of them
// too, not an array in the frame: the escape analysis does not tell a frame's fields
// apart, and a Value loaded from an array in the frame would take the frame's slices,
// and so the evaluation's array on the goroutine's stack, to the heap with it.
func (p *Policy) frameOf(vals []Value) frame {
	np := p.maxStack + len(p.params)
	ne := np + len(p.evidence)
	return frame{stack: vals[:p.maxStack:p.maxStack], params: vals[p.maxStack:np:np], ev: vals[np:ne:ne], ctx: vals[ne:]}
}

// loadEvidence puts the evidence into ev, in the order of the policy's evidence
// schema: an absent field as typeAbsent, one of another type as typeBad.
func (p *Policy) loadEvidence(ev []Value, evidence map[string]any) {
	for i, f := range p.evidence {
		raw, ok := evidence[f.Name]
		if !ok {
			ev[i] = Value{t: typeAbsent}
			continue
		}
		ev[i], _ = convert(raw, f.Type, false)
	}
}

// results records which constraints of an evaluation failed, a bit each.
type results struct {
	failed []uint64 // did not hold
	fault  []uint64 // of those, could not be decided
}

// explain makes the Failures of the constraints that did not hold, in order.
func (p *Policy) explain(fr *frame, bits results, failed int, a Attrs, evidence map[string]any) []Failure {
	rb := reasonBufs.Get().(*reasonBuf)
	x := explainer{p: p, fr: fr, attrs: a, evidence: evidence, buf: rb.out[:0], ends: rb.ends[:0]}
	fails := make([]Failure, failed)
	i := 0
	for k := range p.cons {
		if bits.failed[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		res := resFalse
		if bits.fault[k/64]&(1<<(k%64)) != 0 {
			res = resFault
		}
		c := &p.cons[k]
		x.missing = nil
		x.appendReason(c.x, res)
		// Field by field: the slice is on the heap, and a whole Failure written into it
		// while the collector runs goes through the runtime's bulk barrier.
		f := &fails[i]
		f.Index, f.PrettyExpr, f.MissingEvidence = k, c.pretty, x.missing
		x.ends = append(x.ends, len(x.buf))
		i++
	}
	// Every reason is a piece of one string: one allocation for all of them.
	all, start := string(x.buf), 0
	for i, end := range x.ends {
		fails[i].Reason = all[start:end]
		start = end
	}
	rb.out, rb.ends = x.buf[:0], x.ends[:0]
	if cap(rb.out) > maxPooledOut {
		rb.out = nil
	}
	reasonBufs.Put(rb)
	return fails
}

func anyAbsent(params []Value, slots []int32) bool {
	for _, s := range slots {
		if params[s].t == typeAbsent {
			return true
		}
	}
	return false
}
