package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
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
	switch v.t {
	case TypeInt:
		return strconv.FormatInt(v.n, 10)
	case TypeString:
		if limit > 0 && len(v.s) > 4*limit {
			cut := 4 * limit
			for cut > 0 && !utf8.RuneStart(v.s[cut]) {
				cut--
			}
			return quote(v.s[:cut]) + "..."
		}
		return quote(v.s)
	case TypeBool:
		return strconv.FormatBool(v.n != 0)
	case TypeStringSet, TypeIntSet:
		var b strings.Builder
		b.WriteByte('{')
		n := v.set.len()
		for i := 0; i < n; i++ {
			if limit > 0 && i == limit {
				fmt.Fprintf(&b, ", ... (%d in all)", n)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			if v.t == TypeStringSet {
				b.WriteString(quote(v.set.strs[i]))
			} else {
				b.WriteString(strconv.FormatInt(v.set.ints[i], 10))
			}
		}
		b.WriteByte('}')
		return b.String()
	}
	return "<no value>"
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
	d := newJSONReader(data)
	defer d.release()
	val, err := d.value("")
	if err == nil {
		err = d.end("")
	}
	if err != nil {
		return err
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
// type; no null, no unknown key, no repeated key, integers written as integers in the
// int64 range. Errors are *FieldError values naming the offending field.
func DecodeAttrs(data []byte) (Attrs, error) {
	d := newJSONReader(data)
	defer d.release()
	if err := d.open("", "attrs"); err != nil {
		return nil, err
	}
	var attrs Attrs
	seen := map[string]bool{}
	for d.more() {
		key, err := d.key("", seen)
		if err != nil {
			return nil, err
		}
		if key != "fields" {
			return nil, &FieldError{Field: key, Reason: "unknown key (an ObjectValue has only fields)"}
		}
		if attrs, err = d.fields(); err != nil {
			return nil, err
		}
	}
	if err := d.close(""); err != nil {
		return nil, err
	}
	if attrs == nil {
		return nil, &FieldError{Field: "fields", Reason: "missing (want an object of attribute values)"}
	}
	if err := d.end(""); err != nil {
		return nil, err
	}
	return attrs, nil
}

// jsonReader walks JSON tokens with the path of where it is, for error messages. It
// reads with jsontext, which does not allocate for each token as encoding/json does
// (attrs are read for every intent submitted), and hands the tokens on in encoding/json's
// types.
type jsonReader struct {
	dec jsontext.Decoder
	bad bool // the input is not valid UTF-8
}

// readers keeps decoders, and their buffers, from one read to the next.
var readers = sync.Pool{New: func() any { return new(jsonReader) }}

// newJSONReader returns a reader of data, to be released when done.
func newJSONReader(data []byte) *jsonReader {
	d := readers.Get().(*jsonReader)
	// From a bytes.Buffer jsontext reads in place instead of copying. Repeated keys are
	// let through so that the reader can name them with their path.
	d.dec.Reset(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true))
	// Attrs are signed, so a value that would not marshal back to the bytes it came from
	// is refused: invalid UTF-8 here, lone surrogate escapes by jsontext.
	d.bad = !utf8.Valid(data)
	return d
}

// release returns the reader to the pool, holding on to nothing of its input.
func (d *jsonReader) release() {
	d.dec.Reset(emptyInput)
	readers.Put(d)
}

var emptyInput = bytes.NewReader(nil)

// token reads the next token as encoding/json's Token would have it: a json.Delim, a
// string, a json.Number, a bool or nil.
func (d *jsonReader) token(path string) (json.Token, error) {
	if d.bad {
		return nil, &FieldError{Field: path, Reason: "invalid UTF-8 in the JSON text"}
	}
	t, err := d.dec.ReadToken()
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, &FieldError{Field: path, Reason: "unexpected end of JSON"}
	}
	if err != nil {
		return nil, &FieldError{Field: path, Reason: "invalid JSON: " + strings.TrimPrefix(err.Error(), "jsontext: ")}
	}
	switch k := t.Kind(); k {
	case '{', '}', '[', ']':
		return json.Delim(k), nil
	case '"':
		return t.String(), nil
	case '0':
		return json.Number(t.String()), nil
	case 't', 'f':
		return t.Bool(), nil
	}
	return nil, nil
}

func (d *jsonReader) open(path, what string) error {
	t, err := d.token(path)
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return &FieldError{Field: path, Reason: "want " + what + " as a JSON object, got " + jsonKind(t)}
	}
	return nil
}

// more reports whether the array or object being read has another element. At a fault
// it says yes, so that the caller's next read reports it.
func (d *jsonReader) more() bool {
	k := d.dec.PeekKind()
	return k != '}' && k != ']'
}

func (d *jsonReader) close(path string) error {
	t, err := d.token(path)
	if err != nil {
		return err
	}
	if t != json.Delim('}') {
		return &FieldError{Field: path, Reason: "want the end of the object, got " + jsonKind(t)}
	}
	return nil
}

func (d *jsonReader) key(path string, seen map[string]bool) (string, error) {
	t, err := d.token(path)
	if err != nil {
		return "", err
	}
	k, ok := t.(string)
	if !ok {
		return "", &FieldError{Field: path, Reason: "want an object key, got " + jsonKind(t)}
	}
	if seen[k] {
		return "", &FieldError{Field: join(path, k), Reason: "repeated key"}
	}
	seen[k] = true
	return k, nil
}

func (d *jsonReader) end(path string) error {
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return &FieldError{Field: path, Reason: "unexpected data after the JSON value"}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func jsonKind(t json.Token) string {
	switch t := t.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + t.String()
	case string:
		return "a string"
	case json.Delim:
		switch t {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return "'" + t.String() + "'"
	}
	return fmt.Sprintf("%T", t)
}

func (d *jsonReader) fields() (Attrs, error) {
	if err := d.open("fields", "fields"); err != nil {
		return nil, err
	}
	attrs := Attrs{}
	seen := map[string]bool{}
	for d.more() {
		name, err := d.key("fields", seen)
		if err != nil {
			return nil, err
		}
		v, err := d.value("fields." + name)
		if err != nil {
			return nil, err
		}
		attrs[name] = v
	}
	return attrs, d.close("fields")
}

const variants = "Int, String, Bool or Set"

// value reads one variant object at path.
func (d *jsonReader) value(path string) (Value, error) {
	if err := d.open(path, "a value ({\"Int\": ...}, {\"String\": ...}, {\"Bool\": ...} or {\"Set\": ...})"); err != nil {
		return Value{}, err
	}
	var v Value
	var first string
	seen := map[string]bool{}
	for d.more() {
		k, err := d.key(path, seen)
		if err != nil {
			return Value{}, err
		}
		if first != "" {
			return Value{}, &FieldError{Field: path, Reason: fmt.Sprintf("two variants, %s and %s (want exactly one of %s)", first, k, variants)}
		}
		first = k
		p := join(path, k)
		switch k {
		case "Int":
			n, err := d.int(p)
			if err != nil {
				return Value{}, err
			}
			v = IntValue(n)
		case "String":
			s, err := d.str(p)
			if err != nil {
				return Value{}, err
			}
			v = StringValue(s)
		case "Bool":
			t, err := d.token(p)
			if err != nil {
				return Value{}, err
			}
			b, ok := t.(bool)
			if !ok {
				return Value{}, &FieldError{Field: p, Reason: "want true or false, got " + jsonKind(t)}
			}
			v = BoolValue(b)
		case "Set":
			if v, err = d.set(p); err != nil {
				return Value{}, err
			}
		default:
			return Value{}, &FieldError{Field: p, Reason: "unknown variant (want " + variants + ")"}
		}
	}
	if first == "" {
		return Value{}, &FieldError{Field: path, Reason: "empty object (want exactly one of " + variants + ")"}
	}
	return v, d.close(path)
}

func (d *jsonReader) int(path string) (int64, error) {
	t, err := d.token(path)
	if err != nil {
		return 0, err
	}
	num, ok := t.(json.Number)
	if !ok {
		return 0, &FieldError{Field: path, Reason: "want an integer, got " + jsonKind(t)}
	}
	n, bad := parseInteger(string(num))
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

func (d *jsonReader) str(path string) (string, error) {
	t, err := d.token(path)
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", &FieldError{Field: path, Reason: "want a string, got " + jsonKind(t)}
	}
	return s, nil
}

func (d *jsonReader) set(path string) (Value, error) {
	if err := d.open(path, `a set ({"String": [...]} or {"Int": [...]})`); err != nil {
		return Value{}, err
	}
	var v Value
	var first string
	seen := map[string]bool{}
	for d.more() {
		k, err := d.key(path, seen)
		if err != nil {
			return Value{}, err
		}
		if first != "" {
			return Value{}, &FieldError{Field: path, Reason: fmt.Sprintf("two element types, %s and %s (want exactly one of String or Int)", first, k)}
		}
		first = k
		p := join(path, k)
		if k != "String" && k != "Int" {
			return Value{}, &FieldError{Field: p, Reason: "unknown set element type (want String or Int)"}
		}
		t, err := d.token(p)
		if err != nil {
			return Value{}, err
		}
		if t != json.Delim('[') {
			return Value{}, &FieldError{Field: p, Reason: "want an array, got " + jsonKind(t)}
		}
		var strs []string
		var ints []int64
		for i := 0; d.more(); i++ {
			ep := p + "[" + strconv.Itoa(i) + "]"
			if k == "String" {
				s, err := d.str(ep)
				if err != nil {
					return Value{}, err
				}
				strs = append(strs, s)
			} else {
				n, err := d.int(ep)
				if err != nil {
					return Value{}, err
				}
				ints = append(ints, n)
			}
		}
		if _, err := d.token(p); err != nil { // ']'
			return Value{}, err
		}
		if k == "String" {
			v = StringSetValue(strs...)
		} else {
			v = IntSetValue(ints...)
		}
	}
	if first == "" {
		return Value{}, &FieldError{Field: path, Reason: "empty object (want exactly one of String or Int)"}
	}
	return v, d.close(path)
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
