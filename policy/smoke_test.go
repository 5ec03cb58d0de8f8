package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

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

func TestSmoke(t *testing.T) {
	p, err := Compile(example)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(p.ID())
	t.Log(p.Pretty())
	q, err := Decode(p.Bytecode())
	if err != nil {
		t.Fatal(err)
	}
	if q.Pretty() != p.Pretty() {
		t.Fatal("pretty differs")
	}
	r, err := Compile(p.Pretty())
	if err != nil || r.ID() != p.ID() {
		t.Fatal(err, r)
	}
	a, err := DecodeAttrs([]byte(`{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","red"]}},"max_price_cents":{"Int":3000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	d := json.NewDecoder(strings.NewReader(`{"category":"t-shirt","size":"M","color":"black","brand":"x","price_cents":2999,"shipping_cents":500}`))
	d.UseNumber()
	d.Decode(&ev)
	for _, f := range p.Evaluate(a, ev) {
		t.Logf("%+v", f)
	}
}
