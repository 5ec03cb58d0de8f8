package evidence

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRequestWireForm(t *testing.T) {
	req := Request{
		Solution:   "https://shop.example/products/tshirt-navy-m",
		Attributes: map[string]Attribute{"price_cents": {Type: TypeInteger}, "tags": {Type: TypeStringSet}},
		IntentID:   "5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e",
		PolicyID:   "8wBzcY1H7mZ",
		Extractor:  "http",
	}
	got, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"solution":"https://shop.example/products/tshirt-navy-m","attributes":{"price_cents":{"type":"integer"},"tags":{"type":"string_set"}},"intent_id":"5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e","policy_id":"8wBzcY1H7mZ"}`
	if string(got) != want {
		t.Errorf("wire form\n got %s\nwant %s", got, want)
	}
}

func TestCheck(t *testing.T) {
	attrs := map[string]Attribute{
		"price_cents": {Type: TypeInteger},
		"color":       {Type: TypeString},
		"in_stock":    {Type: TypeBoolean},
		"tags":        {Type: TypeStringSet},
		"sizes_cm":    {Type: TypeIntegerSet},
		"extra":       {Type: TypeAny},
	}
	tests := []struct {
		name      string
		ev        Evidence
		want      Evidence
		wantField string
		wantMsg   string
	}{
		{
			name: "every type, unasked fields dropped, absent ones stay absent",
			ev: Evidence{
				"price_cents": n("1999"), "color": "navy", "in_stock": true,
				"tags": []any{"cotton", "crew"}, "sizes_cm": []any{n("50"), n("52")},
				"not_asked": "dropped",
			},
			want: Evidence{
				"price_cents": n("1999"), "color": "navy", "in_stock": true,
				"tags": []any{"cotton", "crew"}, "sizes_cm": []any{n("50"), n("52")},
			},
		},
		{name: "empty evidence", ev: Evidence{}, want: Evidence{}},
		{name: "integer canonical form", ev: Evidence{"price_cents": n("-0")}, want: Evidence{"price_cents": n("0")}},
		{name: "Go integers from in-process extractors", ev: Evidence{"price_cents": int64(5), "sizes_cm": []int64{1}}, want: Evidence{"price_cents": n("5"), "sizes_cm": []any{n("1")}}},
		{name: "Go string slices", ev: Evidence{"tags": []string{"a"}}, want: Evidence{"tags": []any{"a"}}},
		{name: "int64 bounds", ev: Evidence{"price_cents": n("-9223372036854775808")}, want: Evidence{"price_cents": n("-9223372036854775808")}},
		{name: "any keeps null, objects and arrays", ev: Evidence{"extra": map[string]any{"a": []any{nil}}}, want: Evidence{"extra": map[string]any{"a": []any{nil}}}},
		{name: "any keeps a number as it is", ev: Evidence{"extra": n("1.5e3")}, want: Evidence{"extra": n("1.5e3")}},
		{name: "string for integer", ev: Evidence{"price_cents": "1999"}, wantField: "price_cents", wantMsg: `want an integer, got the string "1999"`},
		{name: "fraction for integer", ev: Evidence{"price_cents": n("19.99")}, wantField: "price_cents", wantMsg: "got the number 19.99"},
		{name: "whole fraction for integer", ev: Evidence{"price_cents": n("2000.0")}, wantField: "price_cents", wantMsg: "got the number 2000.0"},
		{name: "exponent for integer", ev: Evidence{"price_cents": n("2e3")}, wantField: "price_cents", wantMsg: "got the number 2e3"},
		{name: "float64 for integer", ev: Evidence{"price_cents": 1999.0}, wantField: "price_cents", wantMsg: "want an integer"},
		{name: "beyond int64", ev: Evidence{"price_cents": n("9223372036854775808")}, wantField: "price_cents", wantMsg: "signed 64-bit range"},
		{name: "null for integer", ev: Evidence{"price_cents": nil}, wantField: "price_cents", wantMsg: "got null"},
		{name: "number for string", ev: Evidence{"color": n("3")}, wantField: "color", wantMsg: "want a string, got the number 3"},
		{name: "invalid UTF-8", ev: Evidence{"color": "\xff"}, wantField: "color", wantMsg: "UTF-8"},
		{name: "string for boolean", ev: Evidence{"in_stock": "true"}, wantField: "in_stock", wantMsg: `want a boolean, got the string "true"`},
		{name: "number for boolean", ev: Evidence{"in_stock": n("1")}, wantField: "in_stock", wantMsg: "want a boolean"},
		{name: "scalar for set", ev: Evidence{"tags": "cotton"}, wantField: "tags", wantMsg: "want an array (string_set)"},
		{name: "wrong element", ev: Evidence{"tags": []any{"a", n("1")}}, wantField: "tags", wantMsg: "element 1: want a string"},
		{name: "null element", ev: Evidence{"sizes_cm": []any{nil}}, wantField: "sizes_cm", wantMsg: "element 0: want an integer, got null"},
		{name: "first bad field in name order", ev: Evidence{"tags": 1, "color": 1}, wantField: "color"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check(tt.ev, attrs)
			if tt.wantField != "" {
				var e *Error
				if err == nil || KindOf(err) != KindWrongType {
					t.Fatalf("Check = %v, %v; want a wrong-type error", got, err)
				}
				e = err.(*Error)
				if e.Field != tt.wantField || !strings.Contains(err.Error(), `"`+tt.wantField+`"`) || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("err = %q (field %q), want field %q and %q", err, e.Field, tt.wantField, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Check = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestCheckCopies(t *testing.T) {
	src := Evidence{"tags": []any{"a"}, "extra": map[string]any{"k": "v"}}
	got, err := Check(src, map[string]Attribute{"tags": {Type: TypeStringSet}, "extra": {Type: TypeAny}})
	if err != nil {
		t.Fatal(err)
	}
	got["tags"].([]any)[0] = "changed"
	got["extra"].(map[string]any)["k"] = "changed"
	if src["tags"].([]any)[0] != "a" || src["extra"].(map[string]any)["k"] != "v" {
		t.Errorf("changing Check's result changed its input: %v", src)
	}
}

func TestCheckUnknownType(t *testing.T) {
	_, err := Check(Evidence{"x": "1"}, map[string]Attribute{"x": {Type: "float"}})
	if KindOf(err) != KindWrongType || !strings.Contains(err.Error(), `unknown type "float"`) {
		t.Errorf("err = %v, want an unknown-type error", err)
	}
}

func TestDecodeFlatObject(t *testing.T) {
	tests := []struct {
		name, in string
		want     Evidence
		wantErr  string
	}{
		{name: "flat", in: `{"a": 1, "b": "x", "c": true, "d": null, "e": [1, "y", false, null]}`,
			want: Evidence{"a": n("1"), "b": "x", "c": true, "d": nil, "e": []any{n("1"), "y", false, nil}}},
		{name: "large integers stay exact", in: `{"a": 9007199254740993}`, want: Evidence{"a": n("9007199254740993")}},
		{name: "empty object", in: " {} \n", want: Evidence{}},
		{name: "nested object", in: `{"a": {"b": 1}}`, wantErr: `field "a": nested objects`},
		{name: "array of arrays", in: `{"a": [[1]]}`, wantErr: `field "a": element 0`},
		{name: "array of objects", in: `{"a": [1, {}]}`, wantErr: `field "a": element 1`},
		{name: "array", in: `[1]`, wantErr: "want a JSON object, got an array"},
		{name: "null", in: `null`, wantErr: "want a JSON object, got null"},
		{name: "string", in: `"x"`, wantErr: "want a JSON object"},
		{name: "two objects", in: `{} {}`, wantErr: "data after"},
		{name: "trailing garbage", in: `{}x`, wantErr: "data after"},
		{name: "trailing brace", in: `{}}`, wantErr: "data after"},
		{name: "truncated", in: `{"a": 1`, wantErr: "not JSON"},
		{name: "empty", in: ``, wantErr: "not JSON"},
		{name: "HTML error page", in: `<html>502</html>`, wantErr: "not JSON"},
		{name: "duplicate name", in: `{"price_cents": 1999, "price_cents": 1}`, wantErr: `duplicate object member name "price_cents"`},
		{name: "invalid UTF-8", in: "{\"color\": \"na\xffvy\"}", wantErr: `invalid UTF-8 within "/color"`},
		{name: "lone surrogate", in: `{"color": "\ud800"}`, wantErr: `invalid surrogate pair`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeFlatObject([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("decode = %v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decode = %#v, want %#v", got, tt.want)
			}
		})
	}
}
