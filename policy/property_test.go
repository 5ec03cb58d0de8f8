package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// gen writes random well-typed policies, in random spellings and layouts, and random
// inputs for them.
type gen struct {
	r        *rand.Rand
	params   []Param
	ev       []Field
	declared bool
}

var genTypes = []Type{TypeInt, TypeString, TypeBool, TypeStringSet, TypeIntSet}

func newGen(seed uint64) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	g.declared = g.r.IntN(3) > 0
	for i, n := 0, 1+g.r.IntN(6); i < n; i++ {
		g.params = append(g.params, Param{Name: fmt.Sprintf("p%d", i), Type: genTypes[g.r.IntN(5)], Optional: g.r.IntN(4) == 0})
	}
	for i, n := 0, 1+g.r.IntN(8); i < n; i++ {
		g.ev = append(g.ev, Field{Name: fmt.Sprintf("e%d", i), Type: genTypes[g.r.IntN(5)]})
	}
	return g
}

func (g *gen) pick(words ...string) string { return words[g.r.IntN(len(words))] }

func (g *gen) source() string {
	var b strings.Builder
	sp := func() string { return g.pick(" ", "  ", "\n  ", " # note\n ") }
	fmt.Fprintf(&b, "# generated\nname g%d\n", g.r.IntN(1000))
	if g.r.IntN(3) == 0 {
		fmt.Fprintf(&b, "extractor %q\n", g.pick("web", "http", "catalog"))
	}
	b.WriteString(g.pick("parameters", "intent") + " {")
	for _, i := range g.r.Perm(len(g.params)) {
		p := g.params[i]
		opt := ""
		if p.Optional {
			opt = "optional "
		}
		fmt.Fprintf(&b, "%s%s: %s%s%s", sp(), p.Name, opt, p.Type, g.pick("", ",", ";"))
	}
	b.WriteString("\n}\n")
	if g.declared {
		b.WriteString("evidence {")
		for _, i := range g.r.Perm(len(g.ev)) {
			fmt.Fprintf(&b, "%s%s: %s", sp(), g.ev[i].Name, g.ev[i].Type)
		}
		b.WriteString("\n}\n")
	}
	b.WriteString("requires {\n")
	for i, n := 0, 1+g.r.IntN(6); i < n; i++ {
		if g.r.IntN(4) == 0 {
			b.WriteString("  optional:")
		}
		b.WriteString("  " + g.expr(TypeBool, 4) + ";\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func (g *gen) ref(t Type) string {
	var names []string
	for _, p := range g.params {
		if p.Type == t {
			names = append(names, g.pick("parameters.", "intent.")+p.Name)
		}
	}
	for _, f := range g.ev {
		if f.Type == t {
			names = append(names, "evidence."+f.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return names[g.r.IntN(len(names))]
}

func (g *gen) lit(t Type) string {
	switch t {
	case TypeInt:
		return g.pick("0", "1", "2", "3", "-1", "(-2)", "9223372036854775807", "-9223372036854775808", "4294967296")
	case TypeString:
		return g.pick(`""`, `"a"`, `"b"`, `"A"`, `"ab"`, `"\u0061"`, `"é"`)
	case TypeBool:
		return g.pick("true", "false")
	case TypeStringSet:
		return g.pick(`{"a"}`, `{"b", "a"}`, `{"a", "ab", "a"}`, `{""}`)
	}
	return g.pick("{1}", "{3, 1, 2}", "{-1, 0}", "{2, 2}")
}

func (g *gen) paren(s string) string {
	if g.r.IntN(4) == 0 {
		return "(" + s + ")"
	}
	return s
}

func (g *gen) expr(t Type, d int) string {
	if d == 0 || g.r.IntN(4) == 0 {
		if r := g.ref(t); r != "" && g.r.IntN(3) > 0 {
			return r
		}
		return g.lit(t)
	}
	d--
	sub := func(t Type) string { return "(" + g.expr(t, d) + ")" }
	switch t {
	case TypeInt:
		switch g.r.IntN(5) {
		case 0:
			return sub(TypeInt) + g.pick(" + ", " - ", " * ") + sub(TypeInt)
		case 1:
			return "-" + sub(TypeInt)
		case 2:
			return "len(" + g.expr(g.pick2(TypeString, TypeStringSet, TypeIntSet), d) + ")"
		}
	case TypeString:
		if g.r.IntN(2) == 0 {
			return g.pick("lower(", "upper(") + g.expr(TypeString, d) + ")"
		}
	case TypeBool:
		switch g.r.IntN(10) {
		case 0:
			return sub(TypeBool) + g.pick(" and ", " && ", " or ", " || ") + sub(TypeBool)
		case 1:
			return g.pick("not ", "!") + sub(TypeBool)
		case 2:
			return sub(TypeInt) + g.pick(" < ", " <= ", " > ", " >= ") + sub(TypeInt)
		case 3:
			u := genTypes[g.r.IntN(5)]
			return sub(u) + g.pick(" == ", " != ") + sub(u)
		case 4:
			u := g.pick2(TypeString, TypeInt, TypeInt)
			return sub(u) + g.pick(" in ", " not in ") + g.paren(g.expr(setOf(u), d))
		case 5:
			s := sub(TypeInt)
			for i, n := 0, 1+g.r.IntN(3); i < n; i++ {
				s += g.pick(" < ", " <= ", " > ", " >= ", " == ", " != ") + sub(TypeInt)
			}
			return s
		case 6:
			return g.pick("contains(", "starts_with(", "ends_with(") + g.expr(TypeString, d) + ", " + g.expr(TypeString, d) + ")"
		case 7:
			u := g.pick2(TypeStringSet, TypeIntSet, TypeIntSet)
			return g.pick("subset(", "intersects(") + g.expr(u, d) + ", " + g.expr(u, d) + ")"
		}
	}
	return g.expr(t, 0)
}

func (g *gen) pick2(ts ...Type) Type { return ts[g.r.IntN(len(ts))] }

// delegate adds an agents part to src, a policy g wrote, naming a set<string> parameter
// every intent carries, declared for it when g has none, in a random place and
// spelling. It draws on r rather than on g's generator, so that the policies and
// inputs g makes for a seed stay those the explain corpus pins.
func (g *gen) delegate(r *rand.Rand, src string) string {
	name := ""
	for _, p := range g.params {
		if p.Type == TypeStringSet && !p.Optional && r.IntN(2) == 0 {
			name = p.Name
		}
	}
	if name == "" {
		name = "agents"
		// g writes "parameters {" or "intent {" once, with no field on the line.
		for _, block := range []string{"parameters {", "intent {"} {
			src = strings.Replace(src, block, block+" agents: set<string>", 1)
		}
	}
	part := []string{"agents parameters.", "agents intent.", "agents # who may propose\n  parameters . "}[r.IntN(3)] + name + "\n"
	switch r.IntN(3) {
	case 0:
		return part + src
	case 1:
		return strings.Replace(src, "requires {", part+"requires {", 1)
	}
	return src + part
}

// mandate adds an amount part of a random int expression to src, a policy g wrote,
// perhaps a period part, and constraints that read the context, in random places. Like
// delegate, it draws on r, and leaves g's generator as it was.
func (g *gen) mandate(r *rand.Rand, src string) string {
	h := &gen{r: r, params: g.params, ev: g.ev, declared: g.declared}
	period := []string{"", "day", "week", "month"}[r.IntN(4)]
	values := []string{"mandate.spent", "mandate.purchases", "purchase.amount", "decision.time"}
	if period != "" {
		values = append(values, "mandate.period_spent", "mandate.period_purchases")
	}
	v := func() string { return values[r.IntN(len(values))] }
	var cons strings.Builder
	for i, n := 0, 1+r.IntN(3); i < n; i++ {
		switch r.IntN(3) {
		case 0:
			fmt.Fprintf(&cons, "  %s + %s <= %s;\n", v(), v(), h.expr(TypeInt, 1))
		case 1:
			fmt.Fprintf(&cons, "  %s < %s or %s;\n", v(), h.expr(TypeInt, 1), h.expr(TypeBool, 1))
		default:
			fmt.Fprintf(&cons, "  %s %s (%s);\n", h.expr(TypeInt, 1), h.pick("==", "!=", ">"), v())
		}
	}
	src = strings.Replace(src, "requires {\n", "requires {\n"+cons.String(), 1)
	// The amount reads no optional parameter.
	required := &gen{r: r, ev: g.ev, declared: g.declared}
	for _, p := range g.params {
		if !p.Optional {
			required.params = append(required.params, p)
		}
	}
	part := "amount " + required.expr(TypeInt, 2) + "\n"
	if period != "" {
		part += h.pick("", "# the period\n") + "period " + period + "\n"
	}
	switch r.IntN(3) {
	case 0:
		return part + src
	case 1:
		return strings.Replace(src, "requires {", part+"requires {", 1)
	}
	return src + part
}

// context is a random Context, at times without a time.
func (g *gen) context(r *rand.Rand) Context {
	n := func() int64 { return []int64{0, 1, 2, 100, math.MaxInt64, -1}[r.IntN(6)] }
	c := Context{Spent: n(), Purchases: n(), PeriodSpent: n(), PeriodPurchases: n()}
	if r.IntN(4) > 0 {
		c.Time = time.Unix(n(), int64(r.IntN(1e9)))
	}
	return c
}

func (g *gen) value(t Type) any {
	switch t {
	case TypeInt:
		return json.Number(g.pick("0", "1", "2", "3", "-1", "9223372036854775807", "-9223372036854775808", "4294967296"))
	case TypeString:
		return g.pick("", "a", "b", "A", "ab", "é")
	case TypeBool:
		return g.r.IntN(2) == 0
	case TypeStringSet:
		var s []any
		for _, e := range []string{"a", "b", "ab", ""} {
			if g.r.IntN(2) == 0 {
				s = append(s, e)
			}
		}
		return s
	}
	var s []any
	for _, e := range []string{"-1", "0", "1", "2", "3"} {
		if g.r.IntN(2) == 0 {
			s = append(s, json.Number(e))
		}
	}
	return s
}

func (g *gen) inputs() (Attrs, map[string]any) {
	a := Attrs{}
	for _, p := range g.params {
		if p.Optional && g.r.IntN(2) == 0 || g.r.IntN(20) == 0 {
			continue
		}
		v, _ := convert(g.value(p.Type), p.Type, false)
		a[p.Name] = v
	}
	ev := map[string]any{}
	for _, f := range g.ev {
		switch g.r.IntN(12) {
		case 0: // absent
		case 1:
			ev[f.Name] = g.value(genTypes[g.r.IntN(5)]) // perhaps the wrong type
		default:
			ev[f.Name] = g.value(f.Type)
		}
	}
	return a, ev
}

// TestProperties: for generated policies, half of them delegated to agents and a third
// of them mandates, compile -> pretty -> compile gives the same id, agents and mandate
// parts, printing is stable, decode(bytecode) is the same policy and evaluates exactly
// as the compiled one in any context, amounts included, and the machine and the
// explainer agree on every constraint.
func TestProperties(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 50
	}
	for seed := uint64(0); seed < uint64(n); seed++ {
		g := newGen(seed)
		src := g.source()
		delegated := seed%2 == 1
		if delegated {
			src = g.delegate(rand.New(rand.NewPCG(seed, 1)), src)
		}
		r := rand.New(rand.NewPCG(seed, 2))
		if seed%3 == 2 {
			src = g.mandate(r, src)
		}
		p, err := Compile(src)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		q, err := Compile(p.Pretty())
		if err != nil || q.ID() != p.ID() || q.Pretty() != p.Pretty() {
			t.Fatalf("seed %d: pretty form: %v\n%s\n%s", seed, err, src, p.Pretty())
		}
		d, err := Decode(p.Bytecode())
		if err != nil || d.ID() != p.ID() || d.Pretty() != p.Pretty() || !sameAgents(d, p) || !sameAgents(q, p) ||
			!sameMandate(d, p) || !sameMandate(q, p) {
			t.Fatalf("seed %d: decode: %v", seed, err)
		}
		if _, ok := p.Agents(); ok != delegated {
			t.Fatalf("seed %d: Agents() says %v\n%s", seed, ok, src)
		}
		for i := 0; i < 20; i++ {
			a, ev := g.inputs()
			c := g.context(r)
			want := p.EvaluateIn(a, ev, c)
			if got := d.EvaluateIn(a, ev, c); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: decoded policy evaluates\n%+v\ncompiled\n%+v\n%s", seed, got, want, p.Pretty())
			}
			if got := q.EvaluateIn(a, ev, c); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: recompiled policy differs", seed)
			}
			n, ok, err := p.Amount(a, ev)
			if n2, ok2, err2 := d.Amount(a, ev); n2 != n || ok2 != ok || !reflect.DeepEqual(err2, err) {
				t.Fatalf("seed %d: decoded policy's amount differs", seed)
			}
			agree(t, p, a, ev, c)
		}
	}
}

// agree checks that the machine's result for each constraint is what the explainer,
// walking the tree, finds.
func agree(t *testing.T, p *Policy, a Attrs, ev map[string]any, c Context) {
	t.Helper()
	fr := &frame{stack: make([]Value, p.maxStack), params: make([]Value, len(p.params)), ev: make([]Value, len(p.evidence)), ctx: make([]Value, numCtx)}
	p.loadParams(fr.params, a)
	for i, f := range p.evidence {
		if raw, ok := ev[f.Name]; ok {
			fr.ev[i], _ = convert(raw, f.Type, false)
		} else {
			fr.ev[i] = Value{t: typeAbsent}
		}
	}
	p.loadContext(fr, c)
	x := &explainer{p: p, fr: fr, attrs: a, evidence: ev}
	for k, c := range p.cons {
		res := p.pg.run(c.code, fr)
		v, fault := x.eval(c.x)
		var want result
		switch {
		case fault != "":
			want = resFault
		case v.t == TypeBool && v.n != 0:
			want = resTrue
		default:
			want = resFalse
		}
		if res != want {
			t.Fatalf("constraint %d %s: machine %d, explainer %d (%s)", k, c.pretty, res, want, fault)
		}
		if res != resTrue {
			if r := x.reason(c.x); r == "" || r == "the constraint could not be decided" {
				t.Fatalf("constraint %d: reason %q", k, r)
			}
		}
	}
}

func TestArith(t *testing.T) {
	tests := []struct {
		op   byte
		a, b int64
		ok   bool
	}{
		{bcAdd, math.MaxInt64, 0, true}, {bcAdd, math.MaxInt64, 1, false}, {bcAdd, math.MinInt64, -1, false}, {bcAdd, -5, 3, true},
		{bcSub, math.MinInt64, 1, false}, {bcSub, math.MaxInt64, -1, false}, {bcSub, 0, math.MinInt64, false}, {bcSub, -1, math.MinInt64, true},
		{bcMul, math.MinInt64, -1, false}, {bcMul, -1, math.MinInt64, false}, {bcMul, math.MinInt64, 1, true}, {bcMul, 1 << 32, 1 << 31, false},
		{bcMul, 1 << 31, 1 << 31, true}, {bcMul, 0, math.MinInt64, true}, {bcMul, -3, 4, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%x %d %d", tc.op, tc.a, tc.b), func(t *testing.T) {
			got, ok := arith(tc.op, tc.a, tc.b)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (got %d)", ok, tc.ok, got)
			}
			if ok {
				want := map[byte]int64{bcAdd: tc.a + tc.b, bcSub: tc.a - tc.b, bcMul: tc.a * tc.b}[tc.op]
				if got != want {
					t.Fatalf("got %d, want %d", got, want)
				}
			}
		})
	}
}
