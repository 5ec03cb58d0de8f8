// Package strictjson is the one reader of JSON that comes from outside the service:
// request bodies, intents and their attrs, authorships, proof bundles.
//
// It exists so that every decoder refuses the same things in the same way, in time
// linear in its input. Before it, four decoders each read JSON with helpers of their
// own, and one of them compared every member name with every earlier one, so that an
// object of 90,000 names held a core for seconds. Here a repeated name is found with a
// set, each object's members are bounded by a limit its caller chooses, and the text
// is held to RFC 8259 as jsontext holds it: invalid UTF-8 and escaped lone surrogates
// are refused, not mended into U+FFFD, so that what is stored or signed is what was sent.
//
// A refusal is an *Error that names its Fault and the dotted path of the value at fault
// (intent.attrs.fields.size, Signed.Multisig.signatures[1]), the form docs/api.md
// documents; each caller words it for its own clients.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"
)

// Fault is the kind of a refusal.
type Fault uint8

// The faults. Syntax, Truncated, Trailing, InvalidUTF8 and LoneSurrogate are faults of
// text that is not JSON at all; the others are of JSON of the wrong shape.
const (
	// Syntax is text that does not parse: a character out of place, a bad escape.
	Syntax Fault = iota + 1
	// Truncated is text that ends inside a value, or holds no value at all.
	Truncated
	// Trailing is anything but white space after the value.
	Trailing
	// InvalidUTF8 is a string or name that is not valid UTF-8.
	InvalidUTF8
	// LoneSurrogate is a \u escape of half a surrogate pair.
	LoneSurrogate
	// TooDeep is nesting past the limit given to ReadValue.
	TooDeep
	// NotObject is a value other than an object where an object is read.
	NotObject
	// NotArray is a value other than an array where an array is read.
	NotArray
	// Duplicate is a name given twice in one object.
	Duplicate
	// TooMany is an object with more members than its reader allows.
	TooMany
)

// Error is a refusal of the text. Its message is a plain default; callers that answer
// clients choose their own words from the fields.
type Error struct {
	Fault Fault
	// Path is the dotted path of the value at fault, or of the object whose member is
	// (a Duplicate names the member): "" is the whole text.
	Path string
	// Detail is jsontext's account of text that is not JSON (without its package
	// name), with the offset where it stopped.
	Detail string
	// Escape is a LoneSurrogate's escape as written, such as \ud800.
	Escape string
	// Kind is the kind of value a NotObject or NotArray found.
	Kind jsontext.Kind
	// Limit is the bound a TooMany or TooDeep passed.
	Limit int
}

// Error is "path: reason", or the reason alone for the whole text.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason()
	}
	return e.Path + ": " + e.Reason()
}

// Reason says what is wrong without saying where.
func (e *Error) Reason() string {
	switch e.Fault {
	case Trailing:
		return "not valid JSON: data after the value"
	case TooDeep:
		return fmt.Sprintf("nested more than %d levels deep", e.Limit)
	case NotObject:
		return "must be a JSON object, got " + KindName(e.Kind)
	case NotArray:
		return "must be a JSON array, got " + KindName(e.Kind)
	case Duplicate:
		return "duplicate key"
	case TooMany:
		return fmt.Sprintf("more than %d members", e.Limit)
	}
	return "not valid JSON: " + e.Detail
}

// NotJSON reports whether the text is refused for not being JSON, rather than for the
// shape of the JSON it is.
func (e *Error) NotJSON() bool { return e.Fault <= LoneSurrogate }

// KindName names a kind of JSON value as messages do: "object", "array", "string",
// "number", "boolean" or "null".
func KindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "nothing"
}

// Join is the path of the member name of the object at path.
func Join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// Index is the path of element i of the array at path.
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// Member is one member of an object: its name unescaped, and its value as written,
// a slice of the text read.
type Member struct {
	Name  string
	Value jsontext.Value
}

// Decoder reads one JSON text token by token, for a caller that walks it as it reads:
// faults come in the order of the text. NewDecoder takes one from a pool and Release
// gives it back.
type Decoder struct {
	dec  jsontext.Decoder
	data []byte
}

var decoders = sync.Pool{New: func() any { return new(Decoder) }}

// emptyInput is what a pooled decoder is left reading, so that it holds on to no text.
var emptyInput = bytes.NewReader(nil)

// NewDecoder returns a Decoder of data, which must not change while it is read.
func NewDecoder(data []byte) *Decoder {
	d := decoders.Get().(*Decoder)
	d.data = data
	// From a bytes.Buffer jsontext reads in place instead of copying. Its own check of
	// repeated names is left off: it would refuse them inside every value read whole,
	// where the value's own reader names them in its words. Object refuses them in the
	// objects it reads.
	d.dec.Reset(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true))
	return d
}

// Release returns d to the pool; d must not be used after.
func (d *Decoder) Release() {
	d.dec.Reset(emptyInput)
	d.data = nil
	decoders.Put(d)
}

// PeekKind is the kind of the next value, or 0 when the text there is at fault (the
// next read says how).
func (d *Decoder) PeekKind() jsontext.Kind { return d.dec.PeekKind() }

// Token reads the next token, good until the next read; path names where it is for a
// refusal.
func (d *Decoder) Token(path string) (jsontext.Token, error) {
	t, err := d.dec.ReadToken()
	if err != nil {
		return t, d.fault(path, err)
	}
	return t, nil
}

// Value reads the next value whole, returned as the slice of the text it is.
func (d *Decoder) Value(path string) (jsontext.Value, error) {
	v, err := d.value()
	if err != nil {
		return nil, d.fault(path, err)
	}
	return v, nil
}

func (d *Decoder) value() (jsontext.Value, error) {
	v, err := d.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	end := int(d.dec.InputOffset())
	return jsontext.Value(d.data[end-len(v) : end : end]), nil
}

// Object reads the object at path, calling member with each name in the order of the
// text; member must read that member's value. A repeated name and the member past the
// first max are refused before member sees them: the names are kept in a set, so that
// each costs the same however many came before. A caller that checks each name as it
// comes can pass one more than the members a valid object has, so that its own check,
// which says more, names the member too many.
func (d *Decoder) Object(path string, max int, member func(name string) error) error {
	if k := d.dec.PeekKind(); k != '{' {
		return d.notA(path, k, NotObject)
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.fault(path, err)
	}
	var names nameSet
	for n := 0; d.dec.PeekKind() != '}'; n++ {
		t, err := d.dec.ReadToken()
		if err != nil {
			return d.fault(path, err)
		}
		name := t.String()
		if n == max {
			return &Error{Fault: TooMany, Path: path, Limit: max}
		}
		if !names.add(name) {
			return &Error{Fault: Duplicate, Path: Join(path, name)}
		}
		if err := member(name); err != nil {
			return err
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.fault(path, err)
	}
	return nil
}

// Array reads the array at path, calling element with the index of each element;
// element must read that element.
func (d *Decoder) Array(path string, element func(i int) error) error {
	if k := d.dec.PeekKind(); k != '[' {
		return d.notA(path, k, NotArray)
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.fault(path, err)
	}
	for i := 0; d.dec.PeekKind() != ']'; i++ {
		if err := element(i); err != nil {
			return err
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.fault(path, err)
	}
	return nil
}

// notA refuses the value of kind k where another kind was wanted, or says what is at
// fault when there is no value there.
func (d *Decoder) notA(path string, k jsontext.Kind, fault Fault) error {
	if k == 0 {
		_, err := d.dec.ReadToken()
		return d.fault(path, err)
	}
	return &Error{Fault: fault, Path: path, Kind: k}
}

// End refuses anything but white space after the value read.
func (d *Decoder) End(path string) error {
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return &Error{Fault: Trailing, Path: path}
	}
	return nil
}

// settle ends a read of the whole text whose value was read with the error err: on
// success it refuses data after the value, and when the shape was refused it reads
// the rest of the text, so that text that is not JSON is refused as such wherever the
// fault in it is.
func (d *Decoder) settle(path string, err error) error {
	if err == nil {
		return d.End(path)
	}
	if e, ok := err.(*Error); ok && e.NotJSON() {
		return err
	}
	if serr := d.finish(path); serr != nil {
		return serr
	}
	return err
}

// finish reads what is left of the text after the shape of its value was refused.
func (d *Decoder) finish(path string) error {
	if d.dec.StackDepth() == 0 {
		// The value was refused before it was begun.
		if err := d.dec.SkipValue(); err != nil {
			return d.fault(path, err)
		}
	}
	for d.dec.StackDepth() > 0 {
		var err error
		if k := d.dec.PeekKind(); k == '{' || k == '[' {
			err = d.dec.SkipValue()
		} else {
			_, err = d.dec.ReadToken()
		}
		if err != nil {
			return d.fault(path, err)
		}
	}
	return d.End(path)
}

// fault turns an error of jsontext into a refusal at path.
func (d *Decoder) fault(path string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Fault: Syntax, Path: path, Detail: strings.TrimPrefix(err.Error(), "jsontext: ")}
	var se *jsontext.SyntacticError
	switch {
	case err == io.EOF:
		e.Fault, e.Detail = Truncated, "unexpected EOF"
	case errors.Is(err, io.ErrUnexpectedEOF):
		e.Fault = Truncated
	case errors.As(err, &se) && se.Err != nil && se.Err.Error() == "invalid UTF-8":
		// jsontext does not export this error; its text is all there is to go by.
		e.Fault = InvalidUTF8
	case se != nil:
		if esc := surrogateAt(d.data, se.ByteOffset); esc != "" {
			e.Fault, e.Escape = LoneSurrogate, esc
		}
	}
	return e
}

// surrogateAt returns the escape of a surrogate that starts at off in data, or "".
// jsontext puts the offset of a bad escape at its backslash.
func surrogateAt(data []byte, off int64) string {
	if off < 0 || off+6 > int64(len(data)) || data[off] != '\\' || data[off+1] != 'u' {
		return ""
	}
	esc := string(data[off : off+6])
	r, err := strconv.ParseUint(esc[2:], 16, 16)
	if err != nil || !utf16.IsSurrogate(rune(r)) {
		return ""
	}
	return esc
}

// nameSet holds the names of one object. The first few are searched in place, which
// for the objects of a few members valid input has costs no allocation; past them a
// map keeps each look-up constant.
type nameSet struct {
	few  [8]string
	n    int
	many map[string]struct{}
}

// add adds name and reports whether it was not there already.
func (s *nameSet) add(name string) bool {
	if s.many != nil {
		if _, ok := s.many[name]; ok {
			return false
		}
		s.many[name] = struct{}{}
		return true
	}
	for _, f := range s.few[:s.n] {
		if f == name {
			return false
		}
	}
	if s.n < len(s.few) {
		s.few[s.n] = name
		s.n++
		return true
	}
	s.many = make(map[string]struct{}, 2*len(s.few))
	for _, f := range s.few {
		s.many[f] = struct{}{}
	}
	s.many[name] = struct{}{}
	return true
}

// Members reads data, which must be exactly one JSON object, calling fn with each
// member in the order of the text. It refuses the object's repeated names and its
// members past the first max as Object does; the values are read whole but not looked
// into. Text that is not JSON is refused as such even when its shape was refused (or
// fn refused a member) before the fault in it was reached, so that a caller can tell a
// client's malformed text from well-formed text of the wrong shape whatever the order.
func Members(data []byte, path string, max int, fn func(Member) error) error {
	d := NewDecoder(data)
	defer d.Release()
	return d.settle(path, d.Object(path, max, func(name string) error {
		v, err := d.value()
		if err != nil {
			return d.fault(Join(path, name), err)
		}
		return fn(Member{Name: name, Value: v})
	}))
}

// Elements reads data, which must be exactly one JSON array, calling fn with each
// element in order. Its refusals are ordered as those of Members.
func Elements(data []byte, path string, fn func(i int, v jsontext.Value) error) error {
	d := NewDecoder(data)
	defer d.Release()
	return d.settle(path, d.Array(path, func(i int) error {
		v, err := d.value()
		if err != nil {
			return d.fault(Index(path, i), err)
		}
		return fn(i, v)
	}))
}

// ReadValue reads data as exactly one JSON value of any kind, nested no more than
// maxDepth arrays and objects deep, and returns it without the white space around it.
// A caller that then walks the value with Members and Elements, each reading a part
// already read, knows that only the shape can be at fault there; maxDepth bounds how
// far a hostile text can make such a walk recurse.
func ReadValue(data []byte, maxDepth int) (jsontext.Value, error) {
	d := NewDecoder(data)
	defer d.Release()
	for {
		if _, err := d.dec.ReadToken(); err != nil {
			return nil, d.fault("", err)
		}
		depth := d.dec.StackDepth()
		if depth > maxDepth {
			return nil, &Error{Fault: TooDeep, Limit: maxDepth}
		}
		if depth == 0 {
			break
		}
	}
	if err := d.End(""); err != nil {
		return nil, err
	}
	return jsontext.Value(bytes.Trim(data, " \t\r\n")), nil
}
