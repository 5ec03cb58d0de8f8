package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/intentd/intentd/internal/benchcpu"
	"github.com/intentd/intentd/internal/golden"
)

// bench25 is a 25-constraint policy of the kind the service runs.
const bench25 = `name bench_25
parameters {
  size: string
  colors: set<string>
  max_price_cents: int
  min_rating: int
  brands: optional set<string>
  materials: set<string>
  country: string
  max_days: int
}
evidence {
  category: string
  size: string
  color: string
  brand: string
  title: string
  material: string
  price_cents: int
  shipping_cents: int
  tax_cents: int
  rating: int
  reviews: int
  in_stock: bool
  returnable: bool
  ships_from: string
  delivery_days: int
  sku: string
}
requires {
  evidence.category in {"t-shirt", "polo", "tank-top"};
  evidence.size == parameters.size;
  evidence.color in parameters.colors;
  evidence.color not in {"black", "neon"};
  evidence.price_cents + evidence.shipping_cents <= parameters.max_price_cents;
  evidence.price_cents + evidence.shipping_cents + evidence.tax_cents <= parameters.max_price_cents * 2;
  evidence.in_stock;
  optional: evidence.brand in parameters.brands;
  100 <= evidence.price_cents <= 100000;
  evidence.rating >= parameters.min_rating;
  evidence.reviews > 10 or evidence.rating == 5;
  evidence.returnable and evidence.in_stock;
  evidence.material in parameters.materials;
  not contains(lower(evidence.title), "used");
  starts_with(evidence.sku, "SKU-");
  len(evidence.sku) <= 32;
  evidence.ships_from == parameters.country or evidence.shipping_cents == 0;
  evidence.delivery_days <= parameters.max_days;
  0 <= evidence.tax_cents < evidence.price_cents;
  evidence.brand != "knockoff";
  len(parameters.colors) >= 1;
  ends_with(evidence.sku, "-M") or ends_with(evidence.sku, "-L") || evidence.size != "M";
  upper(evidence.ships_from) in {"DE", "FR", "NL"};
  -evidence.price_cents < 0;
  subset(parameters.colors, {"red", "navy", "white", "green"});
}
`

const bench25Attrs = `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["red", "navy"]}},
  "max_price_cents": {"Int": 3000}, "min_rating": {"Int": 3}, "materials": {"Set": {"String": ["cotton", "linen"]}},
  "country": {"String": "DE"}, "max_days": {"Int": 5}}}`

const bench25Pass = `{"category": "t-shirt", "size": "M", "color": "navy", "brand": "acme", "title": "Navy cotton tee",
  "material": "cotton", "price_cents": 1999, "shipping_cents": 500, "tax_cents": 380, "rating": 4, "reviews": 120,
  "in_stock": true, "returnable": true, "ships_from": "DE", "delivery_days": 3, "sku": "SKU-1234-M"}`

const bench25Fail = `{"category": "dress", "size": "L", "color": "black", "brand": "knockoff", "title": "Used shirt",
  "material": "polyester", "price_cents": 4999, "shipping_cents": 900, "tax_cents": 950, "rating": 2, "reviews": 3,
  "in_stock": false, "returnable": false, "ships_from": "US", "delivery_days": 12, "sku": "X-1"}`

func TestBench25(t *testing.T) {
	p := mustCompile(t, bench25)
	if p.NumConstraints() != 25 {
		t.Fatalf("%d constraints", p.NumConstraints())
	}
	if f := p.Evaluate(mustAttrs(t, bench25Attrs), mustEvidence(t, bench25Pass)); f != nil {
		t.Fatalf("passing evidence fails: %+v", f)
	}
	if f := p.Evaluate(mustAttrs(t, bench25Attrs), mustEvidence(t, bench25Fail)); len(f) < 15 {
		t.Fatalf("failing evidence: only %d failures", len(f))
	}
}

func BenchmarkCompile25(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(bench25); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode25(b *testing.B) {
	code := mustCompile(b, bench25).Bytecode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(code); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluatePass(b *testing.B) {
	p := mustCompile(b, bench25)
	a, ev := mustAttrs(b, bench25Attrs), mustEvidence(b, bench25Pass)
	b.ReportAllocs()
	cpu := benchcpu.Now()
	for b.Loop() {
		if f := p.Evaluate(a, ev); f != nil {
			b.Fatal(f)
		}
	}
	benchcpu.Report(b, cpu)
}

func BenchmarkEvaluateFail(b *testing.B) {
	p := mustCompile(b, bench25)
	a, ev := mustAttrs(b, bench25Attrs), mustEvidence(b, bench25Fail)
	b.ReportAllocs()
	cpu := benchcpu.Now()
	for b.Loop() {
		if f := p.Evaluate(a, ev); f == nil {
			b.Fatal("no failures")
		}
	}
	benchcpu.Report(b, cpu)
}

// TestBench25Reasons pins the explanations of the failing evidence: they are built by
// appending into one buffer, and this says that the sentences came out as they read.
func TestBench25Reasons(t *testing.T) {
	p := mustCompile(t, bench25)
	var b strings.Builder
	for _, f := range p.Evaluate(mustAttrs(t, bench25Attrs), mustEvidence(t, bench25Fail)) {
		fmt.Fprintf(&b, "%d %s\n  %s\n", f.Index, f.PrettyExpr, f.Reason)
	}
	golden.Check(t, "testdata/explain/bench25.golden", b.String())
}

// BenchmarkCompileLongSum compiles the longest sum the source limit allows, a policy
// whose cost grew with the square of its length while each subexpression kept a copy of
// its text.
func BenchmarkCompileLongSum(b *testing.B) {
	src := longSum((MaxSourceBytes - 64) / len(" + 1"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequirements is the requirements of the language's example for the intent
// of its documentation: what GET /intents/{id}/requirements computes per call, the
// residuals, their texts and the schema.
func BenchmarkRequirements(b *testing.B) {
	p := mustCompile(b, example)
	a := mustAttrs(b, exampleAttrs)
	b.ReportAllocs()
	for b.Loop() {
		if r := p.Requirements(a); len(r.Constraints) != 8 {
			b.Fatal(r)
		}
	}
}

// BenchmarkRequirements25 is the requirements of the 25 constraints of the evaluation
// benchmarks.
func BenchmarkRequirements25(b *testing.B) {
	p := mustCompile(b, bench25)
	a := mustAttrs(b, bench25Attrs)
	b.ReportAllocs()
	for b.Loop() {
		p.Requirements(a)
	}
}
