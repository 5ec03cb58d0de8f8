package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/golden"
)

// corpusInputs are inputs for a policy from its declared schema alone: mostly values of
// the right type, some absent or of another type, and some long strings and large sets
// so that the explanations' cutting of long values is exercised.
func corpusInputs(r *rand.Rand, p *Policy) (Attrs, map[string]any) {
	g := &gen{r: r}
	value := func(t Type) any {
		switch {
		case r.IntN(10) > 0:
			return g.value(t)
		case t == TypeString:
			return strings.Repeat("é-x", 10+r.IntN(30))
		case t == TypeStringSet:
			var s []any
			for i := range 10 + r.IntN(20) {
				s = append(s, fmt.Sprintf("s%02d", i))
			}
			return s
		case t == TypeIntSet:
			var s []any
			for i := range 10 + r.IntN(20) {
				s = append(s, json.Number(fmt.Sprint(i*7-30)))
			}
			return s
		}
		return g.value(t)
	}
	a := Attrs{}
	for _, d := range p.Parameters() {
		if d.Optional && r.IntN(2) == 0 || r.IntN(20) == 0 {
			continue
		}
		v, _ := convert(value(d.Type), d.Type, false)
		a[d.Name] = v
	}
	ev := map[string]any{}
	for _, f := range p.EvidenceSchema() {
		t := f.Type
		if t == TypeAny {
			t = genTypes[r.IntN(5)]
		}
		switch r.IntN(12) {
		case 0: // absent
		case 1:
			ev[f.Name] = value(genTypes[r.IntN(5)]) // perhaps the wrong type
		default:
			ev[f.Name] = value(t)
		}
	}
	return a, ev
}

// corpusContext is a context for a mandate's decision: small totals mostly, some at
// the edge of int64, and at times no decision time.
func corpusContext(r *rand.Rand) Context {
	n := func() int64 {
		if r.IntN(10) == 0 {
			return math.MaxInt64 - r.Int64N(3)
		}
		return r.Int64N(20000)
	}
	c := Context{Spent: n(), Purchases: r.Int64N(6), PeriodSpent: n(), PeriodPurchases: r.Int64N(3)}
	if r.IntN(5) > 0 {
		c.Time = time.Unix(1798761600+r.Int64N(1<<25), 0)
	}
	return c
}

// TestExplainCorpus pins every explanation over a corpus: the policies of
// testdata/pretty, the benchmark's and the documentation's, each with generated
// inputs, and 400 generated policies with theirs. The explanations are part of what a
// failed proposal records and signs, so a change that makes explaining cheaper must
// leave every byte as it was; the golden file was written by the explainer before its
// buffers were reworked.
func TestExplainCorpus(t *testing.T) {
	var b strings.Builder
	write := func(name string, p *Policy, a Attrs, ev map[string]any, c Context) {
		fails := p.EvaluateIn(a, ev, c)
		fmt.Fprintf(&b, "== %s: %d failing\n", name, len(fails))
		for _, f := range fails {
			fmt.Fprintf(&b, "%d %s\n  %s\n", f.Index, f.PrettyExpr, f.Reason)
			if len(f.MissingEvidence) > 0 {
				fmt.Fprintf(&b, "  missing %s\n", strings.Join(f.MissingEvidence, ", "))
			}
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "pretty", "*.src"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources in testdata/pretty: %v", err)
	}
	srcs := map[string]string{"bench25": bench25, "example": example}
	names := []string{"bench25", "example"}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(file)
		srcs[name] = string(src)
		names = append(names, name)
	}
	// Each policy's inputs come of its index: a source added to testdata/pretty under a
	// name that sorts after the others adds its entries and leaves theirs as they were.
	for i, name := range names {
		p := mustCompile(t, srcs[name])
		r := rand.New(rand.NewPCG(uint64(i), 7))
		for j := range 40 {
			a, ev := corpusInputs(r, p)
			var c Context
			if p.Reads() != 0 {
				// Drawn only for a policy that reads them, so that the inputs of the
				// others stay as they were.
				c = corpusContext(r)
			}
			write(fmt.Sprintf("%s input %d", name, j), p, a, ev, c)
		}
	}
	write("bench25 failing", mustCompile(t, bench25), mustAttrs(t, bench25Attrs), mustEvidence(t, bench25Fail), Context{})
	for seed := uint64(1000); seed < 1400; seed++ {
		g := newGen(seed)
		p := mustCompile(t, g.source())
		for j := range 5 {
			a, ev := g.inputs()
			write(fmt.Sprintf("generated %d input %d", seed, j), p, a, ev, Context{})
		}
	}
	golden.Check(t, filepath.Join("testdata", "explain", "corpus.golden"), b.String())
}

// TestEvaluateLargePolicy covers a policy whose values do not fit the array an
// evaluation keeps on its stack, twice over, so that a pooled buffer is reused.
func TestEvaluateLargePolicy(t *testing.T) {
	var src strings.Builder
	src.WriteString("name large\nparameters {\n  limit: int\n}\nevidence {\n")
	for i := range 90 {
		fmt.Fprintf(&src, "  e%02d: int\n", i)
	}
	src.WriteString("}\nrequires {\n")
	for i := range 90 {
		fmt.Fprintf(&src, "  evidence.e%02d <= parameters.limit + %d;\n", i, i)
	}
	src.WriteString("}\n")
	p := mustCompile(t, src.String())
	if n := p.maxStack + len(p.params) + len(p.evidence); n <= inlineValues {
		t.Fatalf("%d values fit on the stack; the test needs more", n)
	}
	a := Attrs{"limit": IntValue(10)}
	for round := range 3 {
		ev := map[string]any{}
		for i := range 90 {
			if i%3 == round {
				ev[fmt.Sprintf("e%02d", i)] = json.Number(fmt.Sprint(i + 11 + round))
			} else {
				ev[fmt.Sprintf("e%02d", i)] = json.Number("0")
			}
		}
		fails := p.Evaluate(a, ev)
		if len(fails) != 30 {
			t.Fatalf("round %d: %d failures, want 30", round, len(fails))
		}
		for _, f := range fails {
			want := fmt.Sprintf("evidence.e%02d = %d, which is not <= parameters.limit + %d = %d", f.Index, f.Index+11+round, f.Index, 10+f.Index)
			if f.Index%3 != round || f.Reason != want {
				t.Fatalf("round %d: failure %d: %q, want %q", round, f.Index, f.Reason, want)
			}
		}
	}
}
