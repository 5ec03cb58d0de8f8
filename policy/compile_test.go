package policy

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const declHeader = `name errs
parameters {
  s: string
  n: int
  ss: set<string>
}
evidence {
  s: string
  n: int
  b: bool
  ss: set<string>
  is: set<int>
}
requires {
`

// TestCompileErrors covers each compile error of the language, with its position.
// Constraints start on line 15, column 3, after declHeader.
func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string // a constraint after declHeader, or a whole policy when it starts with "name"
		want string // the first error, exactly
	}{
		{"types differ", `evidence.s == 5;`, `15:14: cannot compare evidence.s (string) with 5 (int): the types differ`},
		{"types differ in a chain", `1 == evidence.n == "x";`, `15:19: cannot compare evidence.n (int) with "x" (string): the types differ`},
		{"set against string", `evidence.ss != parameters.s;`, `15:15: cannot compare evidence.ss (set<string>) with parameters.s (string): the types differ`},
		{"less than on strings", `evidence.s < "a";`, `15:3: operator < needs int operands: evidence.s is string`},
		{"less than on sets", `1 <= parameters.ss;`, `15:8: operator <= needs int operands: parameters.ss is set<string>`},
		{"less than on bools", `evidence.b > false;`, `15:3: operator > needs int operands: evidence.b is bool`},
		{"in against a non-set", `evidence.s in parameters.s;`, `15:17: operator in needs a set on its right: parameters.s is string`},
		{"in with the wrong element", `evidence.n not in {"a"};`, `15:3: operator not in needs a string on its left for a set<string>: evidence.n is int`},
		{"in with a set on the left", `evidence.ss in {"a"};`, `15:3: operator in needs a string on its left for a set<string>: evidence.ss is set<string>`},
		{"arithmetic on a string", `evidence.s + 1 == 2;`, `15:3: operator + needs an int: evidence.s is string`},
		{"arithmetic on a bool", `2 * evidence.b == 2;`, `15:7: operator * needs an int: evidence.b is bool`},
		{"negating a string", `-evidence.s == 1;`, `15:4: operator - needs an int: evidence.s is string`},
		{"not on an int", `not evidence.n;`, `15:7: operator not needs a bool: evidence.n is int`},
		{"and on an int", `evidence.b and evidence.n;`, `15:18: operator and needs a bool: evidence.n is int`},
		{"undeclared parameter", `parameters.x == 1;`, `15:3: undeclared parameter "x" (declared: n, s, ss)`},
		{"undeclared intent field", `intent.x == 1;`, `15:3: undeclared parameter "x" (declared: n, s, ss)`},
		{"undeclared evidence", `evidence.x == 1;`, `15:3: undeclared evidence field "x" (declared: b, is, n, s, ss)`},
		{"non-bool constraint", `evidence.n + 1;`, `15:3: a constraint must be bool: evidence.n + 1 is int`},
		{"string constraint", `"yes";`, `15:3: a constraint must be bool: "yes" is string`},
		{"unknown function", `size(evidence.s) == 1;`, `15:3: unknown function "size" (want len, lower, upper, contains, starts_with, ends_with, subset, intersects)`},
		{"too many arguments", `len(evidence.s, 2) == 1;`, `15:3: len takes 1 argument, got 2`},
		{"too few arguments", `contains(evidence.s);`, `15:3: contains takes 2 arguments, got 1`},
		{"len of an int", `len(evidence.n) == 1;`, `15:7: len needs a string or a set: evidence.n is int`},
		{"lower of an int", `lower(evidence.n) == "a";`, `15:9: lower needs a string: evidence.n is int`},
		{"subset of strings", `subset(evidence.s, evidence.ss);`, `15:10: subset needs two sets: evidence.s is string`},
		{"subset of two set types", `intersects(evidence.is, evidence.ss);`, `15:3: intersects needs two sets of one type: evidence.is is set<int>, evidence.ss is set<string>`},
		{"missing semicolon", "evidence.b\n}", `16:1: expected ';' after the constraint, found '}'`},
		{"missing operand", `evidence.n == ;`, `15:17: expected an expression, found ';'`},
		{"keyword as operand", `evidence.b and or;`, `15:18: expected an expression, found "or"`},
		{"bare name", `size == 1;`, `15:3: unknown name "size" (want parameters.size, evidence.size, a literal or a function call)`},
		{"missing field name", `evidence. == 1;`, `15:13: expected a field name after evidence., found '=='`},
		{"single equals", `evidence.n = 1;`, `15:14: unexpected '=' (want '==' to compare)`},
		{"unclosed parenthesis", `(evidence.b;`, `15:14: expected ')' to close the '(' at 15:3, found ';'`},
		{"chained in", `evidence.s in {"a"} == true;`, `15:14: in cannot be chained with another comparison: use parentheses`},
		{"mixed set", `evidence.s in {"a", 1};`, `15:23: set literal mixes strings and integers (want set<string> or set<int>)`},
		{"empty set", `evidence.s in {};`, `15:17: empty set literal (want at least one element)`},
		{"set of expressions", `evidence.s in {parameters.s};`, `15:18: expected a string or integer literal in the set, found "parameters"`},
		{"unterminated string", `evidence.s == "abc;`, `15:17: string literal not terminated (want a closing '"' on the same line)`},
		{"unknown escape", `evidence.s == "a\q";`, `15:19: unknown escape in string literal (want \" \\ \/ \b \f \n \r \t or \uXXXX)`},
		{"lone surrogate", `evidence.s == "\ud800";`, `15:18: invalid escape: lone surrogate \uD800`},
		{"control character", "evidence.s == \"a\tb\";", `15:19: control character U+0009 in string literal (write it as an escape such as \n or \u0009)`},
		{"leading zero", `evidence.n == 007;`, `15:17: invalid integer literal 007: leading zeros are not allowed`},
		{"integer too large", `evidence.n == 9223372036854775808;`, `15:17: integer literal 9223372036854775808 is out of the int64 range`},
		{"float", `evidence.n == 1.5;`, `15:17: invalid integer literal: a number is decimal digits only`},
		{"division", `evidence.n / 2 == 1;`, `15:14: unexpected '/' (comments start with # or //; there is no division)`},
		{"unexpected character", `evidence.n == 1 @;`, `15:19: unexpected character '@'`},
		{"empty requires", "name x\nrequires {\n}\n", `2:1: requires block is empty (want at least one constraint)`},
		{"missing name", "requires {\n  true;\n}\n", `1:1: missing name: a policy starts with ` + "`name IDENT`"},
		{"missing requires", "name x\n", `2:1: missing requires block: want ` + "`requires { constraint; ... }`"},
		{"unknown type", "name x\nparameters {\n  price_cents: integer\n}\nrequires { true; }\n", `3:16: unknown type "integer" (want int, string, bool, set<string>, set<int>)`},
		{"unknown set element", "name x\nparameters {\n  a: set<bool>\n}\nrequires { true; }\n", `3:10: unknown set element type "bool" (want set<string> or set<int>)`},
		{"optional evidence", "name x\nevidence {\n  a: optional int\n}\nrequires { true; }\n", `3:6: optional is only allowed in parameters: evidence fields are asked of the extractor, and a missing one fails its constraints`},
		{"missing colon", "name x\nparameters {\n  a int\n}\nrequires { true; }\n", `3:5: expected ':' after field name "a", found "int"`},
		{"repeated field", "name x\nparameters {\n  a: int\n  a: string\n}\nrequires { true; }\n", `4:3: field "a" declared twice in parameters (first at 3:3)`},
		{"repeated evidence field", "name x\nevidence {\n  a: int\n  a: int\n}\nrequires { true; }\n", `4:3: field "a" declared twice in evidence (first at 3:3)`},
		{"repeated block", "name x\nparameters { a: int }\nparameters { b: int }\nrequires { true; }\n", `3:1: repeated parameters block (first at 2:1)`},
		{"intent and parameters", "name x\nparameters { a: int }\nintent { b: int }\nrequires { true; }\n", `3:1: repeated parameters block (first at 2:1; intent is another spelling of parameters)`},
		{"repeated evidence block", "name x\nevidence { }\nevidence { }\nrequires { true; }\n", `3:1: repeated evidence block (first at 2:1)`},
		{"repeated requires", "name x\nrequires { true; }\nrequires { true; }\n", `3:1: repeated requires block (first at 2:1)`},
		{"repeated name", "name x\nname y\nrequires { true; }\n", `2:1: repeated name (first at 1:1)`},
		{"empty extractor", "name x\nextractor \"\"\nrequires { true; }\n", `2:11: extractor name is empty`},
		{"bad extractor", "name x\nextractor \"a b\"\nrequires { true; }\n", `2:11: extractor name "a b": want letters, digits, '_', '-' and '.' only`},
		{"stray word", "name x\nrules { }\nrequires { true; }\n", `2:1: expected name, extractor, agents, amount, period, parameters, evidence or requires, found "rules"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			if !strings.HasPrefix(src, "name") && !strings.HasPrefix(src, "requires") {
				src = declHeader + "  " + src + "\n}\n"
			}
			_, err := Compile(src)
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			if got := list[0].Error(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Several errors are reported together, sorted, each once.
func TestCompileErrorsTogether(t *testing.T) {
	src := declHeader + `  evidence.s == 5;
  evidence.n == ;
  evidence.x;
  evidence.b
}
`
	_, err := Compile(src)
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatal(err)
	}
	// Parse errors stop checking: the two syntax errors are what is reported.
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	want := []string{
		`16:17: expected an expression, found ';'`,
		`19:1: expected ';' after the constraint, found '}'`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	src = declHeader + "  evidence.s == 5;\n  evidence.x;\n  len(1) == parameters.q;\n}\n"
	_, err = Compile(src)
	if !errors.As(err, &list) {
		t.Fatal(err)
	}
	got = nil
	for _, e := range list {
		got = append(got, e.Error())
	}
	want = []string{
		`15:14: cannot compare evidence.s (string) with 5 (int): the types differ`,
		`16:3: undeclared evidence field "x" (declared: b, is, n, s, ss)`,
		`17:7: len needs a string or a set: 1 is int`,
		`17:13: undeclared parameter "q" (declared: n, s, ss)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if !strings.Contains(err.Error(), want[3]) {
		t.Fatalf("Error() leaves out an error: %s", err)
	}
}

// TestLimits refuses each limit of the language with an error that names it, and
// accepts what is exactly at the limit.
func TestLimits(t *testing.T) {
	constraints := func(n int) string {
		return "name x\nrequires {\n" + strings.Repeat("  true;\n", n) + "}\n"
	}
	fields := func(block string, n int) string {
		var b strings.Builder
		b.WriteString("name x\n" + block + " {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "  f%d: int\n", i)
		}
		b.WriteString("}\nrequires { true; }\n")
		return b.String()
	}
	inferred := func(n int) string {
		var b strings.Builder
		b.WriteString("name x\nrequires {\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "  evidence.f%d;\n", i)
		}
		b.WriteString("}\n")
		return b.String()
	}
	nested := func(n int) string {
		return "name x\nrequires {\n  " + strings.Repeat("(", n) + "true" + strings.Repeat(")", n) + ";\n}\n"
	}
	notNested := func(n int) string {
		return "name x\nrequires {\n  " + strings.Repeat("not ", n) + "true;\n}\n"
	}
	rightNested := func(n int) string { // n nested ands: true and (true and (... and true))
		return "name x\nrequires {\n  " + strings.Repeat("true and (", n-1) + "true and true" + strings.Repeat(")", n-1) + ";\n}\n"
	}
	str := func(n int) string {
		return "name x\nrequires {\n  \"" + strings.Repeat("a", n) + "\" == \"a\";\n}\n"
	}
	set := func(n int) string {
		var b strings.Builder
		b.WriteString("name x\nrequires {\n  1 in {")
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, i)
		}
		b.WriteString("};\n}\n")
		return b.String()
	}
	big := func(n int) string {
		s := constraints(1)
		return s + strings.Repeat("#", n-len(s))
	}
	tests := []struct {
		name  string
		src   func(int) string
		limit int
		want  string
	}{
		{"source size", big, MaxSourceBytes, "source is 65537 bytes, over the limit of 65536 bytes (64 KiB)"},
		{"constraints", constraints, MaxConstraints, "more than 256 constraints, the limit"},
		{"parameters", func(n int) string { return fields("parameters", n) }, MaxParameters, "more than 128 parameters fields, the limit"},
		{"evidence fields", func(n int) string { return fields("evidence", n) }, MaxEvidence, "more than 256 evidence fields, the limit"},
		{"inferred evidence fields", inferred, MaxEvidence, "more than 256 evidence fields, the limit"},
		{"nesting of parentheses", nested, MaxDepth, "expression nests deeper than the limit of 64 levels"},
		{"nesting of not", notNested, MaxDepth, "expression nests deeper than the limit of 64 levels"},
		{"nesting of operators", rightNested, MaxDepth, "expression nests 65 levels deep, over the limit of 64"},
		{"string literal", str, MaxStringBytes, "string literal is 4097 bytes, over the limit of 4096 bytes (4 KiB)"},
		{"set literal", set, MaxSetElements, "set literal has more than 1024 elements, the limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Compile(tc.src(tc.limit)); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			_, err := Compile(tc.src(tc.limit + 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("over the limit: got %v, want %q", err, tc.want)
			}
		})
	}
}

// A long flat conjunction is not deep: the depth limit is about nesting.
func TestFlatChainsAreNotDeep(t *testing.T) {
	src := "name x\nrequires {\n  " + strings.Repeat("true and ", 200) + "true;\n  " + strings.Repeat("1 + ", 200) + "1 > 0;\n}\n"
	p := mustCompile(t, src)
	if f := p.Evaluate(nil, nil); f != nil {
		t.Fatal(f)
	}
	q, err := Decode(p.Bytecode())
	if err != nil || q.ID() != p.ID() {
		t.Fatal(err)
	}
}

func TestOlderDialect(t *testing.T) {
	src := `name older
intent {
  size: string
  colors: set<string>
  max: int
  brand: optional string
}
requires {
  evidence.size == intent.size;
  evidence.color in intent.colors;
  evidence.price <= intent.max;
  evidence.in_stock;
  lower(evidence.title) != "";
  evidence.tags == evidence.other_tags;
  len(evidence.blob) > 0;
  "x" in evidence.labels;
  subset(evidence.sizes, intent.colors);
  evidence.a == evidence.b;
  evidence.b == 5;
  optional: evidence.brand == intent.brand;
  1 <= evidence.qty <= 10;
  evidence.code in {1, 2};
  evidence.x == evidence.y && evidence.y + 1 > 0;
}
`
	p := mustCompile(t, src)
	want := []Field{
		{"a", TypeInt}, {"b", TypeInt}, {"blob", TypeAny}, {"brand", TypeString},
		{"code", TypeInt}, {"color", TypeString}, {"in_stock", TypeBool}, {"labels", TypeStringSet},
		{"other_tags", TypeAny}, {"price", TypeInt}, {"qty", TypeInt}, {"size", TypeString},
		{"sizes", TypeStringSet}, {"tags", TypeAny}, {"title", TypeString}, {"x", TypeInt}, {"y", TypeInt},
	}
	if got := p.EvidenceSchema(); !reflect.DeepEqual(got, want) {
		t.Fatalf("schema\n%v\nwant\n%v", got, want)
	}
	if p.EvidenceDeclared() {
		t.Fatal("older dialect reported as declared")
	}
	wantParams := []Param{{"brand", TypeString, true}, {"colors", TypeStringSet, false}, {"max", TypeInt, false}, {"size", TypeString, false}}
	if got := p.Parameters(); !reflect.DeepEqual(got, wantParams) {
		t.Fatalf("parameters %v", got)
	}
	if strings.Contains(p.Pretty(), "evidence {") || strings.Contains(p.Pretty(), "intent") {
		t.Fatalf("pretty form of the older dialect:\n%s", p.Pretty())
	}
	if q := mustCompile(t, p.Pretty()); q.ID() != p.ID() {
		t.Fatal("pretty form compiles to another id")
	}

	attrs := mustAttrs(t, `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["a", "b"]}}, "max": {"Int": 100}}}`)
	pass := `{"size": "M", "color": "a", "price": 5, "in_stock": true, "title": "T", "tags": ["p"], "other_tags": ["p"],
	  "blob": "x", "labels": ["x"], "sizes": ["a"], "a": 5, "b": 5, "qty": 3, "code": 2, "x": 1, "y": 1}`
	if f := p.Evaluate(attrs, mustEvidence(t, pass)); f != nil {
		t.Fatalf("passing evidence: %+v", f)
	}
	// any-typed fields are checked when evaluated.
	bad := strings.NewReplacer(`"other_tags": ["p"]`, `"other_tags": 5`, `"blob": "x"`, `"blob": true`).Replace(pass)
	got := p.Evaluate(attrs, mustEvidence(t, bad))
	if len(got) != 2 || got[0].Index != 5 || got[1].Index != 6 {
		t.Fatalf("got %+v", got)
	}
	if want := `== cannot be applied to evidence.tags = {"p"} (set<string>) and evidence.other_tags = 5 (int): wrong type`; got[0].Reason != want {
		t.Fatalf("reason %q\nwant   %q", got[0].Reason, want)
	}
	if want := `len cannot be applied to evidence.blob = true (bool): wrong type`; got[1].Reason != want {
		t.Fatalf("reason %q\nwant   %q", got[1].Reason, want)
	}
	// An empty array is a set of either element type.
	empty := strings.NewReplacer(`"tags": ["p"]`, `"tags": []`, `"other_tags": ["p"]`, `"other_tags": []`).Replace(pass)
	if f := p.Evaluate(attrs, mustEvidence(t, empty)); f != nil {
		t.Fatalf("empty sets: %+v", f)
	}
	// The inferred type is enforced: a string where an int was inferred fails.
	if f := p.Evaluate(attrs, mustEvidence(t, strings.Replace(pass, `"price": 5`, `"price": "5"`, 1))); len(f) != 1 || f[0].Reason != `evidence.price: want int, got the string "5"` {
		t.Fatalf("got %+v", f)
	}
}

func TestOlderDialectConflict(t *testing.T) {
	src := "name x\nrequires {\n  evidence.a == 1;\n  evidence.a == \"s\";\n}\n"
	_, err := Compile(src)
	want := `4:14: cannot compare evidence.a (inferred from its use at 3:3) (int) with "s" (string): the types differ`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestTooManyErrors(t *testing.T) {
	_, err := Compile("name x\nrequires {\n" + strings.Repeat("  @;\n", 50) + "}\n")
	var list ErrorList
	if !errors.As(err, &list) || len(list) != maxErrors+1 || list[maxErrors].Msg != "too many errors (40 more)" {
		t.Fatalf("got %d errors: %v", len(list), err)
	}
}
