package policy

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/intentd/intentd/internal/strictjson"
)

// Value is one attribute value: an int, a string, a bool or a set. The zero Value is
// not a value; build them with IntValue, StringValue, BoolValue, StringSetValue and
// IntSetValue, or decode them with DecodeAttrs.
type Value struct {
	t   Type
	n   int64 // int, or bool as 0/1
	s   string
	set *setValue
}

// setValue holds a set sorted and without repeats, for lookups, and the elements as
// they were given, so that attrs marshal back to the JSON they came from.
type setValue struct {
	strs      []string
	ints      []int64
	givenStrs []string // nil: same as strs
	givenInts []int64
}

func (s *setValue) len() int { return len(s.strs) + len(s.ints) }

// IntValue is an int value.
func IntValue(n int64) Value { return Value{t: TypeInt, n: n} }

// StringValue is a string value.
func StringValue(s string) Value { return Value{t: TypeString, s: s} }

// BoolValue is a bool value.
func BoolValue(b bool) Value {
	if b {
		return Value{t: TypeBool, n: 1}
	}
	return Value{t: TypeBool}
}

// StringSetValue is a set<string>. Repeated elements count once.
func StringSetValue(elems ...string) Value {
	return Value{t: TypeStringSet, set: newStrSet(elems)}
}

// IntSetValue is a set<int>. Repeated elements count once.
func IntSetValue(elems ...int64) Value {
	return Value{t: TypeIntSet, set: newIntSet(elems)}
}

func newStrSet(given []string) *setValue {
	given = slices.Clip(given)
	if slices.IsSorted(given) && len(slices.Compact(slices.Clone(given))) == len(given) {
		return &setValue{strs: given}
	}
	s := slices.Clone(given)
	slices.Sort(s)
	return &setValue{strs: slices.Compact(s), givenStrs: given}
}

func newIntSet(given []int64) *setValue {
	given = slices.Clip(given)
	if slices.IsSorted(given) && len(slices.Compact(slices.Clone(given))) == len(given) {
		return &setValue{ints: given}
	}
	s := slices.Clone(given)
	slices.Sort(s)
	return &setValue{ints: slices.Compact(s), givenInts: given}
}

// Type is the value's type.
func (v Value) Type() Type {
	if v.t.isValue() {
		return v.t
	}
	return typeUnknown
}

// Int is the value of an int (0 for another type).
func (v Value) Int() int64 {
	if v.t == TypeInt {
		return v.n
	}
	return 0
}

// Str is the value of a string ("" for another type).
func (v Value) Str() string { return v.s }

// Bool is the value of a bool (false for another type).
func (v Value) Bool() bool { return v.t == TypeBool && v.n != 0 }

// Strings is the elements of a set<string> as given.
func (v Value) Strings() []string {
	if v.t != TypeStringSet {
		return nil
	}
	if v.set.givenStrs != nil {
		return slices.Clone(v.set.givenStrs)
	}
	return slices.Clone(v.set.strs)
}

// Ints is the elements of a set<int> as given.
func (v Value) Ints() []int64 {
	if v.t != TypeIntSet {
		return nil
	}
	if v.set.givenInts != nil {
		return slices.Clone(v.set.givenInts)
	}
	return slices.Clone(v.set.ints)
}

// String is the value as the language writes it: 5, "M", true, {"a", "b"}.
func (v Value) String() string { return formatValue(v, 0) }

// formatValue writes v for a reason; limit > 0 cuts long sets and strings.
func formatValue(v Value, limit int) string {
	return string(appendValue(nil, v, limit))
}

// appendValue is formatValue appending to b.
func appendValue(b []byte, v Value, limit int) []byte {
	switch v.t {
	case TypeInt:
		return strconv.AppendInt(b, v.n, 10)
	case TypeString:
		if limit > 0 && len(v.s) > 4*limit {
			cut := 4 * limit
			for cut > 0 && !utf8.RuneStart(v.s[cut]) {
				cut--
			}
			return append(appendQuote(b, v.s[:cut]), "..."...)
		}
		return appendQuote(b, v.s)
	case TypeBool:
		return strconv.AppendBool(b, v.n != 0)
	case TypeStringSet, TypeIntSet:
		b = append(b, '{')
		n := v.set.len()
		for i := 0; i < n; i++ {
			if limit > 0 && i == limit {
				b = append(b, ", ... ("...)
				b = strconv.AppendInt(b, int64(n), 10)
				b = append(b, " in all)"...)
				break
			}
			if i > 0 {
				b = append(b, ", "...)
			}
			if v.t == TypeStringSet {
				b = appendQuote(b, v.set.strs[i])
			} else {
				b = strconv.AppendInt(b, v.set.ints[i], 10)
			}
		}
		return append(b, '}')
	}
	return append(b, "<no value>"...)
}

// MarshalJSON writes the wire form: {"Int": 5}, {"String": "M"}, {"Bool": true},
// {"Set": {"String": [...]}} or {"Set": {"Int": [...]}}.
func (v Value) MarshalJSON() ([]byte, error) {
	return v.appendJSON(nil)
}

func (v Value) appendJSON(b []byte) ([]byte, error) {
	switch v.t {
	case TypeInt:
		b = append(b, `{"Int":`...)
		b = strconv.AppendInt(b, v.n, 10)
	case TypeString:
		b = append(b, `{"String":`...)
		b = append(b, quote(v.s)...)
	case TypeBool:
		b = append(b, `{"Bool":`...)
		b = strconv.AppendBool(b, v.n != 0)
	case TypeStringSet:
		b = append(b, `{"Set":{"String":[`...)
		for i, s := range v.Strings() {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, quote(s)...)
		}
		b = append(b, "]}"...)
	case TypeIntSet:
		b = append(b, `{"Set":{"Int":[`...)
		for i, n := range v.Ints() {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, n, 10)
		}
		b = append(b, "]}"...)
	default:
		return nil, errors.New("policy: marshaling the zero Value")
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads one wire value, as strictly as DecodeAttrs.
func (v *Value) UnmarshalJSON(data []byte) error {
	d := strictjson.NewDecoder(data)
	defer d.Release()
	val, err := readValue(d, "")
	if err == nil {
		err = d.End("")
	}
	if err != nil {
		return fieldError(err)
	}
	*v = val
	return nil
}

func (v Value) equal(w Value) bool {
	if v.t != w.t || v.n != w.n || v.s != w.s {
		return false
	}
	if v.set == nil || w.set == nil {
		return v.set == w.set
	}
	return slices.Equal(v.set.strs, w.set.strs) && slices.Equal(v.set.ints, w.set.ints)
}

// Attrs are an intent's attribute values by name: the ObjectValue of the wire,
// {"fields": {"size": {"String": "M"}, ...}}.
type Attrs map[string]Value

// MarshalJSON writes the wire form, fields sorted by name.
func (a Attrs) MarshalJSON() ([]byte, error) {
	names := make([]string, 0, len(a))
	for n := range a {
		names = append(names, n)
	}
	sort.Strings(names)
	b := []byte(`{"fields":{`)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, quote(n)...)
		b = append(b, ':')
		var err error
		if b, err = a[n].appendJSON(b); err != nil {
			return nil, fmt.Errorf("policy: attribute %q: %w", n, err)
		}
	}
	return append(b, "}}"...), nil
}

// UnmarshalJSON decodes with DecodeAttrs.
func (a *Attrs) UnmarshalJSON(data []byte) error {
	v, err := DecodeAttrs(data)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// DecodeAttrs reads the wire form of attrs strictly: an object with exactly the key
// "fields", each field one variant object (Int, String, Bool or Set) with a value of its
// type; no null, no unknown key, no repeated key, no more than MaxAttrFields fields,
// integers written as integers in the int64 range. Errors are *FieldError values naming
// the offending field.
func DecodeAttrs(data []byte) (Attrs, error) {
	d := strictjson.NewDecoder(data)
	defer d.Release()
	attrs, err := readAttrs(d)
	if err == nil {
		err = d.End("")
	}
	if err != nil {
		return nil, fieldError(err)
	}
	return attrs, nil
}

// MaxAttrFields bounds the fields DecodeAttrs reads. A policy declares at most
// MaxParameters, so attrs with more fields match none; the bound is well above that,
// so that a server's own limit on attrs (which may be set higher than MaxParameters)
// still answers for any attrs a client could mean to send, and an object of a hundred
// thousand names is refused after a thousand of them rather than read into a map.
const MaxAttrFields = 8 * MaxParameters

// The objects of the wire with fixed keys are read with a bound of one member more than
// they may hold, so that the member too many is named by the check that refuses it
// (unknown key, two variants) rather than by a count.
const (
	maxAttrsKeys   = 2 // fields
	maxVariantKeys = 2 // one of Int, String, Bool, Set
)

// Attrs are read for every intent submitted, so they are read as a stream of tokens,
// each checked as it comes, rather than value by value.

func readAttrs(d *strictjson.Decoder) (Attrs, error) {
	if err := open(d, "", "attrs"); err != nil {
		return nil, err
	}
	var attrs Attrs
	err := d.Object("", maxAttrsKeys, func(key string) error {
		if key != "fields" {
			return &FieldError{Field: key, Reason: "unknown key (an ObjectValue has only fields)"}
		}
		var err error
		attrs, err = readFields(d)
		return err
	})
	if err != nil {
		return nil, err
	}
	if attrs == nil {
		return nil, &FieldError{Field: "fields", Reason: "missing (want an object of attribute values)"}
	}
	return attrs, nil
}

func readFields(d *strictjson.Decoder) (Attrs, error) {
	if err := open(d, "fields", "fields"); err != nil {
		return nil, err
	}
	attrs := Attrs{}
	err := d.Object("fields", MaxAttrFields, func(name string) error {
		v, err := readValue(d, strictjson.Join("fields", name))
		if err != nil {
			return err
		}
		attrs[name] = v
		return nil
	})
	return attrs, err
}

// open checks that the next value is an object, and otherwise says what it is instead.
func open(d *strictjson.Decoder, path, what string) error {
	if d.PeekKind() == '{' {
		return nil
	}
	t, err := d.Token(path)
	if err != nil {
		return err
	}
	return &FieldError{Field: path, Reason: "want " + what + " as a JSON object, got " + gotToken(t)}
}

// gotToken names a token for a "got ..." message.
func gotToken(t jsontext.Token) string {
	switch t.Kind() {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '0':
		return "the number " + t.String()
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "'" + t.String() + "'"
}

// fieldError words a refusal of the reader as a FieldError.
func fieldError(err error) error {
	var e *strictjson.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Fault {
	case strictjson.InvalidUTF8:
		// The text as a whole is at fault, wherever the bytes are.
		return &FieldError{Reason: "invalid UTF-8 in the JSON text"}
	case strictjson.Truncated:
		return &FieldError{Field: e.Path, Reason: "unexpected end of JSON"}
	case strictjson.Trailing:
		return &FieldError{Field: e.Path, Reason: "unexpected data after the JSON value"}
	case strictjson.Syntax, strictjson.LoneSurrogate:
		return &FieldError{Field: e.Path, Reason: "invalid JSON: " + e.Detail}
	case strictjson.Duplicate:
		return &FieldError{Field: e.Path, Reason: "repeated key"}
	case strictjson.TooMany:
		return &FieldError{Field: e.Path, Reason: fmt.Sprintf(
			"more than %d fields (a policy declares at most %d parameters)", e.Limit, MaxParameters)}
	}
	return &FieldError{Field: e.Path, Reason: e.Reason()}
}

const variants = "Int, String, Bool or Set"

// readValue reads one variant object at path.
func readValue(d *strictjson.Decoder, path string) (Value, error) {
	if err := open(d, path, "a value ({\"Int\": ...}, {\"String\": ...}, {\"Bool\": ...} or {\"Set\": ...})"); err != nil {
		return Value{}, err
	}
	var v Value
	var first string
	err := d.Object(path, maxVariantKeys, func(k string) error {
		if first != "" {
			return &FieldError{Field: path, Reason: fmt.Sprintf("two variants, %s and %s (want exactly one of %s)", first, k, variants)}
		}
		first = k
		p := strictjson.Join(path, k)
		var err error
		switch k {
		case "Int":
			var n int64
			n, err = readInt(d, p)
			v = IntValue(n)
		case "String":
			var s string
			s, err = readString(d, p)
			v = StringValue(s)
		case "Bool":
			var t jsontext.Token
			if t, err = d.Token(p); err == nil {
				if kind := t.Kind(); kind != 't' && kind != 'f' {
					return &FieldError{Field: p, Reason: "want true or false, got " + gotToken(t)}
				}
				v = BoolValue(t.Bool())
			}
		case "Set":
			v, err = readSet(d, p)
		default:
			return &FieldError{Field: p, Reason: "unknown variant (want " + variants + ")"}
		}
		return err
	})
	if err != nil {
		return Value{}, err
	}
	if first == "" {
		return Value{}, &FieldError{Field: path, Reason: "empty object (want exactly one of " + variants + ")"}
	}
	return v, nil
}

func readInt(d *strictjson.Decoder, path string) (int64, error) {
	t, err := d.Token(path)
	if err != nil {
		return 0, err
	}
	if t.Kind() != '0' {
		return 0, &FieldError{Field: path, Reason: "want an integer, got " + gotToken(t)}
	}
	n, bad := parseInteger(t.String())
	if bad != "" {
		return 0, &FieldError{Field: path, Reason: "want an integer, got " + bad}
	}
	return n, nil
}

// parseInteger reads a JSON number that must be an integer in the int64 range: no
// fraction and no exponent, even when the value would be whole ("2e3", "2.0"). When
// it is not, the second result describes the number for a "got ..." message.
func parseInteger(s string) (int64, string) {
	if strings.ContainsAny(s, ".eE") {
		return 0, s + " (a number with a fraction or an exponent)"
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, s + " (out of the int64 range)"
	}
	return n, ""
}

func readString(d *strictjson.Decoder, path string) (string, error) {
	t, err := d.Token(path)
	if err != nil {
		return "", err
	}
	if t.Kind() != '"' {
		return "", &FieldError{Field: path, Reason: "want a string, got " + gotToken(t)}
	}
	return t.String(), nil
}

func readSet(d *strictjson.Decoder, path string) (Value, error) {
	if err := open(d, path, `a set ({"String": [...]} or {"Int": [...]})`); err != nil {
		return Value{}, err
	}
	var v Value
	var first string
	err := d.Object(path, maxVariantKeys, func(k string) error {
		if first != "" {
			return &FieldError{Field: path, Reason: fmt.Sprintf("two element types, %s and %s (want exactly one of String or Int)", first, k)}
		}
		first = k
		p := strictjson.Join(path, k)
		if k != "String" && k != "Int" {
			return &FieldError{Field: p, Reason: "unknown set element type (want String or Int)"}
		}
		if d.PeekKind() != '[' {
			t, err := d.Token(p)
			if err != nil {
				return err
			}
			return &FieldError{Field: p, Reason: "want an array, got " + gotToken(t)}
		}
		var strs []string
		var ints []int64
		err := d.Array(p, func(i int) error {
			ep := strictjson.Index(p, i)
			if k == "String" {
				s, err := readString(d, ep)
				strs = append(strs, s)
				return err
			}
			n, err := readInt(d, ep)
			ints = append(ints, n)
			return err
		})
		if err != nil {
			return err
		}
		if k == "String" {
			v = StringSetValue(strs...)
		} else {
			v = IntSetValue(ints...)
		}
		return nil
	})
	if err != nil {
		return Value{}, err
	}
	if first == "" {
		return Value{}, &FieldError{Field: path, Reason: "empty object (want exactly one of String or Int)"}
	}
	return v, nil
}

// CheckAttrs checks attrs against the declared parameters: each required one present,
// none unknown, each of its declared type. The first problem, in the order of names,
// is returned as a *FieldError.
func (p *Policy) CheckAttrs(a Attrs) error {
	var errs []*FieldError
	for _, d := range p.params {
		v, ok := a[d.Name]
		switch {
		case !ok && !d.Optional:
			errs = append(errs, &FieldError{Field: "fields." + d.Name, Reason: fmt.Sprintf("missing: the policy requires parameter %s (%s)", d.Name, d.Type)})
		case ok && v.Type() != d.Type:
			errs = append(errs, &FieldError{Field: "fields." + d.Name, Reason: fmt.Sprintf("want %s, got %s", d.Type, describeType(v))})
		}
	}
	for name := range a {
		if _, ok := p.param(name); !ok {
			errs = append(errs, &FieldError{Field: "fields." + name, Reason: "unknown attribute (" + p.paramList() + ")"})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(x, y *FieldError) int { return strings.Compare(x.Field, y.Field) })
	return errs[0]
}

func describeType(v Value) string {
	if t := v.Type(); t != typeUnknown {
		return t.String()
	}
	return "no value"
}

func (p *Policy) param(name string) (Param, bool) {
	i, ok := slices.BinarySearchFunc(p.params, name, func(d Param, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return Param{}, false
	}
	return p.params[i], true
}

func (p *Policy) paramList() string {
	if len(p.params) == 0 {
		return "the policy declares no parameters"
	}
	names := make([]string, len(p.params))
	for i, d := range p.params {
		names[i] = d.Name
	}
	return "the policy's parameters are " + strings.Join(names, ", ")
}
