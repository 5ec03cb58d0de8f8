package evidence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// named is a fake extractor that reports its name as evidence, so that a test can
// see which one the router chose.
func named(name string) Extractor {
	return ExtractorFunc(func(ctx context.Context, req Request) (Evidence, error) {
		return Evidence{"by": name}, nil
	})
}

func TestRouterChoose(t *testing.T) {
	extractors := map[string]Extractor{"catalog": named("catalog"), "web": named("web"), "http": named("http"), "partner": named("partner")}
	cfg := RouterConfig{
		Rules: []Rule{
			{Scheme: "sku", Extractor: "catalog"},
			{Prefix: "https://shop.example/products/", Extractor: "catalog"},
			{Host: "*.partner.example", Extractor: "partner"},
			{Scheme: "https", Host: "Partner.Example", Extractor: "http"},
			{Scheme: "http", Extractor: "web"},
			{Scheme: "https", Extractor: "web"},
		},
		Default: "http",
	}
	r, err := NewRouter(cfg, extractors)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		solution, policyNames string
		want                  string
		wantKind              Kind
	}{
		{solution: "sku:TS-NAVY-M", want: "catalog"},
		{solution: "SKU:TS-NAVY-M", want: "catalog"},
		{solution: "https://shop.example/products/tshirt-navy-m", want: "catalog"},
		{solution: "https://shop.example/collections/tees", want: "web"},
		{solution: "https://eu.partner.example/p/1", want: "partner"},
		{solution: "https://partner.example:8443/p/1", want: "http"},
		{solution: "http://partner.example/p/1", want: "web"}, // the host rule asks for https
		{solution: "https://notpartner.example/p/1", want: "web"},
		{solution: "ean:0850012345671", want: "http"},
		{solution: "%zz not a URL", want: "http"},
		{solution: "https://shop.example/products/x", policyNames: "web", want: "web"},
		{solution: "sku:TS-NAVY-M", policyNames: "scraper", wantKind: KindNoExtractor},
	}
	for _, tt := range tests {
		t.Run(tt.solution+"/"+tt.policyNames, func(t *testing.T) {
			got, err := r.Choose(tt.solution, tt.policyNames)
			if tt.wantKind != "" {
				if KindOf(err) != tt.wantKind {
					t.Fatalf("Choose = %q, %v; want kind %q", got, err, tt.wantKind)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Choose = %q, %v; want %q", got, err, tt.want)
			}
			ev, err := r.Extract(context.Background(), Request{Solution: tt.solution, Extractor: tt.policyNames, Attributes: map[string]Attribute{"by": {Type: TypeString}}})
			if err != nil || ev["by"] != tt.want {
				t.Fatalf("Extract = %v, %v; want evidence from %q", ev, err, tt.want)
			}
		})
	}
}

func TestRouterNoDefault(t *testing.T) {
	r, err := NewRouter(RouterConfig{Rules: []Rule{{Scheme: "sku", Extractor: "catalog"}}}, map[string]Extractor{"catalog": DefaultCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Extract(context.Background(), Request{Solution: "https://elsewhere.example/p"})
	if KindOf(err) != KindNoExtractor || !strings.Contains(err.Error(), "no extractor is configured") {
		t.Fatalf("err = %v, want no extractor", err)
	}
}

func TestNewRouterRefuses(t *testing.T) {
	ex := map[string]Extractor{"catalog": DefaultCatalog()}
	tests := []struct {
		name       string
		cfg        RouterConfig
		extractors map[string]Extractor
		wantErr    string
	}{
		{name: "unknown default", cfg: RouterConfig{Default: "web"}, extractors: ex, wantErr: `default: unknown extractor "web" (have "catalog")`},
		{name: "unknown in a rule", cfg: RouterConfig{Rules: []Rule{{Scheme: "sku", Extractor: "db"}}}, extractors: ex, wantErr: `rule 0: unknown extractor "db"`},
		{name: "rule without condition", cfg: RouterConfig{Rules: []Rule{{Extractor: "catalog"}}}, extractors: ex, wantErr: "rule 0: no condition"},
		{name: "inner wildcard", cfg: RouterConfig{Rules: []Rule{{Host: "shop.*.example", Extractor: "catalog"}}}, extractors: ex, wantErr: `only a leading "*."`},
		{name: "nil extractor", cfg: RouterConfig{}, extractors: map[string]Extractor{"x": nil}, wantErr: `extractor "x"`},
		{name: "unnamed extractor", cfg: RouterConfig{}, extractors: map[string]Extractor{"": DefaultCatalog()}, wantErr: `extractor ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRouter(tt.cfg, tt.extractors)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRouterChecksTypes(t *testing.T) {
	source := ExtractorFunc(func(ctx context.Context, req Request) (Evidence, error) {
		return Evidence{"price_cents": "19.99", "color": "navy"}, nil
	})
	r, err := NewRouter(RouterConfig{Default: "shop"}, map[string]Extractor{"shop": source})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("wrong type names the field and the extractor", func(t *testing.T) {
		_, err := r.Extract(context.Background(), Request{Solution: "x", Attributes: map[string]Attribute{"price_cents": {Type: TypeInteger}}})
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindWrongType || e.Field != "price_cents" || e.Extractor != "shop" {
			t.Fatalf("err = %#v", err)
		}
		if want := `shop: evidence field "price_cents": want an integer, got the string "19.99"`; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
	})
	t.Run("unasked fields dropped", func(t *testing.T) {
		ev, err := r.Extract(context.Background(), Request{Solution: "x", Attributes: map[string]Attribute{"color": {Type: TypeString}, "size": {Type: TypeString}}})
		if err != nil || !reflect.DeepEqual(ev, Evidence{"color": "navy"}) {
			t.Fatalf("Extract = %v, %v; want only color (size absent, not invented)", ev, err)
		}
	})
}

func TestRouterCatalogEndToEnd(t *testing.T) {
	r, err := NewRouter(RouterConfig{Default: "catalog"}, map[string]Extractor{"catalog": DefaultCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := r.Extract(context.Background(), Request{Solution: "sku:TS-NAVY-M", Attributes: demoSchema})
	if err != nil {
		t.Fatal(err)
	}
	want := Evidence{"category": "t-shirt", "size": "M", "color": "navy", "brand": "Northwind",
		"price_cents": n("1999"), "shipping_cents": n("499"), "in_stock": true}
	if !reflect.DeepEqual(ev, want) {
		t.Errorf("evidence = %v, want %v", ev, want)
	}
	_, err = r.Extract(context.Background(), Request{Solution: "sku:NOPE", Attributes: demoSchema})
	if KindOf(err) != KindNotFound || err.Error() != `catalog: solution "sku:NOPE" is not in the catalog` {
		t.Errorf("err = %v", err)
	}
}

func TestRouterErrors(t *testing.T) {
	slow := ExtractorFunc(func(ctx context.Context, req Request) (Evidence, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	plain := ExtractorFunc(func(ctx context.Context, req Request) (Evidence, error) {
		return nil, errors.New("database is locked")
	})
	bare := ExtractorFunc(func(ctx context.Context, req Request) (Evidence, error) {
		return nil, &Error{Kind: KindNotFound, Reason: "no such product"}
	})
	r, err := NewRouter(RouterConfig{
		Rules:   []Rule{{Prefix: "plain:", Extractor: "plain"}, {Prefix: "bare:", Extractor: "bare"}},
		Default: "slow",
		Timeout: Duration(50 * time.Millisecond),
	}, map[string]Extractor{"slow": slow, "plain": plain, "bare": bare})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		solution string
		wantKind Kind
		wantMsg  string
	}{
		{"slow:x", KindTimeout, "slow: extraction: no answer within the time limit (50ms)"},
		{"plain:x", KindFailed, "plain: database is locked"},
		{"bare:x", KindNotFound, "bare: no such product"},
	}
	for _, tt := range tests {
		t.Run(tt.solution, func(t *testing.T) {
			_, err := r.Extract(context.Background(), Request{Solution: tt.solution})
			if KindOf(err) != tt.wantKind || err.Error() != tt.wantMsg {
				t.Fatalf("err = %q (kind %q), want %q (kind %q)", err, KindOf(err), tt.wantMsg, tt.wantKind)
			}
		})
	}
}

func TestLoadRouterConfig(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file string
		want       RouterConfig
		wantErr    string
	}{
		{
			name: "full",
			file: `{
  "rules": [
    {"scheme": "sku", "extractor": "catalog"},
    {"host": "*.partner.example", "extractor": "http"},
    {"prefix": "https://shop.example/products/", "extractor": "catalog"}
  ],
  "default": "web",
  "timeout": "5s"
}`,
			want: RouterConfig{
				Rules: []Rule{
					{Scheme: "sku", Extractor: "catalog"},
					{Host: "*.partner.example", Extractor: "http"},
					{Prefix: "https://shop.example/products/", Extractor: "catalog"},
				},
				Default: "web",
				Timeout: Duration(5 * time.Second),
			},
		},
		{name: "empty object", file: `{}`, want: RouterConfig{}},
		{name: "misspelt key", file: `{"defualt": "web"}`, wantErr: `unknown field "defualt"`},
		{name: "misspelt rule key", file: `{"rules": [{"hots": "x", "extractor": "web"}]}`, wantErr: `unknown field "hots"`},
		{name: "bad duration", file: `{"timeout": 10}`, wantErr: "duration string"},
		{name: "negative duration", file: `{"timeout": "-1s"}`, wantErr: "negative"},
		{name: "trailing data", file: `{} {}`, wantErr: "data after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadRouterConfig(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want %q and the path", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("LoadRouterConfig = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if _, err := LoadRouterConfig(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file was accepted")
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := Duration(1500 * time.Millisecond).MarshalJSON()
	if err != nil || string(b) != `"1.5s"` {
		t.Fatalf("MarshalJSON = %s, %v", b, err)
	}
	var d Duration
	if err := d.UnmarshalJSON(b); err != nil || d != Duration(1500*time.Millisecond) {
		t.Fatalf("UnmarshalJSON = %v, %v", d, err)
	}
}
