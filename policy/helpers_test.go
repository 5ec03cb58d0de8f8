package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// example is the policy of the language's documentation.
const example = `# Buy a t-shirt: the buyer's intent fixes size, colours and budget.
name tshirt_purchase_v1

parameters {
  size: string
  colors: set<string>
  max_price_cents: int
  brands: optional set<string>
}

evidence {
  category: string
  size: string
  color: string
  brand: string
  price_cents: int
  shipping_cents: int
  in_stock: bool
}

requires {
  evidence.category in {"t-shirt", "polo"};
  evidence.size == parameters.size;
  evidence.color in parameters.colors;
  evidence.color not in {"black"};
  evidence.price_cents + evidence.shipping_cents <= parameters.max_price_cents;
  evidence.in_stock;
  optional: evidence.brand in parameters.brands;
  100 <= evidence.price_cents <= 100000;
}
`

const exampleAttrs = `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["red", "navy"]}}, "max_price_cents": {"Int": 3000}}}`

const examplePassing = `{"category": "t-shirt", "size": "M", "color": "navy", "brand": "acme", "price_cents": 1999, "shipping_cents": 500, "in_stock": true}`

func mustCompile(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Compile(src)
	if err != nil {
		t.Fatalf("Compile: %v\n%s", err, src)
	}
	return p
}

func mustAttrs(t testing.TB, s string) Attrs {
	t.Helper()
	a, err := DecodeAttrs([]byte(s))
	if err != nil {
		t.Fatalf("DecodeAttrs(%s): %v", s, err)
	}
	return a
}

// mustEvidence decodes evidence the way the service does: UseNumber.
func mustEvidence(t testing.TB, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var ev map[string]any
	if err := d.Decode(&ev); err != nil {
		t.Fatalf("evidence %s: %v", s, err)
	}
	return ev
}
