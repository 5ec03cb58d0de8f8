package policy

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reading a solver's answers: s-expressions, and the values of a model in them.

// sexp is an s-expression: a list, an atom (a symbol or a numeral), or a string
// literal, decoded.
type sexp struct {
	list   []sexp
	isList bool
	atom   string
	str    string
	isStr  bool
}

// maxSexpDepth bounds the nesting of an answer: a solver prints sets as nested
// unions, one level an element.
const maxSexpDepth = 1 << 16

// parseSexp reads one s-expression and nothing after it but space.
func parseSexp(s string) (sexp, error) {
	r := sexpReader{s: s}
	x, err := r.read(0)
	if err != nil {
		return sexp{}, err
	}
	r.space()
	if r.i != len(r.s) {
		return sexp{}, fmt.Errorf("unexpected %q after the answer", r.s[r.i:min(len(r.s), r.i+20)])
	}
	return x, nil
}

type sexpReader struct {
	s string
	i int
}

func (r *sexpReader) space() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		case ';':
			for r.i < len(r.s) && r.s[r.i] != '\n' {
				r.i++
			}
		default:
			return
		}
	}
}

func (r *sexpReader) read(depth int) (sexp, error) {
	if depth > maxSexpDepth {
		return sexp{}, fmt.Errorf("answer nested deeper than %d", maxSexpDepth)
	}
	r.space()
	if r.i == len(r.s) {
		return sexp{}, fmt.Errorf("answer ends early")
	}
	switch c := r.s[r.i]; c {
	case '(':
		r.i++
		x := sexp{isList: true}
		for {
			r.space()
			if r.i == len(r.s) {
				return sexp{}, fmt.Errorf("answer ends inside a list")
			}
			if r.s[r.i] == ')' {
				r.i++
				return x, nil
			}
			y, err := r.read(depth + 1)
			if err != nil {
				return sexp{}, err
			}
			x.list = append(x.list, y)
		}
	case ')':
		return sexp{}, fmt.Errorf("unexpected ')' in the answer")
	case '"':
		return r.str()
	case '|':
		end := strings.IndexByte(r.s[r.i+1:], '|')
		if end < 0 {
			return sexp{}, fmt.Errorf("unterminated |symbol| in the answer")
		}
		x := sexp{atom: r.s[r.i+1 : r.i+1+end]}
		r.i += end + 2
		return x, nil
	default:
		start := r.i
		for r.i < len(r.s) && !strings.ContainsRune(" \t\r\n()\";|", rune(r.s[r.i])) {
			r.i++
		}
		return sexp{atom: r.s[start:r.i]}, nil
	}
}

// str reads a string literal of SMT-LIB 2.6: "" is a quote, \u{X...} and \uXXXX are
// code points, and any other backslash is itself.
func (r *sexpReader) str() (sexp, error) {
	r.i++
	var b strings.Builder
	for {
		if r.i >= len(r.s) {
			return sexp{}, fmt.Errorf("unterminated string in the answer")
		}
		c := r.s[r.i]
		switch {
		case c == '"' && r.i+1 < len(r.s) && r.s[r.i+1] == '"':
			b.WriteByte('"')
			r.i += 2
		case c == '"':
			r.i++
			return sexp{str: b.String(), isStr: true}, nil
		case c == '\\' && strings.HasPrefix(r.s[r.i:], `\u{`):
			end := strings.IndexByte(r.s[r.i:], '}')
			if end < 4 || end > 8 {
				return sexp{}, fmt.Errorf("bad escape in a string of the answer")
			}
			n, err := strconv.ParseUint(r.s[r.i+3:r.i+end], 16, 32)
			if err != nil {
				return sexp{}, fmt.Errorf("bad escape in a string of the answer")
			}
			b.WriteRune(rune(n))
			r.i += end + 1
		case c == '\\' && r.i+6 <= len(r.s) && r.s[r.i+1] == 'u' && isHex(r.s[r.i+2:r.i+6]):
			n, _ := strconv.ParseUint(r.s[r.i+2:r.i+6], 16, 32)
			b.WriteRune(rune(n))
			r.i += 6
		default:
			_, size := utf8.DecodeRuneInString(r.s[r.i:])
			b.WriteString(r.s[r.i : r.i+size])
			r.i += size
		}
	}
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(s[i])) {
			return false
		}
	}
	return true
}

// value reads a model's value of type t.
func (x sexp) value(t Type) (Value, error) {
	switch t {
	case TypeInt:
		n, err := x.int()
		return IntValue(n), err
	case TypeBool:
		if x.atom == "true" || x.atom == "false" {
			return BoolValue(x.atom == "true"), nil
		}
	case TypeString:
		if x.isStr {
			return StringValue(x.str), nil
		}
	case TypeStringSet, TypeIntSet:
		var strs []string
		var ints []int64
		err := x.elements(func(e sexp) error {
			if t == TypeStringSet {
				if !e.isStr {
					return fmt.Errorf("a set of strings holds %s", e)
				}
				strs = append(strs, e.str)
				return nil
			}
			n, err := e.int()
			ints = append(ints, n)
			return err
		}, 0)
		if err != nil {
			return Value{}, err
		}
		if t == TypeStringSet {
			return StringSetValue(strs...), nil
		}
		return IntSetValue(ints...), nil
	}
	return Value{}, fmt.Errorf("want a value of type %s, got %s", t, x)
}

// int reads a numeral or (- numeral) that fits int64.
func (x sexp) int() (int64, error) {
	neg := false
	if x.isList && len(x.list) == 2 && x.list[0].atom == "-" {
		neg, x = true, x.list[1]
	}
	n, ok := new(big.Int).SetString(x.atom, 10)
	if !ok || x.atom == "" || x.atom[0] == '-' || x.atom[0] == '+' {
		return 0, fmt.Errorf("want an integer, got %s", x)
	}
	if neg {
		n.Neg(n)
	}
	if !n.IsInt64() {
		return 0, fmt.Errorf("the integer %s is beyond int64", n)
	}
	if n.Int64() == math.MinInt64 && !neg {
		return 0, fmt.Errorf("the integer %s is beyond int64", n)
	}
	return n.Int64(), nil
}

// elements walks the elements of a set as cvc5 prints it: unions of singletons,
// insertions, and the empty set.
func (x sexp) elements(f func(sexp) error, depth int) error {
	if depth > maxSexpDepth {
		return fmt.Errorf("set nested deeper than %d", maxSexpDepth)
	}
	if !x.isList || len(x.list) == 0 {
		return fmt.Errorf("want a set, got %s", x)
	}
	head, args := x.list[0].atom, x.list[1:]
	switch {
	case head == "as" && len(args) >= 1 && args[0].atom == "set.empty":
		return nil
	case head == "set.singleton" && len(args) == 1:
		return f(args[0])
	case head == "set.union" && len(args) == 2:
		if err := args[0].elements(f, depth+1); err != nil {
			return err
		}
		return args[1].elements(f, depth+1)
	case head == "set.insert" && len(args) >= 2:
		for _, a := range args[:len(args)-1] {
			if err := f(a); err != nil {
				return err
			}
		}
		return args[len(args)-1].elements(f, depth+1)
	}
	return fmt.Errorf("want a set, got %s", x)
}

// String prints the s-expression back, for errors, cut short.
func (x sexp) String() string {
	var b strings.Builder
	x.write(&b)
	s := b.String()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func (x sexp) write(b *strings.Builder) {
	switch {
	case x.isStr:
		b.WriteString(strconv.Quote(x.str))
	case x.isList:
		b.WriteByte('(')
		for i, y := range x.list {
			if i > 0 {
				b.WriteByte(' ')
			}
			y.write(b)
			if b.Len() > 100 {
				break
			}
		}
		b.WriteByte(')')
	default:
		b.WriteString(x.atom)
	}
}
