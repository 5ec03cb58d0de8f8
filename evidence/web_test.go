package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readPage(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "pages", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func n(s string) json.Number { return json.Number(s) }

func assertEvidence(t *testing.T, got, want Evidence) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("field %q missing, want %#v", k, w)
		} else if !reflect.DeepEqual(g, w) {
			t.Errorf("field %q = %#v, want %#v", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %q = %#v", k, g)
		}
	}
}

// pageCase is a page of testdata as served from url with contentType, and the
// evidence ParsePage makes of it, or the kind of its error and words of its reason.
type pageCase struct {
	name, page, contentType, url string
	want                         Evidence
	wantKind                     Kind
	wantInReason                 string
}

// pageCases are the pages TestParsePage reads: each way of marking up a product, and
// pages that hold none.
var pageCases = []pageCase{
	{
		name: "JSON-LD with two offers: the first in stock wins over the cheaper sold-out one",
		page: "jsonld-offers.html", url: "https://shop.example/products/classic-crew-tee",
		want: Evidence{
			"name":         "Northwind Classic Crew T-Shirt",
			"description":  "Our everyday crew neck in 180 g/m² combed cotton. Pre-shrunk, side-seamed, made to last.",
			"brand":        "Northwind",
			"color":        "Navy",
			"size":         "M",
			"material":     "Cotton",
			"sku":          "TS-NAVY-M",
			"gtin":         "0850012340012",
			"category":     "Apparel & Accessories > Clothing > Shirts & Tops > T-Shirts",
			"url":          "https://shop.example/products/classic-crew-tee",
			"image":        "https://cdn.shop.example/files/tee-navy.jpg?v=1712",
			"price_cents":  n("1999"),
			"currency":     "USD",
			"availability": "InStock",
			"in_stock":     true,
		},
	},
	{
		name: "JSON-LD @graph beside a Product block, price in a PriceSpecification, objects for brand, size, category, image",
		page: "jsonld-graph.html", url: "https://fairway.example/product/pique-polo/",
		want: Evidence{
			"name":         "Fairway Pique Polo",
			"description":  "A breathable cotton pique polo with a three-button placket.",
			"image":        "https://fairway.example/wp-content/uploads/polo-white.jpg",
			"sku":          "PO-WHITE-M",
			"mpn":          "FW-PQ-100",
			"gtin":         "9501101530003",
			"brand":        "Fairway",
			"color":        "White",
			"size":         "M",
			"material":     "Cotton pique",
			"category":     "Polo shirts",
			"url":          "https://fairway.example/product/pique-polo/",
			"price_cents":  n("2450"),
			"currency":     "GBP",
			"availability": "InStock",
			"in_stock":     true,
		},
	},
	{
		name: "microdata with nested brand and offer, related product ignored",
		page: "microdata.html", url: "https://kitchen.example/products/cast-iron-skillet-10in",
		want: Evidence{
			"name":         "Ironhearth 10-inch Cast Iron Skillet",
			"image":        "https://kitchen.example/images/skillet-10.jpg",
			"brand":        "Ironhearth",
			"material":     "Cast iron",
			"color":        "Black",
			"sku":          "KT-SKILLET-10",
			"gtin":         "0850012345671",
			"description":  "Pre-seasoned with vegetable oil and ready to use. Works on gas, electric, induction and campfire.",
			"price_cents":  n("3495"),
			"currency":     "USD",
			"availability": "InStock",
			"in_stock":     true,
		},
	},
	{
		name: "OpenGraph product tags only, thousands separator, lower-case currency",
		page: "opengraph.html", url: "https://audio.example/p/sonique-pro",
		want: Evidence{
			"name":         "Sonique Pro Wireless Earbuds",
			"description":  "Active noise cancelling, 30 hours with the case.",
			"url":          "https://audio.example/p/sonique-pro",
			"image":        "https://audio.example/media/sonique-pro-white.png",
			"brand":        "Sonique",
			"color":        "White",
			"category":     "Electronics > Audio > Headphones",
			"sku":          "EL-EARBUDS-PRO",
			"gtin":         "0850098765432",
			"price_cents":  n("129900"),
			"currency":     "USD",
			"availability": "InStock",
			"in_stock":     true,
		},
	},
	{
		name: "a malformed JSON-LD block beside a good one (in a comment, numeric price)",
		page: "malformed-jsonld.html", url: "https://volt.example/charger-65",
		want: Evidence{
			"name":         "Voltline 65 W USB-C GaN Charger",
			"brand":        "Voltline",
			"sku":          "EL-CHARGER-65",
			"gtin":         "850055501234",
			"color":        "White",
			"price_cents":  n("3999"),
			"currency":     "USD",
			"availability": "InStock",
			"in_stock":     true,
		},
	},
	{
		name: "an AggregateOffer range gives no price",
		page: "aggregate-offer.html", url: "https://harbor.example/tee",
		want: Evidence{
			"name":         "Harbor & Pine Organic Heavyweight Tee",
			"brand":        "Harbor & Pine",
			"category":     "t-shirt",
			"currency":     "USD",
			"availability": "LimitedAvailability",
			"in_stock":     true,
		},
	},
	{
		name: "ProductGroup: the variant whose url is the page",
		page: "product-group.html", url: "https://shop.example/products/hoodie?variant=HD-NAVY-M",
		want: Evidence{
			"name":         "Northwind Pullover Hoodie, Navy, M",
			"brand":        "Northwind",
			"material":     "Cotton fleece",
			"sku":          "HD-NAVY-M",
			"color":        "Navy",
			"size":         "M",
			"url":          "https://shop.example/products/hoodie?variant=HD-NAVY-M",
			"price_cents":  n("4499"),
			"currency":     "USD",
			"availability": "InStock",
			"in_stock":     true,
		},
	},
	{
		name: "ProductGroup without a variant for the page",
		page: "product-group.html", url: "https://shop.example/products/hoodie",
		wantKind: KindNoProduct,
	},
	{
		name: "ISO-8859-1 page declared by meta http-equiv",
		page: "latin1.html", url: "https://cafe.example/p/1",
		want: Evidence{
			"name":         "Cafetière à piston Ember, 8 tasses",
			"material":     "Verre borosilicaté",
			"price_cents":  n("2999"),
			"currency":     "EUR",
			"availability": "InStock",
			"in_stock":     true,
		},
	},
	{
		name: "ISO-8859-1 page, charset from the Content-Type header",
		page: "latin1.html", url: "https://cafe.example/p/1", contentType: "text/html; charset=ISO-8859-1",
		want: Evidence{
			"name":         "Cafetière à piston Ember, 8 tasses",
			"material":     "Verre borosilicaté",
			"price_cents":  n("2999"),
			"currency":     "EUR",
			"availability": "InStock",
			"in_stock":     true,
		},
	},
	{
		name: "an article is not a product",
		page: "no-product.html", url: "https://journal.example/season", wantKind: KindNoProduct,
	},
	{
		name: "only a malformed block: the reason says so",
		page: "only-malformed.html", url: "https://clearview.example/27", wantKind: KindNoProduct,
		wantInReason: "JSON-LD block 1",
	},
}

func TestParsePage(t *testing.T) {
	for _, tt := range pageCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePage(readPage(t, tt.page), tt.contentType, tt.url)
			if tt.wantKind != "" {
				if KindOf(err) != tt.wantKind {
					t.Fatalf("err = %v (kind %q), want kind %q; evidence %v", err, KindOf(err), tt.wantKind, got)
				}
				if !strings.Contains(err.Error(), tt.wantInReason) {
					t.Errorf("err = %q, want it to contain %q", err, tt.wantInReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertEvidence(t, got, tt.want)
		})
	}
}

func TestAvailability(t *testing.T) {
	tests := []struct {
		in, name string
		inStock  *bool
	}{
		{"https://schema.org/InStock", "InStock", &yes},
		{"http://schema.org/OutOfStock", "OutOfStock", &no},
		{"schema:PreOrder", "PreOrder", &no},
		{"in stock", "InStock", &yes},
		{"out of stock", "OutOfStock", &no},
		{"available for order", "BackOrder", &no},
		{"in_stock", "InStock", &yes},
		{"LimitedAvailability", "LimitedAvailability", &yes},
		{"Ask in store", "Ask in store", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			name, inStock := availability(tt.in)
			if name != tt.name || (inStock == nil) != (tt.inStock == nil) || (inStock != nil && *inStock != *tt.inStock) {
				t.Errorf("availability(%q) = %q, %v; want %q, %v", tt.in, name, inStock, tt.name, tt.inStock)
			}
		})
	}
}

// webServer serves the fixture pages, plus routes that misbehave.
func webServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/p/")
		data, err := os.ReadFile(filepath.Join("testdata", "pages", name))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if name == "latin1.html" {
			w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		}
		w.Write(data)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		// A real page, with 3 MiB of markup after the product data: over the
		// limit, so refused even though the product is in the first bytes.
		page := readPage(t, "jsonld-offers.html")
		w.Header().Set("Content-Type", "text/html")
		w.Write(bytes.Replace(page, []byte("</body>"), []byte(strings.Repeat("<div class=\"tile\">recommended</div>\n", 3<<20/36)+"</body>"), 1))
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream down", http.StatusBadGateway)
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n"))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/p/jsonld-offers.html", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/to-ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://files.example/p", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestWebExtract(t *testing.T) {
	srv := webServer(t)
	// The time limit is generous so that a loaded machine cannot turn another failure into
	// a time-out; the slow case has a short limit of its own.
	web := NewWeb(WithPrivateAddresses(true), WithTimeout(30*time.Second))
	impatient := NewWeb(WithPrivateAddresses(true), WithTimeout(300*time.Millisecond))
	tests := []struct {
		name, path string
		wantKind   Kind
		wantField  string // a field the evidence must have, for successes
		wantValue  any
	}{
		{name: "product page", path: "/p/jsonld-offers.html", wantField: "price_cents", wantValue: n("1999")},
		{name: "charset from the header", path: "/p/latin1.html", wantField: "material", wantValue: "Verre borosilicaté"},
		{name: "redirect on the same server", path: "/moved", wantField: "sku", wantValue: "TS-NAVY-M"},
		{name: "no product", path: "/p/no-product.html", wantKind: KindNoProduct},
		{name: "missing page", path: "/p/nothing.html", wantKind: KindNotFound},
		{name: "gone", path: "/gone", wantKind: KindNotFound},
		{name: "server error", path: "/error", wantKind: KindBadStatus},
		{name: "not HTML", path: "/image", wantKind: KindBadBody},
		{name: "huge page", path: "/huge", wantKind: KindTooLarge},
		{name: "slow server", path: "/slow", wantKind: KindTimeout},
		{name: "redirect to ftp", path: "/to-ftp", wantKind: KindRedirect},
		{name: "redirect loop", path: "/loop", wantKind: KindRedirect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := web
			if tt.wantKind == KindTimeout {
				x = impatient
			}
			ev, err := x.Extract(context.Background(), Request{Solution: srv.URL + tt.path})
			if tt.wantKind != "" {
				if KindOf(err) != tt.wantKind {
					t.Fatalf("err = %v (kind %q), want kind %q", err, KindOf(err), tt.wantKind)
				}
				if !strings.HasPrefix(err.Error(), "web: ") {
					t.Errorf("err = %q, want it to name the extractor", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ev[tt.wantField]; !reflect.DeepEqual(got, tt.wantValue) {
				t.Errorf("%s = %#v, want %#v", tt.wantField, got, tt.wantValue)
			}
		})
	}
}

func TestWebRefusesSolutions(t *testing.T) {
	srv := webServer(t)
	tests := []struct {
		name, solution string
		wantKind       Kind
	}{
		{"variant id", "sku:TS-NAVY-M", KindUnsupported},
		{"ftp", "ftp://files.example/tee", KindUnsupported},
		{"file", "file:///etc/passwd", KindUnsupported},
		{"no host", "https:///products/x", KindUnsupported},
		{"credentials", "https://user:pw@shop.example/p", KindUnsupported},
		// The default extractor refuses loopback: a proposal must not make the
		// server read its own network.
		{"loopback", srv.URL + "/p/jsonld-offers.html", KindUnsupported},
		{"metadata address", "http://169.254.169.254/latest/meta-data/", KindUnsupported},
	}
	web := NewWeb(WithTimeout(2 * time.Second))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := web.Extract(context.Background(), Request{Solution: tt.solution})
			if KindOf(err) != tt.wantKind {
				t.Fatalf("err = %v (kind %q), want kind %q", err, KindOf(err), tt.wantKind)
			}
		})
	}
}

func TestWebHonoursContext(t *testing.T) {
	srv := webServer(t)
	web := NewWeb(WithPrivateAddresses(true)) // 10 s of its own
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := web.Extract(ctx, Request{Solution: srv.URL + "/slow"})
		if KindOf(err) != KindTimeout {
			t.Fatalf("err = %v, want a time-out", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %v; the caller's deadline was not honoured", d)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := web.Extract(ctx, Request{Solution: srv.URL + "/slow"})
		if KindOf(err) != KindCanceled || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v (kind %q), want a cancellation that wraps context.Canceled", err, KindOf(err))
		}
	})
}

func FuzzWebParse(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "pages"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readPage(f, e.Name()), "")
	}
	f.Add([]byte(`<div itemscope itemtype="https://schema.org/Product"><span itemprop="offers" itemscope itemtype="https://schema.org/AggregateOffer"><meta itemprop="lowPrice" content="1"><meta itemprop="highPrice" content="1.00"></span></div>`), "text/html")
	f.Add([]byte(`<script type="application/ld+json">[[[{"@type":"ProductGroup","hasVariant":{"@type":"Product","url":""}}]]]</script>`), "text/html; charset=windows-1252")
	f.Add([]byte(`<meta property="product:price:amount" content="99999999999999999999">`), "")
	f.Fuzz(func(t *testing.T, page []byte, contentType string) {
		ev, err := ParsePage(page, contentType, "https://shop.example/products/x")
		if err != nil {
			if KindOf(err) == "" {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		// Whatever the page, the evidence must pass the type check of its own
		// documented fields and encode as JSON.
		attrs := map[string]Attribute{}
		for k, v := range ev {
			switch v.(type) {
			case string:
				attrs[k] = Attribute{Type: TypeString}
			case bool:
				attrs[k] = Attribute{Type: TypeBoolean}
			case json.Number:
				attrs[k] = Attribute{Type: TypeInteger}
			default:
				t.Fatalf("field %q has a value of type %T", k, v)
			}
		}
		if _, err := Check(ev, attrs); err != nil {
			t.Fatalf("the page's own evidence fails the type check: %v", err)
		}
		if _, err := json.Marshal(ev); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkParsePage(b *testing.B) {
	page := readPage(b, "jsonld-offers.html")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParsePage(page, "text/html; charset=utf-8", "https://shop.example/products/classic-crew-tee"); err != nil {
			b.Fatal(err)
		}
	}
}
