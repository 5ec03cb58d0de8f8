package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Witness is a concrete intent and evidence, as the JSON an intent and an extractor
// would carry, and for a policy that reads them the values of the decision's context:
// what the analysis found, checked by running the policy on it.
type Witness struct {
	// Attrs are the intent's parameters, in the wire form of attrs.
	Attrs Attrs `json:"attrs"`
	// Evidence is the extractor's answer: a JSON object of the fields present.
	Evidence map[string]any `json:"evidence"`
	// Context is the decision's context, for a policy that reads mandate.*,
	// purchase.amount or decision.time; nil otherwise.
	Context *WitnessContext `json:"context,omitempty"`

	// memo is the analysis's record of runs of this witness, which it keeps to answer
	// later questions without the solver; Run itself always runs.
	memo map[*Policy]runResult
}

// runResult is one run of a witness.
type runResult struct {
	accepted bool
	failed   []int
	err      error
}

// run is Run, remembered: the analysis runs a witness it holds against every later
// question, and never changes it.
func (w *Witness) run(p *Policy) runResult {
	if r, ok := w.memo[p]; ok {
		return r
	}
	var r runResult
	r.accepted, r.failed, r.err = w.Run(p)
	if w.memo == nil {
		w.memo = map[*Policy]runResult{}
	}
	w.memo[p] = r
	return r
}

// fails reports whether p accepts the witness's intent and constraint i fails on it.
func (w *Witness) fails(p *Policy, i int) bool {
	r := w.run(p)
	return r.err == nil && r.accepted && slices.Contains(r.failed, i)
}

// holdsAll reports whether p accepts the witness's intent and every constraint of ks
// holds on it.
func (w *Witness) holdsAll(p *Policy, ks []int) bool {
	r := w.run(p)
	if r.err != nil || !r.accepted {
		return false
	}
	for _, k := range ks {
		if slices.Contains(r.failed, k) {
			return false
		}
	}
	return true
}

// failsOnly reports whether p accepts the witness's intent and constraint i alone
// fails on it.
func (w *Witness) failsOnly(p *Policy, i int) bool {
	r := w.run(p)
	return r.err == nil && r.accepted && slices.Equal(r.failed, []int{i})
}

// reaches reports whether constraint i of p is evaluated on the witness rather than
// skipped: the optional parameters an optional: constraint reads are given.
func (w *Witness) reaches(p *Policy, i int) bool {
	return !p.Skipped(i, w.Attrs)
}

// complete reports whether the witness has every value p reads: each evidence field,
// of its type (a witness holds only such), and the decision time if p reads it.
func (w *Witness) complete(p *Policy) bool {
	for _, f := range p.evidence {
		if _, ok := w.Evidence[f.Name]; !ok {
			return false
		}
	}
	return p.reads&DecisionTime == 0 || w.Context != nil && w.Context.Time != nil
}

// WitnessContext is the part of a Context a witness fixes: the mandate's totals before
// the purchase and the decision time.
type WitnessContext struct {
	Spent           int64 `json:"spent"`
	Purchases       int64 `json:"purchases"`
	PeriodSpent     int64 `json:"period_spent"`
	PeriodPurchases int64 `json:"period_purchases"`
	// Time is the decision time in Unix seconds; nil is a decision without a time.
	Time *int64 `json:"time,omitempty"`
}

// Context is the witness's Context, for EvaluateIn.
func (c *WitnessContext) context() Context {
	if c == nil {
		return Context{}
	}
	out := Context{Spent: c.Spent, Purchases: c.Purchases, PeriodSpent: c.PeriodSpent, PeriodPurchases: c.PeriodPurchases}
	if c.Time != nil {
		out.Time = time.Unix(*c.Time, 0).UTC()
	}
	return out
}

// Run decides the witness with p as the service would: whether its attrs are an intent
// p accepts, and if so which constraints fail on its evidence. The evidence goes
// through JSON first, as an extractor's answer does.
func (w *Witness) Run(p *Policy) (accepted bool, failed []int, err error) {
	if p.CheckAttrs(w.Attrs) != nil {
		return false, nil, nil
	}
	raw, err := json.Marshal(w.Evidence)
	if err != nil {
		return false, nil, fmt.Errorf("policy: witness evidence: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var ev map[string]any
	if err := d.Decode(&ev); err != nil {
		return false, nil, fmt.Errorf("policy: witness evidence: %w", err)
	}
	for _, f := range p.EvaluateIn(w.Attrs, ev, w.Context.context()) {
		failed = append(failed, f.Index)
	}
	return true, failed, nil
}

// passes reports whether p accepts the witness's intent and every constraint holds.
func (w *Witness) passes(p *Policy) bool {
	r := w.run(p)
	return r.err == nil && r.accepted && len(r.failed) == 0
}

// witness reads a model: the values of every present parameter and evidence field, of
// the type its tag says, and the context when one of ps reads it.
func (e *encoder) witness(model map[string]sexp, ps []*Policy) (*Witness, error) {
	w := &Witness{Attrs: Attrs{}, Evidence: map[string]any{}}
	read := func(v *smtVar) (Value, bool, error) {
		if model[v.present].atom != "true" {
			return Value{}, false, nil
		}
		t := v.types[0]
		if v.tag != "" {
			i, err := model[v.tag].int()
			if err != nil || i < 0 || int(i) >= len(v.types) {
				return Value{}, false, fmt.Errorf("type tag of %s: %v", v.name, model[v.tag])
			}
			t = v.types[i]
		}
		val, err := model[v.vals[t]].value(t)
		return val, err == nil, err
	}
	for _, name := range sortedKeys(e.params) {
		val, ok, err := read(e.params[name])
		if err != nil {
			return nil, err
		}
		if ok {
			w.Attrs[name] = val
		}
	}
	for _, name := range sortedKeys(e.evidence) {
		val, ok, err := read(e.evidence[name])
		if err != nil {
			return nil, err
		}
		if ok {
			w.Evidence[name] = jsonValue(val)
		}
	}
	for _, p := range ps {
		if p.reads == 0 {
			continue
		}
		var c WitnessContext
		fields := []*int64{&c.Spent, &c.Purchases, &c.PeriodSpent, &c.PeriodPurchases}
		for i, f := range fields {
			n, err := model[e.ctx[i]].int()
			if err != nil {
				return nil, err
			}
			*f = n
		}
		if model[e.timeKnown].atom == "true" {
			t, err := model[e.ctx[ctxTime]].int()
			if err != nil {
				return nil, err
			}
			c.Time = &t
		}
		w.Context = &c
		break
	}
	return w, nil
}

// modelTerms are the terms whose values make a witness, and the arguments of lower and
// upper, for the refinement.
func (e *encoder) modelTerms() []string {
	var terms []string
	for _, vars := range []map[string]*smtVar{e.params, e.evidence} {
		for _, name := range sortedKeys(vars) {
			v := vars[name]
			terms = append(terms, v.present)
			if v.tag != "" {
				terms = append(terms, v.tag)
			}
			for _, t := range v.types {
				terms = append(terms, v.vals[t])
			}
		}
	}
	for v := ctxVal(0); v < numCtx; v++ {
		if e.ctx[v] != "" {
			terms = append(terms, e.ctx[v])
		}
	}
	terms = append(terms, e.timeKnown)
	for _, u := range e.ufs {
		if !slices.Contains(terms, u.arg) {
			terms = append(terms, u.arg)
		}
	}
	return terms
}

// jsonValue is a value as an extractor's JSON carries it.
func jsonValue(v Value) any {
	switch v.Type() {
	case TypeInt:
		return v.Int()
	case TypeString:
		return v.Str()
	case TypeBool:
		return v.Bool()
	case TypeStringSet:
		return append([]string{}, v.Strings()...)
	case TypeIntSet:
		return append([]int64{}, v.Ints()...)
	}
	return nil
}
