package policy

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestDecodeAttrs(t *testing.T) {
	a := mustAttrs(t, `{"fields": {"size": {"String": "M"}, "max": {"Int": -2500}, "ok": {"Bool": true},
	  "colors": {"Set": {"String": ["b", "a", "b"]}}, "ids": {"Set": {"Int": [2, 1]}}, "none": {"Set": {"Int": []}}}}`)
	want := Attrs{
		"size": StringValue("M"), "max": IntValue(-2500), "ok": BoolValue(true),
		"colors": StringSetValue("b", "a", "b"), "ids": IntSetValue(2, 1), "none": IntSetValue(),
	}
	if len(a) != len(want) {
		t.Fatalf("got %v", a)
	}
	for k, v := range want {
		if !a[k].equal(v) {
			t.Errorf("%s: got %v, want %v", k, a[k], v)
		}
	}
	if got := a["colors"].Strings(); !reflect.DeepEqual(got, []string{"b", "a", "b"}) {
		t.Errorf("set elements as given: %v", got)
	}
	if got := a["colors"].String(); got != `{"a", "b"}` {
		t.Errorf("set as a value: %s", got)
	}
}

func TestDecodeAttrsStrict(t *testing.T) {
	tests := []struct {
		name, json, field, reason string
	}{
		{"not JSON", `{`, "", "unexpected end of JSON"},
		{"null", `null`, "", "want attrs as a JSON object, got null"},
		{"array", `[]`, "", "want attrs as a JSON object, got an array"},
		{"no fields", `{}`, "fields", "missing (want an object of attribute values)"},
		{"null fields", `{"fields": null}`, "fields", "want fields as a JSON object, got null"},
		{"unknown key", `{"fields": {}, "extra": 1}`, "extra", "unknown key (an ObjectValue has only fields)"},
		{"repeated key", `{"fields": {}, "fields": {}}`, "fields", "repeated key"},
		{"repeated field", `{"fields": {"a": {"Int": 1}, "a": {"Int": 2}}}`, "fields.a", "repeated key"},
		{"null value", `{"fields": {"a": null}}`, "fields.a", `want a value ({"Int": ...}, {"String": ...}, {"Bool": ...} or {"Set": ...}) as a JSON object, got null`},
		{"bare value", `{"fields": {"a": 5}}`, "fields.a", `want a value ({"Int": ...}, {"String": ...}, {"Bool": ...} or {"Set": ...}) as a JSON object, got the number 5`},
		{"empty variant", `{"fields": {"a": {}}}`, "fields.a", "empty object (want exactly one of Int, String, Bool or Set)"},
		{"two variants", `{"fields": {"a": {"Int": 1, "String": "x"}}}`, "fields.a", "two variants, Int and String (want exactly one of Int, String, Bool or Set)"},
		{"unknown variant", `{"fields": {"a": {"Float": 1.5}}}`, "fields.a.Float", "unknown variant (want Int, String, Bool or Set)"},
		{"lower-case variant", `{"fields": {"a": {"int": 1}}}`, "fields.a.int", "unknown variant (want Int, String, Bool or Set)"},
		{"fraction", `{"fields": {"a": {"Int": 2.5}}}`, "fields.a.Int", "want an integer, got 2.5 (a number with a fraction or an exponent)"},
		{"exponent", `{"fields": {"a": {"Int": 1e3}}}`, "fields.a.Int", "want an integer, got 1e3 (a number with a fraction or an exponent)"},
		{"out of range", `{"fields": {"a": {"Int": 9223372036854775808}}}`, "fields.a.Int", "want an integer, got 9223372036854775808 (out of the int64 range)"},
		{"string for int", `{"fields": {"a": {"Int": "1"}}}`, "fields.a.Int", "want an integer, got a string"},
		{"null int", `{"fields": {"a": {"Int": null}}}`, "fields.a.Int", "want an integer, got null"},
		{"number for string", `{"fields": {"a": {"String": 1}}}`, "fields.a.String", "want a string, got the number 1"},
		{"string for bool", `{"fields": {"a": {"Bool": "true"}}}`, "fields.a.Bool", "want true or false, got a string"},
		{"set of nothing", `{"fields": {"a": {"Set": {}}}}`, "fields.a.Set", "empty object (want exactly one of String or Int)"},
		{"set of two", `{"fields": {"a": {"Set": {"String": [], "Int": []}}}}`, "fields.a.Set", "two element types, String and Int (want exactly one of String or Int)"},
		{"set of bools", `{"fields": {"a": {"Set": {"Bool": [true]}}}}`, "fields.a.Set.Bool", "unknown set element type (want String or Int)"},
		{"set not an array", `{"fields": {"a": {"Set": {"String": "a"}}}}`, "fields.a.Set.String", "want an array, got a string"},
		{"wrong element", `{"fields": {"colors": {"Set": {"String": ["a", "b", 3]}}}}`, "fields.colors.Set.String[2]", "want a string, got the number 3"},
		{"null element", `{"fields": {"ids": {"Set": {"Int": [1, null]}}}}`, "fields.ids.Set.Int[1]", "want an integer, got null"},
		{"fraction element", `{"fields": {"ids": {"Set": {"Int": [1.5]}}}}`, "fields.ids.Set.Int[0]", "want an integer, got 1.5 (a number with a fraction or an exponent)"},
		{"trailing data", `{"fields": {}} {}`, "", "unexpected data after the JSON value"},
		{"invalid UTF-8", "{\"fields\": {\"a\": {\"String\": \"\xff\"}}}", "", "invalid UTF-8 in the JSON text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeAttrs([]byte(tc.json))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want a *FieldError, got %v", err)
			}
			if fe.Field != tc.field || fe.Reason != tc.reason {
				t.Fatalf("got %q: %q\nwant %q: %q", fe.Field, fe.Reason, tc.field, tc.reason)
			}
		})
	}
}

// manyFields is attrs of n fields, each an int.
func manyFields(n int) string {
	var b strings.Builder
	b.WriteString(`{"fields":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"f` + strconv.Itoa(i) + `":{"Int":` + strconv.Itoa(i) + `}`)
	}
	b.WriteString(`}}`)
	return b.String()
}

// TestDecodeAttrsBound: attrs of MaxAttrFields fields are read; one more is refused
// before its value is read.
func TestDecodeAttrsBound(t *testing.T) {
	a, err := DecodeAttrs([]byte(manyFields(MaxAttrFields)))
	if err != nil || len(a) != MaxAttrFields {
		t.Fatalf("%d fields: %d read, %v", MaxAttrFields, len(a), err)
	}
	for _, n := range []int{MaxAttrFields + 1, 100_000} {
		_, err := DecodeAttrs([]byte(manyFields(n)))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "fields" || fe.Reason != "more than 1024 fields (a policy declares at most 128 parameters)" {
			t.Fatalf("%d fields: %v", n, err)
		}
	}
}

func BenchmarkDecodeAttrs(b *testing.B) {
	data := []byte(bench25Attrs)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeAttrs(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeAttrsManyFields decodes attrs of a thousand, ten thousand and a
// hundred thousand fields. ns/key is the time per field of the text: it must not grow
// with the number of fields.
func BenchmarkDecodeAttrsManyFields(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		data := []byte(manyFields(n))
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				DecodeAttrs(data)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}

// Attrs marshal back to the JSON they came from (as JSON: key order aside).
func TestAttrsRoundTrip(t *testing.T) {
	in := `{"fields":{"colors":{"Set":{"String":["red","navy","red"]}},"ids":{"Set":{"Int":[3,-1]}},"max":{"Int":9223372036854775807},"ok":{"Bool":false},"size":{"String":"M \"big\" <é>\n"}}}`
	a := mustAttrs(t, in)
	out, err := a.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Fatalf("got  %s\nwant %s", out, in)
	}
	// encoding/json escapes <, > and & in what a marshaler writes: the same JSON.
	if out, err = json.Marshal(a); err != nil {
		t.Fatal(err)
	}
	var b Attrs
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	for k := range a {
		if !a[k].equal(b[k]) {
			t.Fatalf("%s: %v != %v", k, a[k], b[k])
		}
	}
	// Inside a struct, null is refused too.
	var s struct {
		Attrs Attrs `json:"attrs"`
	}
	if err := json.Unmarshal([]byte(`{"attrs": null}`), &s); err == nil {
		t.Fatal("attrs: null accepted")
	}
	if _, err := json.Marshal(Attrs{"x": {}}); err == nil {
		t.Fatal("a zero Value marshaled")
	}
}

func TestCheckAttrs(t *testing.T) {
	p := mustCompile(t, example)
	tests := []struct {
		name, attrs, field, reason string
	}{
		{"all given", `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": []}}, "max_price_cents": {"Int": 1}, "brands": {"Set": {"String": ["a"]}}}}`, "", ""},
		{"optional omitted", exampleAttrs, "", ""},
		{"missing", `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": []}}}}`, "fields.max_price_cents", "missing: the policy requires parameter max_price_cents (int)"},
		{"unknown", `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": []}}, "max_price_cents": {"Int": 1}, "color": {"String": "x"}}}`, "fields.color", "unknown attribute (the policy's parameters are brands, colors, max_price_cents, size)"},
		{"wrong type", `{"fields": {"size": {"Int": 40}, "colors": {"Set": {"String": []}}, "max_price_cents": {"Int": 1}}}`, "fields.size", "want string, got int"},
		{"wrong set type", `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"Int": [1]}}, "max_price_cents": {"Int": 1}}}`, "fields.colors", "want set<string>, got set<int>"},
		{"first by name", `{"fields": {"size": {"Int": 40}, "colors": {"Int": 1}}}`, "fields.colors", "want set<string>, got int"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := p.CheckAttrs(mustAttrs(t, tc.attrs))
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || fe.Reason != tc.reason {
				t.Fatalf("got %v\nwant %s: %s", err, tc.field, tc.reason)
			}
		})
	}
	if err := mustCompile(t, "name x\nrequires { true; }").CheckAttrs(Attrs{"a": IntValue(1)}); err == nil || err.Error() != "fields.a: unknown attribute (the policy declares no parameters)" {
		t.Fatal(err)
	}
}

func TestCheckEvidence(t *testing.T) {
	p := mustCompile(t, example)
	if err := p.CheckEvidence(mustEvidence(t, examplePassing)); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckEvidence(mustEvidence(t, `{"color": "x"}`)); err != nil {
		t.Fatalf("absent fields are the constraints' business: %v", err)
	}
	err := p.CheckEvidence(mustEvidence(t, `{"price_cents": 19.5, "in_stock": "yes"}`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "in_stock" || fe.Reason != `want bool, got the string "yes"` {
		t.Fatalf("got %v", err)
	}
}

func TestTypeNames(t *testing.T) {
	tests := []struct {
		t          Type
		name, wire string
	}{
		{TypeInt, "int", "integer"},
		{TypeString, "string", "string"},
		{TypeBool, "bool", "boolean"},
		{TypeStringSet, "set<string>", "string_set"},
		{TypeIntSet, "set<int>", "integer_set"},
		{TypeAny, "any", "any"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.t.String() != tc.name || tc.t.WireName() != tc.wire {
				t.Fatalf("%d: %s %s", tc.t, tc.t, tc.t.WireName())
			}
			if back, ok := TypeFromWireName(tc.wire); !ok || back != tc.t {
				t.Fatalf("TypeFromWireName(%q) = %v, %v", tc.wire, back, ok)
			}
		})
	}
	if _, ok := TypeFromWireName("float"); ok {
		t.Fatal("unknown wire name accepted")
	}
}
