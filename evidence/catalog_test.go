package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// demoSchema is the evidence block of the demo policy (docs/evidence.md).
var demoSchema = map[string]Attribute{
	"category":       {Type: TypeString},
	"size":           {Type: TypeString},
	"color":          {Type: TypeString},
	"brand":          {Type: TypeString},
	"price_cents":    {Type: TypeInteger},
	"shipping_cents": {Type: TypeInteger},
	"in_stock":       {Type: TypeBoolean},
}

// demoFailures evaluates the demo policy's constraints by hand for the intent
// {size: M, colors: {navy, white}, max_price_cents: 3000}, and names those that fail.
// It stands in for the policy package, which this package may not use in tests.
func demoFailures(t *testing.T, ev Evidence) []string {
	t.Helper()
	num := func(f string) int64 {
		var v int64
		if _, err := fmt.Sscan(string(ev[f].(json.Number)), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var failed []string
	if c := ev["category"]; c != "t-shirt" && c != "polo" {
		failed = append(failed, "category")
	}
	if ev["size"] != "M" {
		failed = append(failed, "size")
	}
	if c := ev["color"]; c != "navy" && c != "white" {
		failed = append(failed, "color")
	}
	if ev["color"] == "black" {
		failed = append(failed, "black")
	}
	if num("price_cents")+num("shipping_cents") > 3000 {
		failed = append(failed, "budget")
	}
	if ev["in_stock"] != true {
		failed = append(failed, "stock")
	}
	return failed
}

func TestDemoCatalogAgainstDemoPolicy(t *testing.T) {
	c := DefaultCatalog()
	if c.Len() < 24 {
		t.Fatalf("the demo catalog has %d solutions, want a few dozen", c.Len())
	}
	tests := []struct {
		solution string
		failures string // the constraints that fail, in demoFailures' order
	}{
		{"https://shop.example/products/tshirt-navy-m", ""},
		{"sku:TS-NAVY-M", ""},
		{"https://shop.example/products/polo-navy-m", ""},        // exactly at the budget
		{"https://shop.example/products/supima-tee-white-m", ""}, // free shipping
		{"https://shop.example/products/tshirt-navy-l", "size"},
		{"sku:TS-NAVY-S", "size"},
		{"https://shop.example/products/tshirt-black-m", "color black"},
		{"https://shop.example/products/premium-tee-navy-m", "budget"},
		{"https://shop.example/products/polo-white-m", "budget"}, // one offer 49 cents over
		{"https://shop.example/products/tshirt-white-m", "stock"},
		{"https://shop.example/products/hoodie-navy-m", "category budget"},
		{"https://shop.example/products/tshirt-red-m", "color"},
	}
	for _, tt := range tests {
		t.Run(tt.solution, func(t *testing.T) {
			raw, err := c.Extract(context.Background(), Request{Solution: tt.solution})
			if err != nil {
				t.Fatal(err)
			}
			ev, err := Check(raw, demoSchema)
			if err != nil {
				t.Fatal(err)
			}
			if len(ev) != len(demoSchema) {
				t.Fatalf("evidence %v lacks fields of the demo schema", ev)
			}
			if got := strings.Join(demoFailures(t, ev), " "); got != tt.failures {
				t.Errorf("failing constraints = %q, want %q", got, tt.failures)
			}
		})
	}
}

func TestDemoCatalogIsConsistent(t *testing.T) {
	c := DefaultCatalog()
	for _, sol := range c.Solutions() {
		ev, _ := c.Extract(context.Background(), Request{Solution: sol})
		// Every product has the fields a shopping policy reads, with the types
		// the documentation gives.
		common := map[string]Attribute{
			"name": {Type: TypeString}, "category": {Type: TypeString}, "brand": {Type: TypeString},
			"price_cents": {Type: TypeInteger}, "shipping_cents": {Type: TypeInteger},
			"in_stock": {Type: TypeBoolean}, "currency": {Type: TypeString}, "sku": {Type: TypeString},
			"stock_quantity": {Type: TypeInteger}, "tags": {Type: TypeStringSet},
		}
		checked, err := Check(ev, common)
		if err != nil {
			t.Errorf("%s: %v", sol, err)
			continue
		}
		for f := range common {
			// The price-on-request tee has no price_cents, so that the demo shows a
			// failure of kind evidence.
			if _, ok := checked[f]; !ok && f != "tags" && (f != "price_cents" || ev["sku"] != "TEE-NO-PRICE") {
				t.Errorf("%s: no %s", sol, f)
			}
		}
		if (ev["stock_quantity"] != json.Number("0")) != ev["in_stock"] {
			t.Errorf("%s: in_stock %v disagrees with stock_quantity %v", sol, ev["in_stock"], ev["stock_quantity"])
		}
		if sku, ok := strings.CutPrefix(sol, "sku:"); ok && ev["sku"] != sku {
			t.Errorf("%s: sku field %v", sol, ev["sku"])
		}
	}
}

func TestCatalogExtract(t *testing.T) {
	c := DefaultCatalog()
	t.Run("not found", func(t *testing.T) {
		_, err := c.Extract(context.Background(), Request{Solution: "https://shop.example/products/TSHIRT-NAVY-M"})
		if KindOf(err) != KindNotFound || !strings.Contains(err.Error(), "catalog: ") {
			t.Fatalf("err = %v, want a not-found error from the catalog", err)
		}
	})
	t.Run("result is a copy", func(t *testing.T) {
		sol := "https://shop.example/products/nonstick-pan-set-3"
		ev, err := c.Extract(context.Background(), Request{Solution: sol})
		if err != nil {
			t.Fatal(err)
		}
		ev["price_cents"] = json.Number("1")
		ev["tags"].([]any)[0] = "changed"
		again, _ := c.Extract(context.Background(), Request{Solution: sol})
		if again["price_cents"] == json.Number("1") || again["tags"].([]any)[0] == "changed" {
			t.Errorf("changing a result changed the catalog: %v", again)
		}
	})
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCatalogReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.json")
	writeFile(t, path, `{"sku:A": {"price_cents": 100}}`)
	c, err := NewCatalog(path)
	if err != nil {
		t.Fatal(err)
	}
	price := func() any {
		ev, err := c.Extract(context.Background(), Request{Solution: "sku:A"})
		if err != nil {
			return err.Error()
		}
		return ev["price_cents"]
	}
	if got := price(); got != json.Number("100") {
		t.Fatalf("price = %v", got)
	}

	writeFile(t, path, `{"sku:A": {"price_cents": 200}, "sku:B": {}}`)
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := price(); got != json.Number("200") || c.Len() != 2 {
		t.Fatalf("after reload: price = %v, len %d", got, c.Len())
	}

	writeFile(t, path, `{"sku:A": {"price_cents": {"amount": 300}}}`)
	if err := c.Reload(); err == nil || !strings.Contains(err.Error(), `solution "sku:A": field "price_cents"`) {
		t.Fatalf("reload of a bad file: err = %v", err)
	}
	if got := price(); got != json.Number("200") {
		t.Fatalf("a bad reload changed the contents: price = %v", got)
	}

	os.Remove(path)
	if err := c.Reload(); err == nil {
		t.Fatal("reload of a missing file succeeded")
	}
	if got := price(); got != json.Number("200") {
		t.Fatalf("a failed reload changed the contents: price = %v", got)
	}

	if _, err := NewCatalog(path); err == nil {
		t.Fatal("NewCatalog of a missing file succeeded")
	}
	if err := DefaultCatalog().Reload(); err != nil {
		t.Fatalf("reload of the embedded catalog: %v", err)
	}
}

func TestCatalogConcurrentReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.json")
	writeFile(t, path, `{"sku:A": {"price_cents": 100}}`)
	c, err := NewCatalog(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				if _, err := c.Extract(context.Background(), Request{Solution: "sku:A"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for j := 0; j < 20; j++ {
		if err := c.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestParseCatalog(t *testing.T) {
	tests := []struct {
		name, in string
		wantLen  int
		wantErr  string
	}{
		{name: "empty catalog", in: `{}`, wantLen: 0},
		{name: "two entries", in: `{"a": {"x": 1}, "b": {"y": ["p", "q"]}}`, wantLen: 2},
		{name: "not an object", in: `[]`, wantErr: "want a JSON object of solutions"},
		{name: "null", in: `null`, wantErr: "got null"},
		{name: "entry not an object", in: `{"a": 1}`, wantErr: `solution "a": want a JSON object`},
		{name: "nested", in: `{"a": {"x": {"y": 1}}}`, wantErr: `solution "a": field "x": nested`},
		{name: "first bad entry in order", in: `{"b": 1, "a": 2}`, wantErr: `solution "a"`},
		{name: "empty solution", in: `{"": {}}`, wantErr: "empty solution"},
		{name: "trailing data", in: `{} {}`, wantErr: "data after"},
		{name: "truncated", in: `{"a": {}`, wantErr: "want a JSON object of solutions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCatalog([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseCatalog = %v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != tt.wantLen {
				t.Fatalf("ParseCatalog = %v, %v; want %d entries", got, err, tt.wantLen)
			}
		})
	}
}

func FuzzParseCatalog(f *testing.F) {
	f.Add(demoCatalog)
	f.Add([]byte(`{"a": {"x": 1, "y": [1, "2", null, true]}, "b": {}}`))
	f.Add([]byte(`{"a": {"x": {"y": 1}}}`))
	f.Add([]byte(`{"a": {"x": 1e400}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ParseCatalog(data)
		if err != nil {
			return
		}
		for sol, ev := range entries {
			if sol == "" {
				t.Fatal("an empty solution was accepted")
			}
			if err := checkFlat(ev); err != nil {
				t.Fatalf("accepted a catalog entry that is not flat: %v", err)
			}
			// What was accepted must survive a round trip unchanged.
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			again, err := decodeFlatObject(b)
			if err != nil {
				t.Fatalf("re-decoding %s: %v", b, err)
			}
			b2, _ := json.Marshal(again)
			if string(b) != string(b2) {
				t.Fatalf("round trip changed %s into %s", b, b2)
			}
		}
	})
}

func BenchmarkCatalogExtract(b *testing.B) {
	c := DefaultCatalog()
	req := Request{Solution: "https://shop.example/products/tshirt-navy-m", Attributes: demoSchema}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Extract(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRouterCatalog is what the engine pays per proposal with the catalog:
// choosing, looking up and checking the types.
func BenchmarkRouterCatalog(b *testing.B) {
	r, err := NewRouter(RouterConfig{Default: "catalog"}, map[string]Extractor{"catalog": DefaultCatalog()})
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Solution: "https://shop.example/products/tshirt-navy-m", Attributes: demoSchema}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Extract(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
