package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/intentd/intentd/internal/strictjson"
)

// Type is the type of a value in the language. The zero value is not a type: it
// stands for "not known yet" while the checker infers evidence types.
type Type uint8

// The types of the language. Their numbers are written into bytecode, so they never
// change; a new type gets a new number (and a new bytecode version).
const (
	TypeInt       Type = 1 // signed 64-bit integer
	TypeString    Type = 2 // UTF-8 text
	TypeBool      Type = 3 // true or false
	TypeStringSet Type = 4 // set<string>
	TypeIntSet    Type = 5 // set<int>
	// TypeAny is an evidence field of the older dialect whose type the checker could not
	// infer: its value is checked when the constraint runs.
	TypeAny Type = 6

	typeUnknown Type = 0 // during inference only
	// Internal kinds of a loaded value slot: they never appear as a static type.
	typeAbsent Type = 7 // the attribute or evidence field is not there
	typeBad    Type = 8 // present, but not a value of the slot's type
)

// String returns the type as the language spells it.
func (t Type) String() string {
	switch t {
	case TypeInt:
		return "int"
	case TypeString:
		return "string"
	case TypeBool:
		return "bool"
	case TypeStringSet:
		return "set<string>"
	case TypeIntSet:
		return "set<int>"
	case TypeAny:
		return "any"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// WireName returns the name an extractor request uses for the type.
func (t Type) WireName() string {
	switch t {
	case TypeInt:
		return "integer"
	case TypeString:
		return "string"
	case TypeBool:
		return "boolean"
	case TypeStringSet:
		return "string_set"
	case TypeIntSet:
		return "integer_set"
	case TypeAny:
		return "any"
	}
	return t.String()
}

// TypeFromWireName is the inverse of WireName, for readers of an extractor request.
func TypeFromWireName(name string) (Type, bool) {
	for t := TypeInt; t <= TypeAny; t++ {
		if t.WireName() == name {
			return t, true
		}
	}
	return typeUnknown, false
}

func (t Type) isSet() bool { return t == TypeStringSet || t == TypeIntSet }

// isValue reports whether t is a type a value can have (not any, not a slot kind).
func (t Type) isValue() bool { return t >= TypeInt && t <= TypeIntSet }

// elem is the element type of a set type.
func (t Type) elem() Type {
	switch t {
	case TypeStringSet:
		return TypeString
	case TypeIntSet:
		return TypeInt
	}
	return typeUnknown
}

// setOf is the set type whose elements have type t, or typeUnknown.
func setOf(t Type) Type {
	switch t {
	case TypeString:
		return TypeStringSet
	case TypeInt:
		return TypeIntSet
	}
	return typeUnknown
}

// Param is a declared parameter: a value an intent's attrs carry.
type Param struct {
	Name     string
	Type     Type
	Optional bool // an intent may omit it
}

// Field is an evidence field and the type the policy wants for it.
type Field struct {
	Name string
	Type Type
}

// The limits of the language. Beyond each one Compile answers with an error that names it,
// and Decode refuses bytecode that exceeds it.
const (
	MaxSourceBytes   = 64 << 10
	MaxConstraints   = 256
	MaxParameters    = 128
	MaxEvidence      = 256
	MaxDepth         = 64
	MaxStringBytes   = 4 << 10
	MaxSetElements   = 1024
	maxExtractorName = 64
	maxErrors        = 10
)

// Pos is a position in the source: line and column, both from 1. Columns count
// characters (Unicode code points), so a caret lines up under non-ASCII text too.
type Pos struct {
	Line, Col int
}

// String is "line:col".
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

func (p Pos) before(q Pos) bool { return p.Line < q.Line || p.Line == q.Line && p.Col < q.Col }

// Error is one compile error at a position of the source.
type Error struct {
	Pos Pos
	Msg string
}

// Error is "line:col: message".
func (e *Error) Error() string {
	if e.Pos.Line == 0 {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

// ErrorList is what Compile returns on failure: every error found, sorted by position.
type ErrorList []*Error

// Error is every error, one a line.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Detail renders the errors for a reader of src: each message, then the source line it
// points into and a caret under the spot.
func (l ErrorList) Detail(src string) string {
	lines := strings.Split(src, "\n")
	var b strings.Builder
	for _, e := range l {
		b.WriteString(e.Error())
		b.WriteByte('\n')
		if e.Pos.Line < 1 || e.Pos.Line > len(lines) {
			continue
		}
		line := strings.TrimRight(lines[e.Pos.Line-1], "\r")
		b.WriteString("    ")
		b.WriteString(line)
		b.WriteString("\n    ")
		col := 1
		for _, r := range line {
			if col >= e.Pos.Col {
				break
			}
			if r == '\t' {
				b.WriteByte('\t')
			} else {
				b.WriteByte(' ')
			}
			col++
		}
		b.WriteString("^\n")
	}
	return b.String()
}

// errList collects errors while compiling.
type errList struct {
	list ErrorList
}

func (l *errList) add(p Pos, format string, args ...any) {
	l.list = append(l.list, &Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

func (l *errList) full() bool { return len(l.list) >= maxErrors }

// err returns the sorted list, or nil when there is none. Past maxErrors the rest is
// summed up in one last entry: a source of garbage gets a short answer.
func (l *errList) err() error {
	if len(l.list) == 0 {
		return nil
	}
	sort.SliceStable(l.list, func(i, j int) bool { return l.list[i].Pos.before(l.list[j].Pos) })
	if n := len(l.list); n > maxErrors {
		rest := &Error{Pos: l.list[maxErrors].Pos, Msg: fmt.Sprintf("too many errors (%d more)", n-maxErrors)}
		l.list = append(l.list[:maxErrors:maxErrors], rest)
	}
	return l.list
}

// FieldError says which field of an input (attrs, evidence) is wrong and why. Field is a
// path such as "fields.colors.Set.String[2]".
type FieldError = strictjson.FieldError
