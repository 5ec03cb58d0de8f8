package policy

import (
	"math"
	"testing"
)

// TestModelValues reads values as cvc5 and z3 print them.
func TestModelValues(t *testing.T) {
	tests := []struct {
		answer string
		typ    Type
		want   Value
	}{
		{"42", TypeInt, IntValue(42)},
		{"(- 9223372036854775808)", TypeInt, IntValue(math.MinInt64)},
		{"true", TypeBool, BoolValue(true)},
		{`"a""b\u{e9}\u{1F600}\u00e9\x"`, TypeString, StringValue("a\"bé😀é\\x")},
		{`(set.union (set.singleton "b") (set.union (set.singleton "a") (set.singleton "\u{0}")))`, TypeStringSet, StringSetValue("\x00", "a", "b")},
		{`(set.insert 1 2 (set.singleton (- 3)))`, TypeIntSet, IntSetValue(-3, 1, 2)},
		{`(as set.empty (Set String))`, TypeStringSet, StringSetValue()},
	}
	for _, tt := range tests {
		x, err := parseSexp(tt.answer)
		if err != nil {
			t.Fatalf("%s: %v", tt.answer, err)
		}
		got, err := x.value(tt.typ)
		if err != nil || !got.equal(tt.want) {
			t.Fatalf("%s: got %v, %v; want %v", tt.answer, got, err, tt.want)
		}
	}
	for _, bad := range []struct {
		answer string
		typ    Type
	}{
		{"9223372036854775808", TypeInt},
		{"(- 9223372036854775809)", TypeInt},
		{"-1", TypeInt},
		{`"a"`, TypeInt},
		{"(set.singleton 1)", TypeStringSet},
		{"(set.minus a b)", TypeStringSet},
		{"yes", TypeBool},
	} {
		x, err := parseSexp(bad.answer)
		if err != nil {
			continue
		}
		if v, err := x.value(bad.typ); err == nil {
			t.Fatalf("%s as %s: got %v, want an error", bad.answer, bad.typ, v)
		}
	}
}

// FuzzParseSexp: a solver's answer, whatever it holds, is read or refused, never a
// panic, and what is read prints back.
func FuzzParseSexp(f *testing.F) {
	for _, s := range []string{`((x 4) (y "a""b\u{e9}"))`, `(set.union (set.singleton "b") (set.singleton "a"))`, `(- 5)`, `(k1 k0)`, `|a b|`, `"\u{`, `(((`, `)`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, err := parseSexp(s)
		if err != nil {
			return
		}
		_ = x.String()
		for _, typ := range []Type{TypeInt, TypeString, TypeBool, TypeStringSet, TypeIntSet} {
			x.value(typ)
		}
	})
}
