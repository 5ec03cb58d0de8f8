package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// The evidence fields the web extractor can fill, documented in docs/evidence.md.
const (
	FieldName         = "name"
	FieldBrand        = "brand"
	FieldPriceCents   = "price_cents"
	FieldCurrency     = "currency"
	FieldAvailability = "availability"
	FieldInStock      = "in_stock"
	FieldColor        = "color"
	FieldSize         = "size"
	FieldMaterial     = "material"
	FieldGTIN         = "gtin"
	FieldSKU          = "sku"
	FieldMPN          = "mpn"
	FieldCategory     = "category"
	FieldDescription  = "description"
	FieldURL          = "url"
	FieldImage        = "image"
)

// offerFields come from one offer of one source together: a price from the JSON-LD
// and a currency from the OpenGraph tags could belong to different offers.
var offerFields = []string{FieldPriceCents, FieldCurrency, FieldAvailability, FieldInStock}

// maxJSONLDDepth bounds the search for a Product inside a JSON-LD value; real pages
// nest it two or three levels deep (@graph, mainEntity, itemListElement).
const maxJSONLDDepth = 32

// ParsePage reads the product a page describes from its schema.org JSON-LD, its
// schema.org microdata and its OpenGraph product tags, in that order of trust: a
// field comes from the first source that has it, except the offer's fields (price,
// currency, availability, stock), which come together from the first source with a
// price. contentType (the response header, may be "") decides the charset with the
// page's own <meta charset>; pageURL resolves relative links and picks a variant of
// a ProductGroup. A page with no product data is a KindNoProduct error.
func ParsePage(page []byte, contentType, pageURL string) (Evidence, error) {
	if _, name, _ := charset.DetermineEncoding(page, contentType); name != "utf-8" {
		if enc, _ := charset.Lookup(name); enc != nil {
			if dec, err := enc.NewDecoder().Bytes(page); err == nil {
				page = dec
			}
		}
	}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, &Error{Kind: KindBadBody, Reason: "the page is not readable HTML: " + err.Error(), Err: err}
	}
	base, _ := url.Parse(pageURL)
	s := scan{base: base, og: map[string]string{}}
	s.walk(doc, 0)

	var sources []Evidence
	var ldErrs []string
	var products []map[string]any
	for i, block := range s.jsonLD {
		v, err := decodeJSONLD(block)
		if err != nil {
			ldErrs = append(ldErrs, fmt.Sprintf("JSON-LD block %d: %v", i+1, err))
			continue
		}
		findProducts(v, s.base, 0, &products)
	}
	if len(products) > 0 {
		sources = append(sources, productEvidence(products[0], s.base))
	}
	products = products[:0]
	for _, item := range s.items {
		findProducts(item, s.base, 0, &products)
	}
	if len(products) > 0 {
		sources = append(sources, productEvidence(products[0], s.base))
	}
	if og := openGraphEvidence(s.og, s.base); og != nil {
		sources = append(sources, og)
	}
	if len(sources) == 0 {
		reason := "the page has no schema.org Product (JSON-LD or microdata) and no OpenGraph product tags"
		if len(ldErrs) > 0 {
			reason += "; " + strings.Join(ldErrs, "; ")
		}
		return nil, &Error{Kind: KindNoProduct, Reason: reason}
	}
	return merge(sources), nil
}

func merge(sources []Evidence) Evidence {
	out := Evidence{}
	isOffer := map[string]bool{}
	for _, f := range offerFields {
		isOffer[f] = true
	}
	for _, src := range sources {
		for k, v := range src {
			if _, ok := out[k]; !ok && !isOffer[k] {
				out[k] = v
			}
		}
	}
	pick := func(has func(Evidence) bool) bool {
		for _, src := range sources {
			if has(src) {
				for _, f := range offerFields {
					if v, ok := src[f]; ok {
						out[f] = v
					}
				}
				return true
			}
		}
		return false
	}
	if !pick(func(e Evidence) bool { _, ok := e[FieldPriceCents]; return ok }) {
		pick(func(e Evidence) bool { _, ok := e[FieldAvailability]; return ok })
	}
	return out
}

// scan is one walk over the parsed page collecting the three sources.
type scan struct {
	base   *url.URL
	jsonLD []string         // the text of each <script type="application/ld+json">
	items  []map[string]any // top-level microdata items, as JSON-LD-shaped objects
	og     map[string]string
}

func (s *scan) walk(n *html.Node, scopes int) {
	if n.Type == html.ElementNode {
		switch n.DataAtom {
		case atom.Script:
			if isJSONLDType(attr(n, "type")) {
				var b strings.Builder
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					if c.Type == html.TextNode {
						b.WriteString(c.Data)
					}
				}
				s.jsonLD = append(s.jsonLD, b.String())
			}
		case atom.Meta:
			key := attr(n, "property")
			if key == "" {
				key = attr(n, "name")
			}
			key = strings.ToLower(strings.TrimSpace(key))
			if strings.HasPrefix(key, "og:") || strings.HasPrefix(key, "product:") {
				if _, seen := s.og[key]; !seen {
					s.og[key] = attr(n, "content")
				}
			}
		}
		if hasAttr(n, "itemscope") {
			// An item is top-level when it is no other item's property; an
			// itemprop outside any item is an authoring slip, read as top-level.
			if !hasAttr(n, "itemprop") || scopes == 0 {
				s.items = append(s.items, s.microItem(n))
			}
			scopes++
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		s.walk(c, scopes)
	}
}

func isJSONLDType(t string) bool {
	mt, _, err := mime.ParseMediaType(t)
	return err == nil && mt == "application/ld+json"
}

// microItem turns an itemscope element into the shape of a JSON-LD object, so that
// one reader serves both: "@type" from itemtype, each itemprop a key whose value is a
// string, a nested item, or a []any when the property repeats.
func (s *scan) microItem(n *html.Node) map[string]any {
	item := map[string]any{}
	if types := strings.Fields(attr(n, "itemtype")); len(types) > 0 {
		t := make([]any, len(types))
		for i, x := range types {
			t[i] = x
		}
		item["@type"] = t
	}
	s.microProps(n, item)
	return item
}

func (s *scan) microProps(n *html.Node, item map[string]any) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		scope := hasAttr(c, "itemscope")
		if props := strings.Fields(attr(c, "itemprop")); len(props) > 0 {
			var v any
			if scope {
				v = s.microItem(c)
			} else {
				v = s.microValue(c)
			}
			for _, p := range props {
				addProp(item, p, v)
			}
		}
		if !scope {
			s.microProps(c, item)
		}
	}
}

func addProp(item map[string]any, name string, v any) {
	old, ok := item[name]
	switch {
	case !ok:
		item[name] = v
	case isList(old):
		item[name] = append(old.([]any), v)
	default:
		item[name] = []any{old, v}
	}
}

func isList(v any) bool { _, ok := v.([]any); return ok }

// microValue is the value of a property element as the microdata rules give it,
// with one common extension: a content attribute on any element wins (shops write
// <span itemprop="price" content="19.99">$19.99</span>).
func (s *scan) microValue(n *html.Node) string {
	if v, ok := attrOK(n, "content"); ok {
		return v
	}
	switch n.DataAtom {
	case atom.Audio, atom.Embed, atom.Iframe, atom.Img, atom.Source, atom.Track, atom.Video:
		return attr(n, "src")
	case atom.A, atom.Area, atom.Link:
		return attr(n, "href")
	case atom.Object:
		return attr(n, "data")
	case atom.Data, atom.Meter:
		return attr(n, "value")
	case atom.Time:
		if v, ok := attrOK(n, "datetime"); ok {
			return v
		}
	}
	var b strings.Builder
	textOf(n, &b)
	return strings.Join(strings.Fields(b.String()), " ")
}

// maxText bounds the text read for one property. Property elements may nest, and
// without a bound a page of deeply nested ones would have each level copy the text
// of all the levels below it.
const maxText = 16 << 10

func textOf(n *html.Node, b *strings.Builder) {
	for c := n.FirstChild; c != nil && b.Len() < maxText; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			b.WriteString(c.Data)
			b.WriteByte(' ')
		case html.ElementNode:
			if c.DataAtom != atom.Script && c.DataAtom != atom.Style {
				textOf(c, b)
			}
		}
	}
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func attr(n *html.Node, key string) string { v, _ := attrOK(n, key); return v }

func hasAttr(n *html.Node, key string) bool { _, ok := attrOK(n, key); return ok }

// decodeJSONLD decodes one JSON-LD block. Pages sometimes wrap it in an HTML
// comment or CDATA markers for old browsers; those are dropped.
func decodeJSONLD(block string) (any, error) {
	t := strings.TrimSpace(block)
	for _, w := range [][2]string{{"<!--", "-->"}, {"//<![CDATA[", "//]]>"}, {"<![CDATA[", "]]>"}} {
		if strings.HasPrefix(t, w[0]) && strings.HasSuffix(t, w[1]) {
			t = strings.TrimSpace(t[len(w[0]) : len(t)-len(w[1])])
		}
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if strings.TrimSpace(t[dec.InputOffset():]) != "" {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

// schemaType strips the schema.org prefixes a type or enumeration value may carry:
// "https://schema.org/InStock", "http://schema.org/InStock", "schema:InStock".
func schemaType(s string) string {
	s = strings.TrimSpace(s)
	for _, p := range []string{"https://schema.org/", "http://schema.org/", "https://www.schema.org/", "http://www.schema.org/", "schema:"} {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return s[len(p):]
		}
	}
	return s
}

func typesOf(m map[string]any) []string {
	var out []string
	switch t := m["@type"].(type) {
	case string:
		out = append(out, schemaType(t))
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, schemaType(s))
			}
		}
	}
	return out
}

func hasType(m map[string]any, want ...string) bool {
	for _, t := range typesOf(m) {
		for _, w := range want {
			if t == w {
				return true
			}
		}
	}
	return false
}

// productTypes are Product and its schema.org subtypes that describe one product.
// ProductGroup is handled apart: it stands for all its variants.
var productTypes = []string{"Product", "IndividualProduct", "ProductModel", "SomeProducts"}

// findProducts appends, in document order, the products in v: objects of a product
// type, found through arrays, @graph and any other property (an object's keys in
// sorted order, as JSON objects have none). A product's own properties are not
// searched: a Product's isSimilarTo is not what the page sells. A ProductGroup
// yields the variant (hasVariant) whose url is the page's URL, and nothing when no
// variant is: the group's shared fields cannot say which size or colour is sold.
func findProducts(v any, base *url.URL, depth int, out *[]map[string]any) {
	if depth > maxJSONLDDepth {
		return
	}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			findProducts(e, base, depth+1, out)
		}
	case map[string]any:
		if hasType(x, "ProductGroup") {
			if p := variantFor(x, base); p != nil {
				*out = append(*out, p)
			}
			return
		}
		if hasType(x, productTypes...) {
			*out = append(*out, x)
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			findProducts(x[k], base, depth+1, out)
		}
	}
}

func variantFor(group map[string]any, base *url.URL) map[string]any {
	if base == nil {
		return nil
	}
	for _, v := range asList(group["hasVariant"]) {
		p, ok := v.(map[string]any)
		if !ok || !hasType(p, productTypes...) {
			continue
		}
		if u := resolve(text(p["url"]), base); u != "" && u == base.String() {
			merged := make(map[string]any, len(group)+len(p))
			for k, val := range group {
				if k != "hasVariant" {
					merged[k] = val
				}
			}
			for k, val := range p {
				merged[k] = val
			}
			return merged
		}
	}
	return nil
}

func asList(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	default:
		return []any{x}
	}
}

// text is the plain string a property holds: a string or number as it is, an
// object's "name" (Brand, Organization, SizeSpecification, Thing) or "@value", the
// first non-empty element of a list. White space is trimmed and invalid UTF-8
// replaced.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return strings.ToValidUTF8(strings.TrimSpace(x), "\uFFFD")
	case json.Number:
		return string(x)
	case map[string]any:
		if s := text(x["name"]); s != "" {
			return s
		}
		return text(x["@value"])
	case []any:
		for _, e := range x {
			if s := text(e); s != "" {
				return s
			}
		}
	}
	return ""
}

// link is a URL-valued property: a string, or an object's url or contentUrl
// (ImageObject), resolved against the page.
func link(v any, base *url.URL) string {
	switch x := v.(type) {
	case map[string]any:
		if s := link(x["url"], base); s != "" {
			return s
		}
		return link(x["contentUrl"], base)
	case []any:
		for _, e := range x {
			if s := link(e, base); s != "" {
				return s
			}
		}
		return ""
	default:
		return resolve(text(v), base)
	}
}

func resolve(s string, base *url.URL) string {
	if s == "" || base == nil {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return base.ResolveReference(u).String()
}

func productEvidence(p map[string]any, base *url.URL) Evidence {
	ev := Evidence{}
	set := func(field, value string) {
		if value != "" {
			ev[field] = value
		}
	}
	set(FieldName, text(p["name"]))
	set(FieldDescription, text(p["description"]))
	set(FieldBrand, text(p["brand"]))
	set(FieldColor, text(p["color"]))
	set(FieldSize, text(p["size"]))
	set(FieldMaterial, text(p["material"]))
	set(FieldSKU, text(p["sku"]))
	set(FieldMPN, text(p["mpn"]))
	set(FieldCategory, text(p["category"]))
	for _, k := range []string{"gtin", "gtin13", "gtin12", "gtin14", "gtin8"} {
		if g := text(p[k]); g != "" {
			set(FieldGTIN, g)
			break
		}
	}
	set(FieldURL, link(p["url"], base))
	set(FieldImage, link(p["image"], base))
	if o := chooseOffer(offersOf(p["offers"], 0)); o != nil {
		offerEvidence(o, ev)
	}
	return ev
}

// offersOf flattens a product's offers: one Offer, an array, or an AggregateOffer,
// whose own offers are used when it lists them.
func offersOf(v any, depth int) []map[string]any {
	var out []map[string]any
	if depth > 4 {
		return nil
	}
	for _, e := range asList(v) {
		o, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if hasType(o, "AggregateOffer") {
			if inner := offersOf(o["offers"], depth+1); len(inner) > 0 {
				out = append(out, inner...)
				continue
			}
		}
		out = append(out, o)
	}
	return out
}

// chooseOffer picks, of several offers, the first in stock in the page's order, or
// the first when none is: the page lists its own default first, and a later, cheaper
// offer is often another seller's or another variant's.
func chooseOffer(offers []map[string]any) map[string]any {
	for _, o := range offers {
		if _, inStock := availability(text(o["availability"])); inStock != nil && *inStock {
			return o
		}
	}
	if len(offers) > 0 {
		return offers[0]
	}
	return nil
}

func offerEvidence(o map[string]any, ev Evidence) {
	price, currency := text(o["price"]), text(o["priceCurrency"])
	if price == "" {
		// The price may sit in a (Unit)PriceSpecification instead.
		for _, spec := range asList(o["priceSpecification"]) {
			if m, ok := spec.(map[string]any); ok && text(m["price"]) != "" {
				price = text(m["price"])
				if currency == "" {
					currency = text(m["priceCurrency"])
				}
				break
			}
		}
	}
	if price == "" && hasType(o, "AggregateOffer") {
		// A range is not a price: "from 19.99" would pass a budget that the
		// variant actually bought might not. Only a range of one price counts.
		if low, high := text(o["lowPrice"]), text(o["highPrice"]); low != "" && low == high {
			price = low
		} else if low != "" && high != "" {
			if l, err1 := ParsePrice(low); err1 == nil {
				if h, err2 := ParsePrice(high); err2 == nil && l == h {
					price = low
				}
			}
		}
	}
	if cents, err := ParsePrice(price); err == nil {
		ev[FieldPriceCents] = json.Number(strconv.FormatInt(cents, 10))
	}
	if currency != "" {
		ev[FieldCurrency] = strings.ToUpper(currency)
	}
	if a := text(o["availability"]); a != "" {
		name, inStock := availability(a)
		ev[FieldAvailability] = name
		if inStock != nil {
			ev[FieldInStock] = *inStock
		}
	}
}

var (
	yes, no          = true, false
	availabilityFold = strings.NewReplacer(" ", "", "_", "", "-", "")
	// availabilities maps the schema.org ItemAvailability values, and the OpenGraph
	// spellings, folded to lower case without spaces, hyphens or underscores.
	availabilities = map[string]struct {
		name    string
		inStock *bool
	}{
		"instock":             {"InStock", &yes},
		"limitedavailability": {"LimitedAvailability", &yes},
		"onlineonly":          {"OnlineOnly", &yes},
		"instoreonly":         {"InStoreOnly", &yes},
		"outofstock":          {"OutOfStock", &no},
		"oos":                 {"OutOfStock", &no},
		"soldout":             {"SoldOut", &no},
		"discontinued":        {"Discontinued", &no},
		"preorder":            {"PreOrder", &no},
		"presale":             {"PreSale", &no},
		"backorder":           {"BackOrder", &no},
		"availablefororder":   {"BackOrder", &no},
		"madetoorder":         {"MadeToOrder", &no},
		"reserved":            {"Reserved", &no},
	}
)

// availability normalises an availability value to its schema.org name and says
// whether it means in stock; an unknown value is kept as given, with inStock nil,
// so that in_stock is absent rather than guessed.
func availability(s string) (name string, inStock *bool) {
	short := schemaType(s)
	key := availabilityFold.Replace(strings.ToLower(short))
	if a, ok := availabilities[key]; ok {
		b := *a.inStock
		return a.name, &b
	}
	return short, nil
}

// openGraphEvidence reads the og: and product: meta tags, when the page declares a
// product (og:type product) or has product: tags at all.
func openGraphEvidence(og map[string]string, base *url.URL) Evidence {
	isProduct := strings.Contains(strings.ToLower(og["og:type"]), "product")
	for k := range og {
		if strings.HasPrefix(k, "product:") {
			isProduct = true
		}
	}
	if !isProduct {
		return nil
	}
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := strings.ToValidUTF8(strings.TrimSpace(og[k]), "\uFFFD"); v != "" {
				return v
			}
		}
		return ""
	}
	ev := Evidence{}
	set := func(field, value string) {
		if value != "" {
			ev[field] = value
		}
	}
	set(FieldName, first("og:title"))
	set(FieldDescription, first("og:description"))
	set(FieldURL, resolve(first("og:url"), base))
	set(FieldImage, resolve(first("og:image", "og:image:url", "og:image:secure_url"), base))
	set(FieldBrand, first("product:brand", "og:brand"))
	set(FieldColor, first("product:color", "og:color"))
	set(FieldSize, first("product:size", "og:size"))
	set(FieldMaterial, first("product:material", "og:material"))
	set(FieldCategory, first("product:category", "og:category"))
	set(FieldSKU, first("product:retailer_item_id", "product:sku"))
	set(FieldGTIN, first("product:gtin", "product:ean", "product:upc", "product:isbn"))
	offerEvidence(map[string]any{
		"price":         first("product:price:amount", "og:price:amount"),
		"priceCurrency": first("product:price:currency", "og:price:currency"),
		"availability":  first("product:availability", "og:availability"),
	}, ev)
	if len(ev) == 0 {
		return nil
	}
	return ev
}
