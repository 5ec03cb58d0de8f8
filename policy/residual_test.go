package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/intentd/intentd/internal/golden"
)

// TestRequirementsGolden pins the residuals and the schema of the example policies for
// an intent of each: the t-shirt with the intent of docs/policy-language.md, with and
// without brands, delegated, and under a mandate.
func TestRequirementsGolden(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	docsAttrs := `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["red", "navy"]}}, "max_price_cents": {"Int": 3000}}}`
	tests := []struct {
		name, policy, attrs string
	}{
		{"tshirt", "../examples/tshirt.policy", docsAttrs},
		{"tshirt_brands", "../examples/tshirt.policy",
			`{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["navy"]}}, "max_price_cents": {"Int": 2500}, "brands": {"Set": {"String": ["Northwind", "Acme"]}}}}`},
		{"tshirt_no_colors", "../examples/tshirt.policy",
			`{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": []}}, "max_price_cents": {"Int": 50}}}`},
		{"delegated", "../examples/delegated.policy",
			`{"fields": {"size": {"String": "L"}, "colors": {"Set": {"String": ["black", "white"]}}, "max_price_cents": {"Int": 4000}, "agents": {"Set": {"String": ["6YqbznDofanj9iShu3oWBb9PUQk9qPhKAenguN2j2xYr"]}}}}`},
		{"mandate", "../docs/examples/mandate.policy",
			`{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["navy"]}}, "max_price_cents": {"Int": 3000}, "budget_cents": {"Int": 10000}, "max_purchases": {"Int": 5}, "per_week": {"Int": 1}, "agents": {"Set": {"String": ["6YqbznDofanj9iShu3oWBb9PUQk9qPhKAenguN2j2xYr"]}}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, read(tc.policy))
			a, err := DecodeAttrs([]byte(tc.attrs))
			if err != nil {
				t.Fatal(err)
			}
			req := p.Requirements(a)
			var b bytes.Buffer
			for _, r := range req.Constraints {
				if r.Optional {
					b.WriteString("optional: ")
				}
				b.WriteString(r.PrettyExpr + "\n  " + string(r.State))
				if r.Residual != "" {
					b.WriteString(": " + r.Residual)
				}
				if r.InSchema {
					b.WriteString(" (in the schema)")
				}
				if r.Reason != "" {
					b.WriteString("\n  reason: " + r.Reason)
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
			if err := json.Indent(&b, req.Schema, "", "  "); err != nil {
				t.Fatal(err)
			}
			b.WriteString("\n")
			golden.Check(t, filepath.Join("testdata", "requirements", tc.name+".golden"), b.String())
			checkParsesBack(t, p, req.Constraints)
			compileSchema(t, req.Schema)
		})
	}
}

// TestRequirementsSchemaValidates checks the t-shirt's schema, for the intent of the
// docs, with a real JSON Schema validator: the evidence of the language's example
// passes, and each change that breaks a constraint the schema captures fails it.
func TestRequirementsSchemaValidates(t *testing.T) {
	p := mustCompile(t, example)
	a, err := DecodeAttrs([]byte(`{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["red", "navy"]}}, "max_price_cents": {"Int": 3000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	sch := compileSchema(t, p.Requirements(a).Schema)
	good := `{"category": "t-shirt", "size": "M", "color": "navy", "brand": "acme", "price_cents": 1999, "shipping_cents": 500, "in_stock": true}`
	tests := []struct {
		name, change string
		valid        bool
	}{
		{"the example", ``, true},
		{"a polo", `"category": "polo"`, true},
		{"no brand", `"brand": null`, true},
		{"a mug", `"category": "mug"`, false},
		{"size L", `"size": "L"`, false},
		{"black", `"color": "black"`, false},
		{"green", `"color": "green"`, false},
		{"out of stock", `"in_stock": false`, false},
		{"too cheap", `"price_cents": 99`, false},
		{"the least price", `"price_cents": 100`, true},
		{"too dear", `"price_cents": 100001`, false},
		{"a price as text", `"price_cents": "1999"`, false},
		{"no size", `"size": null`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := map[string]any{}
			if err := json.Unmarshal([]byte(good), &ev); err != nil {
				t.Fatal(err)
			}
			if tc.change != "" {
				var ch map[string]any
				if err := json.Unmarshal([]byte("{"+tc.change+"}"), &ch); err != nil {
					t.Fatal(err)
				}
				for k, v := range ch {
					if v == nil {
						delete(ev, k)
					} else {
						ev[k] = v
					}
				}
			}
			err := sch.Validate(instance(t, ev))
			if (err == nil) != tc.valid {
				t.Fatalf("valid = %v, want %v: %v", err == nil, tc.valid, err)
			}
		})
	}
}

// TestResidualProperties: for generated policies, attrs, evidence and contexts, a
// residual agrees with the policy: a constraint that holds whatever the evidence holds
// on every evidence, one that fails fails on every evidence, and a residual evaluated
// on the evidence holds, or fails with the same missing evidence, exactly when the
// constraint does. Every residual prints as text that parses back to itself, and what
// the schema captures of a constraint, a JSON Schema validator accepts exactly when
// the constraint holds, on evidence of the schema's types.
func TestResidualProperties(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	counts := map[ResidualState]int{}
	captured := 0
	for seed := uint64(0); seed < uint64(n); seed++ {
		g := newGen(seed)
		src := g.source()
		r := rand.New(rand.NewPCG(seed, 3))
		if seed%3 == 2 {
			src = g.mandate(r, src)
		}
		p, err := Compile(src)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		// A policy read back from its bytecode, as a server that did not compile it
		// has it, has no positions in its tree: its requirements are the same.
		d, err := Decode(p.Bytecode())
		if err != nil {
			t.Fatal(err)
		}
		for range 8 {
			a, _ := g.inputs()
			req := p.Requirements(a)
			if dr := d.Requirements(a); !reflect.DeepEqual(publicResiduals(dr), publicResiduals(req)) || !bytes.Equal(dr.Schema, req.Schema) {
				t.Fatalf("seed %d: the decoded policy's requirements differ:\n%+v\n%+v", seed, dr.Constraints, req.Constraints)
			}
			checkParsesBack(t, p, req.Constraints)
			schemas := constraintSchemas(t, p, req.Constraints)
			for _, res := range req.Constraints {
				counts[res.State]++
				if res.InSchema && res.open {
					captured++
				}
			}
			for range 25 {
				_, ev := g.inputs()
				c := g.context(r)
				fails := map[int]Failure{}
				for _, f := range p.EvaluateIn(a, ev, c) {
					fails[f.Index] = f
				}
				for _, res := range req.Constraints {
					f, failed := fails[res.Index]
					switch {
					case res.State == ResidualHolds && failed:
						t.Fatalf("seed %d: constraint %d %s holds whatever the evidence, but fails: %s\n%s", seed, res.Index, res.PrettyExpr, f.Reason, p.Pretty())
					case res.State == ResidualFails && !failed:
						t.Fatalf("seed %d: constraint %d %s fails whatever the evidence (%s), but holds on %v", seed, res.Index, res.PrettyExpr, res.Reason, ev)
					case res.State == ResidualFails && res.x == nil && f.Reason != res.Reason:
						t.Fatalf("seed %d: constraint %d %s fails for %q, the residual says %q", seed, res.Index, res.PrettyExpr, f.Reason, res.Reason)
					}
					if res.x == nil {
						continue
					}
					holds, missing := evalResidual(p, a, ev, c, res.x)
					if holds == failed || !slices.Equal(missing, f.MissingEvidence) {
						t.Fatalf("seed %d: constraint %d %s\nresidual %s holds %v (missing %v), the constraint %v (missing %v, %s)\nevidence %v\n%s",
							seed, res.Index, res.PrettyExpr, res.Residual, holds, missing, !failed, f.MissingEvidence, f.Reason, ev, p.Pretty())
					}
					if sch, ok := schemas[res.Index]; ok && wellTyped(p, ev) {
						err := sch.Validate(instance(t, ev))
						if (err == nil) != holds {
							t.Fatalf("seed %d: constraint %d residual %s holds %v, its schema says %v\nevidence %v", seed, res.Index, res.Residual, holds, err, ev)
						}
					}
				}
			}
		}
	}
	t.Logf("residuals: %v; open ones the schema captures: %d", counts, captured)
	if counts[ResidualHolds] == 0 || counts[ResidualFails] == 0 || counts[ResidualOpen] == 0 || captured == 0 {
		t.Fatalf("the generated cases leave a state out: %v, %d captured", counts, captured)
	}
}

// publicResiduals are the residuals without their trees.
func publicResiduals(r Requirements) []Residual {
	out := slices.Clone(r.Constraints)
	for i := range out {
		out[i].x = nil
	}
	return out
}

// evalResidual evaluates a residual on the evidence and the context as a constraint
// is: whether it holds, and the evidence field whose absence or type stopped it.
func evalResidual(p *Policy, a Attrs, ev map[string]any, c Context, x expr) (bool, []string) {
	fr := &frame{stack: make([]Value, p.maxStack), params: make([]Value, len(p.params)), ev: make([]Value, len(p.evidence)), ctx: make([]Value, numCtx)}
	p.loadParams(fr.params, a)
	p.loadEvidence(fr.ev, ev)
	p.loadContext(fr, c)
	ex := &explainer{p: p, fr: fr, attrs: a, evidence: ev}
	v, fault := ex.eval(x)
	if fault != "" {
		return false, ex.missing
	}
	return v.t == TypeBool && v.n != 0, nil
}

// checkParsesBack compiles each residual as the one constraint of the policy's own
// parts and declarations, and checks that it prints as it did.
func checkParsesBack(t *testing.T, p *Policy, rs []Residual) {
	t.Helper()
	head, _, ok := strings.Cut(p.Pretty(), "\nrequires {\n")
	if !ok {
		t.Fatalf("no requires block in\n%s", p.Pretty())
	}
	for _, r := range rs {
		if r.Residual == "" {
			continue
		}
		src := head + "\nrequires {\n  " + r.Residual + ";\n}\n"
		q, err := Compile(src)
		if err != nil {
			t.Fatalf("residual %s of %s does not compile: %v\n%s", r.Residual, r.PrettyExpr, err, src)
		}
		if got := q.cons[0].pretty; got != r.Residual {
			t.Fatalf("residual %s prints back as %s", r.Residual, got)
		}
	}
}

// constraintSchemas are, for each constraint the schema captures, a schema of what it
// alone requires: the schema of the requirements of that one residual.
func constraintSchemas(t *testing.T, p *Policy, rs []Residual) map[int]*jsonschema.Schema {
	t.Helper()
	out := map[int]*jsonschema.Schema{}
	for _, r := range rs {
		if !r.InSchema || !r.open {
			continue
		}
		one := []Residual{r}
		one[0].InSchema = false
		out[r.Index] = compileSchema(t, p.schema(one))
	}
	return out
}

// wellTyped reports whether every evidence field present has a value of the type the
// policy reads it as: the schema says so of every field, the policy only of those a
// constraint reads.
func wellTyped(p *Policy, ev map[string]any) bool {
	for _, f := range p.evidence {
		if raw, ok := ev[f.Name]; ok {
			if v, _ := convert(raw, f.Type, false); !v.t.isValue() {
				return false
			}
		}
	}
	return true
}

func compileSchema(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("requirements.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("requirements.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v\n%s", err, schema)
	}
	return sch
}

// instance is the evidence as the validator reads JSON. The generator's empty sets are
// nil slices, which would marshal as null.
func instance(t *testing.T, ev map[string]any) any {
	t.Helper()
	m := map[string]any{}
	for k, v := range ev {
		if s, ok := v.([]any); ok && s == nil {
			v = []any{}
		}
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestResidualLiteralBudget: a parameter read many times is written as its value until
// the literals' budget is spent, and stays named after, so that the requirements of an
// intent with a large set stay within the budget beside the policy's own text, and
// still agree with the policy.
func TestResidualLiteralBudget(t *testing.T) {
	var src strings.Builder
	src.WriteString("name big\nparameters { s: set<string> }\nevidence { x: string }\nrequires {\n")
	for range 40 {
		src.WriteString("  evidence.x in parameters.s or evidence.x == \"a\";\n")
	}
	src.WriteString("}\n")
	p := mustCompile(t, src.String())
	elems := make([]string, 1000)
	for i := range elems {
		elems[i] = fmt.Sprintf("element-%04d", i)
	}
	a := Attrs{"s": StringSetValue(elems...)}
	req := p.Requirements(a)
	total, named := 0, 0
	for _, r := range req.Constraints {
		total += len(r.Residual)
		if strings.Contains(r.Residual, "parameters.s") {
			named++
		}
	}
	if total > MaxResidualLiteralBytes+len(p.Pretty()) || named == 0 || named == len(req.Constraints) {
		t.Fatalf("residuals of %d bytes, %d of %d naming the parameter", total, named, len(req.Constraints))
	}
	checkParsesBack(t, p, req.Constraints)
	for _, ev := range []map[string]any{{"x": "element-0999"}, {"x": "a"}, {"x": "b"}, {}} {
		fails := map[int]bool{}
		for _, f := range p.Evaluate(a, ev) {
			fails[f.Index] = true
		}
		for _, r := range req.Constraints {
			if holds, _ := evalResidual(p, a, ev, Context{}, r.x); holds == fails[r.Index] {
				t.Fatalf("constraint %d on %v: residual %.80s holds %v", r.Index, ev, r.Residual, holds)
			}
		}
	}
}
