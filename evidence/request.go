package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Request is what an extractor is asked. Its JSON form is exactly the body the http
// extractor posts to an evidence service, so that the wire contract and the Go API
// cannot drift apart.
type Request struct {
	Solution   string               `json:"solution"`
	Attributes map[string]Attribute `json:"attributes"`
	IntentID   string               `json:"intent_id"`
	PolicyID   string               `json:"policy_id"`
	// Extractor is the extractor the policy names ("" lets the router's rules
	// choose). It is not sent on the wire: an evidence service is already chosen.
	Extractor string `json:"-"`
}

// Attribute is the type the policy asks for one evidence field.
type Attribute struct {
	Type string `json:"type"`
}

// The attribute types of the wire contract.
const (
	TypeInteger    = "integer"
	TypeString     = "string"
	TypeBoolean    = "boolean"
	TypeStringSet  = "string_set"
	TypeIntegerSet = "integer_set"
	TypeAny        = "any" // the policy does not fix the type
)

// Evidence is a flat object of plain values: json.Number for integers (always in
// canonical form, an int64 written in base 10), string, bool, and []any of those for
// sets. It is what the policy evaluates and what the proof records.
type Evidence = map[string]any

// Extractor produces the evidence about a solution. Errors are *Error values with a
// reason fit to show; the engine records any error as an extraction failure. An
// extractor returns the fields it found; it never invents a default for one it did
// not. Extractors must be safe for concurrent use.
type Extractor interface {
	Extract(ctx context.Context, req Request) (Evidence, error)
}

// ExtractorFunc adapts a function to the Extractor interface.
type ExtractorFunc func(ctx context.Context, req Request) (Evidence, error)

// Extract calls f.
func (f ExtractorFunc) Extract(ctx context.Context, req Request) (Evidence, error) {
	return f(ctx, req)
}

// Check returns the fields of ev that attrs asks for, each verified against its type.
// A value of the wrong type is never coerced: it is a KindWrongType error naming the
// field. Fields not asked for are dropped; asked fields that are absent stay absent,
// so that the policy fails closed on them. A JSON null is absent only in the sense
// that it carries no value of the asked type: it is a wrong-type error, except for
// "any", which keeps it. Integers are json.Number (or a Go integer, from in-process
// extractors) written as an integer in int64 range; "2000.0" and "2e3" are refused.
// The result shares nothing with ev.
func Check(ev Evidence, attrs map[string]Attribute) (Evidence, error) {
	out := make(Evidence, len(attrs))
	// Fields are checked in sorted order so that, of several bad fields, the one
	// reported is always the same.
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v, ok := ev[name]
		if !ok {
			continue
		}
		cv, err := checkValue(attrs[name].Type, v)
		if err != nil {
			return nil, &Error{Kind: KindWrongType, Field: name, Reason: fmt.Sprintf("evidence field %q: %s", name, err)}
		}
		out[name] = cv
	}
	return out, nil
}

func checkValue(typ string, v any) (any, error) {
	switch typ {
	case TypeInteger:
		return checkInteger(v)
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %s", describe(v))
		}
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("the string is not valid UTF-8")
		}
		return s, nil
	case TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want a boolean, got %s", describe(v))
		}
		return b, nil
	case TypeStringSet, TypeIntegerSet:
		elem := TypeString
		if typ == TypeIntegerSet {
			elem = TypeInteger
		}
		var items []any
		switch s := v.(type) {
		case []any:
			items = s
		case []string:
			items = make([]any, len(s))
			for i, x := range s {
				items[i] = x
			}
		case []int64:
			items = make([]any, len(s))
			for i, x := range s {
				items[i] = x
			}
		default:
			return nil, fmt.Errorf("want an array (%s), got %s", typ, describe(v))
		}
		out := make([]any, len(items))
		for i, x := range items {
			cx, err := checkValue(elem, x)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			out[i] = cx
		}
		return out, nil
	case TypeAny:
		return copyJSON(v), nil
	default:
		return nil, fmt.Errorf("the policy asks for unknown type %q", typ)
	}
}

// checkInteger accepts only integer syntax: a JSON number with a fraction or an
// exponent is a number of another type on the wire, even when its value is whole.
func checkInteger(v any) (json.Number, error) {
	switch n := v.(type) {
	case json.Number:
		s := string(n)
		if strings.ContainsAny(s, ".eE") {
			return "", fmt.Errorf("want an integer, got the number %s", s)
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return "", fmt.Errorf("want an integer in the signed 64-bit range, got %s", s)
		}
		return json.Number(strconv.FormatInt(i, 10)), nil
	case int:
		return json.Number(strconv.FormatInt(int64(n), 10)), nil
	case int64:
		return json.Number(strconv.FormatInt(n, 10)), nil
	case int32:
		return json.Number(strconv.FormatInt(int64(n), 10)), nil
	default:
		return "", fmt.Errorf("want an integer, got %s", describe(v))
	}
}

// copyJSON copies the containers of a decoded JSON value so that the result shares
// no map or slice with the source (a catalog entry, say).
func copyJSON(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	default:
		return v
	}
}

// describe names the JSON type of v for error messages, with the value when it is
// short enough to help.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "the boolean " + strconv.FormatBool(x)
	case json.Number:
		return "the number " + clip(string(x))
	case int, int32, int64, float64:
		return fmt.Sprintf("the number %v", x)
	case string:
		return "the string " + strconv.Quote(clip(x))
	case []any, []string, []int64:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// clip shortens a value quoted in a message: a reason is read by people, and the
// value may be anything a page or a service sent.
func clip(s string) string { return clipTo(s, 40) }

func clipTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// decodeFlatObject decodes data as one JSON object whose values are scalars or arrays
// of scalars, with numbers kept as json.Number. It is the decoder for every flat
// object that comes from outside: an evidence service's answer and a catalog entry.
func decodeFlatObject(data []byte) (map[string]any, error) {
	// encoding/json lets a repeated name through (the last wins) and rewrites invalid
	// UTF-8 to U+FFFD; evidence is never coerced (decisions.md), so jsontext, which
	// refuses both, reads the text first.
	if _, err := jsontext.NewDecoder(bytes.NewReader(data)).ReadValue(); err != nil {
		return nil, fmt.Errorf("not JSON: %s", strings.TrimPrefix(err.Error(), "jsontext: "))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return nil, fmt.Errorf("data after the JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON object, got %s", describe(v))
	}
	if err := checkFlat(obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkFlat refuses nested objects and arrays of arrays or objects: evidence is flat
// by contract, and a policy has no way to read inside a nested value.
func checkFlat(obj map[string]any) error {
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch x := obj[k].(type) {
		case map[string]any:
			return fmt.Errorf("field %q: nested objects are not allowed (evidence is flat)", k)
		case []any:
			for i, e := range x {
				switch e.(type) {
				case map[string]any, []any:
					return fmt.Errorf("field %q: element %d: arrays may hold only strings, numbers and booleans", k, i)
				}
			}
		}
	}
	return nil
}
