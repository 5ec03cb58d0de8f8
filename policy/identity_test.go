package policy

import (
	"strings"
	"testing"
)

const identityBase = `name ident
extractor "web"
parameters {
  a: int
  b: set<string>
}
evidence {
  x: int
  y: string
  z: bool
}
requires {
  evidence.x + 1 <= parameters.a;
  evidence.y in {"p", "q"} && !evidence.z || evidence.y in parameters.b;
  optional: evidence.y == "s";
}
`

// TestIdentity checks the canonical-form rules both ways: what must not change the
// id, and what must.
func TestIdentity(t *testing.T) {
	base := mustCompile(t, identityBase)
	same := []struct{ name, src string }{
		{"whitespace and comments", `# a comment
name    ident   // another
extractor "web"
parameters { a: int, b: set<string> }
evidence { x: int; y: string; z: bool }
requires { evidence.x+1<=parameters.a; evidence.y in {"p","q"} && !evidence.z || evidence.y in parameters.b;
optional:evidence.y=="s"; }`},
		{"field order", strings.NewReplacer("  a: int\n  b: set<string>", "  b: set<string>\n  a: int", "  x: int\n  y: string\n  z: bool", "  z: bool\n  x: int\n  y: string").Replace(identityBase)},
		{"set order and repeats", strings.Replace(identityBase, `{"p", "q"}`, `{"q", "p", "q"}`, 1)},
		{"intent spelling", strings.NewReplacer("parameters {", "intent {", "parameters.a", "intent.a").Replace(identityBase)},
		{"operator words", strings.NewReplacer("&&", "and", "!evidence.z", "not evidence.z", "||", "or").Replace(identityBase)},
		{"redundant parentheses", strings.Replace(identityBase, "evidence.x + 1 <= parameters.a", "((evidence.x) + (1)) <= (parameters.a)", 1)},
		{"string escapes", strings.Replace(identityBase, `"s"`, `"\u0073"`, 1)},
		{"section order", strings.Replace(strings.Replace(identityBase, "name ident\n", "", 1), "requires {", "name ident\nrequires {", 1)},
	}
	for _, tc := range same {
		t.Run("same/"+tc.name, func(t *testing.T) {
			if p := mustCompile(t, tc.src); p.ID() != base.ID() {
				t.Fatalf("id changed:\n%s", p.Pretty())
			}
		})
	}
	differ := []struct{ name, src string }{
		{"name", strings.Replace(identityBase, "name ident", "name ident2", 1)},
		{"extractor", strings.Replace(identityBase, `"web"`, `"http"`, 1)},
		{"no extractor", strings.Replace(identityBase, "extractor \"web\"\n", "", 1)},
		{"a constraint", strings.Replace(identityBase, "evidence.x + 1", "evidence.x + 2", 1)},
		{"an operator", strings.Replace(identityBase, "<= parameters.a", "< parameters.a", 1)},
		{"constraint order", strings.Replace(identityBase, "  evidence.x + 1 <= parameters.a;\n  evidence.y in {\"p\", \"q\"} && !evidence.z || evidence.y in parameters.b;\n",
			"  evidence.y in {\"p\", \"q\"} && !evidence.z || evidence.y in parameters.b;\n  evidence.x + 1 <= parameters.a;\n", 1)},
		{"optional marker", strings.Replace(identityBase, "optional: ", "", 1)},
		{"optional parameter", strings.Replace(identityBase, "a: int", "a: optional int", 1)},
		{"a field's type", strings.Replace(identityBase, "z: bool", "z: bool\n  w: int", 1)},
		{"grouping", strings.Replace(identityBase, `evidence.y in {"p", "q"} && !evidence.z || evidence.y in parameters.b`, `evidence.y in {"p", "q"} && (!evidence.z || evidence.y in parameters.b)`, 1)},
		{"a set element", strings.Replace(identityBase, `{"p", "q"}`, `{"p", "r"}`, 1)},
	}
	for _, tc := range differ {
		t.Run("differs/"+tc.name, func(t *testing.T) {
			if p := mustCompile(t, tc.src); p.ID() == base.ID() {
				t.Fatal("id did not change")
			}
		})
	}
	// An inferred schema is not the same policy as a declared one.
	declared := mustCompile(t, "name d\nevidence { x: int }\nrequires { evidence.x > 1; }\n")
	inferred := mustCompile(t, "name d\nrequires { evidence.x > 1; }\n")
	if declared.ID() == inferred.ID() {
		t.Fatal("declared and inferred evidence share an id")
	}
}

// The id is Base58 of SHA-256 of the bytecode, and the same source always gives it.
func TestIDIsStable(t *testing.T) {
	p := mustCompile(t, example)
	for i := 0; i < 5; i++ {
		if q := mustCompile(t, example); q.ID() != p.ID() || string(q.Bytecode()) != string(p.Bytecode()) {
			t.Fatal("compiling twice gave different bytecode")
		}
	}
	if len(p.ID()) < 43 || len(p.ID()) > 44 {
		t.Fatalf("id %q is not Base58 of 32 bytes", p.ID())
	}
}

// TestIdentityAgents: the agents part is part of the identity. Where it stands and how
// its parameter is spelled do not change the id; having it, and which parameter it
// names, do.
func TestIdentityAgents(t *testing.T) {
	// identityBase's b is a set<string> every intent carries; c is another.
	src := strings.Replace(identityBase, "  b: set<string>\n", "  b: set<string>\n  c: set<string>\n", 1)
	undelegated := mustCompile(t, src)
	delegated := strings.Replace(src, "extractor \"web\"\n", "extractor \"web\"\nagents parameters.b\n", 1)
	base := mustCompile(t, delegated)
	same := []struct{ name, src string }{
		{"before the name", "agents parameters.b\n" + src},
		{"last", src + "agents parameters.b\n"},
		{"intent spelling", strings.Replace(delegated, "agents parameters.b", "agents intent.b", 1)},
		{"comments and spaces", strings.Replace(delegated, "agents parameters.b", "agents  # the keys\n parameters .b", 1)},
		{"its pretty form", base.Pretty()},
	}
	for _, tc := range same {
		t.Run("same/"+tc.name, func(t *testing.T) {
			if p := mustCompile(t, tc.src); p.ID() != base.ID() {
				t.Fatalf("id changed:\n%s", p.Pretty())
			}
		})
	}
	differ := []struct{ name, src string }{
		{"no agents part", src},
		{"another parameter", strings.Replace(delegated, "agents parameters.b", "agents parameters.c", 1)},
	}
	for _, tc := range differ {
		t.Run("differs/"+tc.name, func(t *testing.T) {
			if p := mustCompile(t, tc.src); p.ID() == base.ID() {
				t.Fatal("id did not change")
			}
		})
	}
	if _, ok := undelegated.Agents(); ok || undelegated.ID() == base.ID() {
		t.Fatal("the undelegated policy is the delegated one")
	}
}
