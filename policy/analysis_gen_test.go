package policy_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/intentd/intentd/policy"
)

// The analysis is checked against two judges that share none of its code: a search
// of every intent and evidence over small domains, run through the VM, and, for
// policies without sets, a second solver. agen writes the policies they judge.

// agen writes random policies over a fixed set of parameters and evidence fields of
// every scalar type, with an optional parameter, and sets when sets is on.
type agen struct {
	r    *rand.Rand
	sets bool
}

func newAgen(seed uint64, sets bool) *agen {
	return &agen{r: rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15+1)), sets: sets}
}

func (g *agen) pick(words ...string) string { return words[g.r.IntN(len(words))] }

// source is a policy of 1 to 4 constraints.
func (g *agen) source() string {
	var b strings.Builder
	b.WriteString("name generated\nparameters {\n  pi: int\n  ps: string\n  pb: bool\n  po: optional int\n")
	if g.sets {
		b.WriteString("  pss: set<string>\n")
	}
	b.WriteString("}\nevidence {\n  ei: int\n  es: string\n  eb: bool\n")
	if g.sets {
		b.WriteString("  ess: set<string>\n")
	}
	b.WriteString("}\nrequires {\n")
	for i, n := 0, 1+g.r.IntN(4); i < n; i++ {
		x := g.boolean(2)
		if strings.Contains(x, "parameters.po") && g.r.IntN(2) == 0 {
			b.WriteString("  optional: ")
		}
		b.WriteString("  " + x + ";\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func (g *agen) intLit() string {
	switch g.r.IntN(8) {
	case 0:
		return "9223372036854775807"
	case 1:
		return "-9223372036854775807"
	}
	return fmt.Sprint(g.r.IntN(7) - 3)
}

func (g *agen) strLit() string { return fmt.Sprintf("%q", g.pick("", "a", "b", "ab", "A", "Ab")) }

func (g *agen) integer(d int) string {
	n := 6
	if d > 0 {
		n = 10
	}
	switch g.r.IntN(n) {
	case 0, 1:
		return g.intLit()
	case 2:
		return "parameters.pi"
	case 3:
		return "parameters.po"
	case 4, 5:
		return "evidence.ei"
	case 6:
		return "(" + g.integer(d-1) + " " + g.pick("+", "-") + " " + g.integer(d-1) + ")"
	case 7:
		return "(" + g.integer(d-1) + " * " + g.intLit() + ")"
	case 8:
		return "-" + g.integer(d-1)
	}
	if g.sets && g.r.IntN(3) == 0 {
		return "len(" + g.set() + ")"
	}
	return "len(" + g.str(d-1) + ")"
}

func (g *agen) str(d int) string {
	n := 4
	if d > 0 {
		n = 6
	}
	switch g.r.IntN(n) {
	case 0:
		return g.strLit()
	case 1:
		return "parameters.ps"
	case 2, 3:
		return "evidence.es"
	case 4:
		return "lower(" + g.str(d-1) + ")"
	}
	return "upper(" + g.str(d-1) + ")"
}

func (g *agen) set() string {
	switch g.r.IntN(3) {
	case 0:
		return "parameters.pss"
	case 1:
		return "evidence.ess"
	}
	return "{" + g.strLit() + ", " + g.strLit() + "}"
}

func (g *agen) boolean(d int) string {
	n := 9
	if d > 0 {
		n = 13
	}
	if g.sets {
		n += 3
	}
	switch k := g.r.IntN(n); k {
	case 0:
		return "evidence.eb"
	case 1:
		return "parameters.pb"
	case 2, 3:
		return g.integer(1) + " " + g.pick("<", "<=", "==", "!=", ">", ">=") + " " + g.integer(1)
	case 4:
		return g.integer(0) + " " + g.pick("<", "<=") + " " + g.integer(0) + " " + g.pick("<", "<=", "==") + " " + g.integer(0)
	case 5:
		return g.str(1) + " " + g.pick("==", "!=") + " " + g.str(1)
	case 6:
		return g.pick("contains", "starts_with", "ends_with") + "(" + g.str(1) + ", " + g.str(1) + ")"
	case 7:
		return g.str(0) + g.pick(" in ", " not in ") + "{" + g.strLit() + ", " + g.strLit() + "}"
	case 8:
		return g.integer(0) + g.pick(" in ", " not in ") + "{" + g.intLit() + ", " + g.intLit() + "}"
	case 9:
		return "not (" + g.boolean(d-1) + ")"
	case 10, 11:
		return "(" + g.boolean(d-1) + " " + g.pick("and", "or") + " " + g.boolean(d-1) + ")"
	case 12:
		return "evidence.eb == parameters.pb"
	case 13:
		return g.str(0) + g.pick(" in ", " not in ") + g.set()
	case 14:
		return g.pick("subset", "intersects") + "(" + g.set() + ", " + g.set() + ")"
	}
	return g.set() + g.pick(" == ", " != ") + g.set()
}

// searchLimit bounds the intents and evidence a search runs: past it, a search runs
// that many, spread at random over the domains, so that a policy reading every field
// is judged in a second rather than a minute.
const searchLimit = 10000

// search runs the policy on intents and evidence over small domains (the literals of
// the generator and their neighbours), each value present, po also absent, and calls
// f with each that is an intent of p and the constraints that fail; f returns false
// to stop. Every
// combination is run when there are at most searchLimit, a random sample otherwise.
func search(p *policy.Policy, sets bool, f func(w *policy.Witness, failed []int) bool) {
	ints := []int64{-3, -2, -1, 0, 1, 2, 3, 4, math.MaxInt64, math.MinInt64}
	strs := []string{"", "a", "A", "ab", "Ab", "aB", "b"}
	sets2 := [][]string{{}, {"a"}, {"b"}, {"a", "b"}, {"ab", "A"}, {""}}
	reads := p.Pretty()
	type dim struct {
		name string
		n    int
		set  func(w *policy.Witness, k int)
	}
	var dims []dim
	add := func(name string, n int, set func(w *policy.Witness, k int)) {
		if strings.Contains(reads, name) {
			dims = append(dims, dim{name, n, set})
		}
	}
	add("parameters.pi", len(ints), func(w *policy.Witness, k int) { w.Attrs["pi"] = policy.IntValue(ints[k]) })
	add("parameters.po", len(ints)+1, func(w *policy.Witness, k int) {
		if k < len(ints) {
			w.Attrs["po"] = policy.IntValue(ints[k])
		}
	})
	add("evidence.ei", len(ints), func(w *policy.Witness, k int) { w.Evidence["ei"] = ints[k] })
	add("parameters.ps", len(strs), func(w *policy.Witness, k int) { w.Attrs["ps"] = policy.StringValue(strs[k]) })
	add("evidence.es", len(strs), func(w *policy.Witness, k int) { w.Evidence["es"] = strs[k] })
	add("parameters.pb", 2, func(w *policy.Witness, k int) { w.Attrs["pb"] = policy.BoolValue(k == 1) })
	add("evidence.eb", 2, func(w *policy.Witness, k int) { w.Evidence["eb"] = k == 1 })
	if sets {
		add("parameters.pss", len(sets2), func(w *policy.Witness, k int) { w.Attrs["pss"] = policy.StringSetValue(sets2[k]...) })
		add("evidence.ess", len(sets2), func(w *policy.Witness, k int) {
			elems := make([]any, len(sets2[k]))
			for i, e := range sets2[k] {
				elems[i] = e
			}
			w.Evidence["ess"] = elems
		})
	}
	total := 1
	for _, d := range dims {
		total *= d.n
	}
	r := rand.New(rand.NewPCG(uint64(total), 7))
	for i := range min(total, searchLimit) {
		idx := i
		if total > searchLimit {
			idx = r.IntN(total)
		}
		w := &policy.Witness{
			Attrs:    policy.Attrs{"pi": policy.IntValue(0), "ps": policy.StringValue(""), "pb": policy.BoolValue(false)},
			Evidence: map[string]any{"ei": 0, "es": "", "eb": false},
		}
		if sets {
			w.Attrs["pss"] = policy.StringSetValue()
			w.Evidence["ess"] = []any{}
		}
		for _, d := range dims {
			d.set(w, idx%d.n)
			idx /= d.n
		}
		// The evaluator straight, not Run's JSON round trip: the search runs it
		// thousands of times, under the race detector too.
		if p.CheckAttrs(w.Attrs) != nil {
			continue
		}
		var failed []int
		for _, fl := range p.Evaluate(w.Attrs, w.Evidence) {
			failed = append(failed, fl.Index)
		}
		if !f(w, failed) {
			return
		}
	}
}
