package policy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentsBase is a delegated policy in the canonical layout.
const agentsBase = `name delegated

agents parameters.agents

parameters {
  agents: set<string>
  max: int
  tags: set<string>
}

evidence {
  price: int
}

requires {
  evidence.price <= parameters.max;
}
`

// agentsDecls are agentsBase's parts but the agents part, for writing it elsewhere.
const agentsDecls = `parameters {
  agents: set<string>
  max: int
  tags: set<string>
}
evidence { price: int }
requires { evidence.price <= parameters.max; }
`

// TestAgentsSyntax: the agents part may stand anywhere among the parts and be spelled
// with intent; every spelling is one policy, which prints the part after the name.
func TestAgentsSyntax(t *testing.T) {
	base := mustCompile(t, agentsBase)
	tests := []struct {
		name  string
		src   string
		param string // the parameter Agents names
	}{
		{"canonical", agentsBase, "agents"},
		{"first", "agents parameters.agents\nname delegated\n" + agentsDecls, "agents"},
		{"on the name's line", "name delegated agents parameters.agents\n" + agentsDecls, "agents"},
		{"after parameters", strings.Replace("name delegated\n"+agentsDecls, "evidence {", "agents parameters.agents\nevidence {", 1), "agents"},
		{"last", "name delegated\n" + agentsDecls + "agents parameters.agents\n", "agents"},
		{"intent spelling", "name delegated\nagents intent.agents\n" + agentsDecls, "agents"},
		{"intent block", "name delegated\nagents intent.agents\n" + strings.Replace(agentsDecls, "parameters {", "intent {", 1), "agents"},
		{"spaces and comments", "name delegated\nagents # who may propose\n  parameters . agents // the keys\n" + agentsDecls, "agents"},
		{"another parameter", "name delegated\nagents parameters.tags\n" + agentsDecls, "tags"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.src)
			if param, ok := p.Agents(); !ok || param != tc.param {
				t.Fatalf("Agents() = %q, %v; want %q, true", param, ok, tc.param)
			}
			want := strings.Replace(agentsBase, "parameters.agents", "parameters."+tc.param, 1)
			if p.Pretty() != want {
				t.Fatalf("printed:\n%s\nwant:\n%s", p.Pretty(), want)
			}
			if same := tc.param == "agents"; (p.ID() == base.ID()) != same {
				t.Fatalf("same id as the canonical source: %v, want %v", !same, same)
			}
			q := mustCompile(t, p.Pretty())
			if q.ID() != p.ID() || q.Pretty() != p.Pretty() {
				t.Fatalf("printing and compiling again gave another policy:\n%s", q.Pretty())
			}
			d, err := Decode(p.Bytecode())
			if err != nil {
				t.Fatal(err)
			}
			if param, ok := d.Agents(); !ok || param != tc.param || d.ID() != p.ID() {
				t.Fatalf("decoded: Agents() = %q, %v, id %s", param, ok, d.ID())
			}
		})
	}
	t.Run("without the part", func(t *testing.T) {
		p := mustCompile(t, "name delegated\n"+agentsDecls)
		if param, ok := p.Agents(); ok || param != "" {
			t.Fatalf("Agents() = %q, %v; want undelegated", param, ok)
		}
		if p.ID() == base.ID() || strings.Contains(p.Pretty(), "agents parameters") {
			t.Fatalf("a policy without the part is the delegated one:\n%s", p.Pretty())
		}
		if d, err := Decode(p.Bytecode()); err != nil || func() bool { _, ok := d.Agents(); return ok }() {
			t.Fatalf("decoded: %v", err)
		}
	})
	t.Run("words stay field names", func(t *testing.T) {
		// agents is a section word only where a part starts: a field, a parameter
		// reference and a policy may still be called agents.
		p := mustCompile(t, "name agents\nparameters { agents: set<string> }\nevidence { agents: set<string> }\n"+
			"requires { subset(evidence.agents, parameters.agents); }\n")
		if _, ok := p.Agents(); ok {
			t.Fatal("a field called agents made the policy delegated")
		}
	})
}

// TestAgentsErrors covers each compile error of the agents part, with its position.
func TestAgentsErrors(t *testing.T) {
	const decls = `parameters {
  agents: set<string>
  max: int
  ids: set<int>
  name: string
  opt: optional set<string>
}
requires { true; }
`
	// Sources are "name x", the agents line(s) on line 2, then decls from line 3.
	tests := []struct {
		name   string
		agents string
		decls  string
		want   string // the first error, exactly
	}{
		{"undeclared parameter", "agents parameters.nobody", decls,
			`2:8: agents names an undeclared parameter "nobody" (declared: agents, ids, max, name, opt)`},
		{"undeclared, intent spelling", "agents intent.nobody", decls,
			`2:8: agents names an undeclared parameter "nobody" (declared: agents, ids, max, name, opt)`},
		{"no parameters", "agents parameters.agents", "requires { true; }\n",
			`2:8: agents names an undeclared parameter "agents" (the policy declares no parameters)`},
		{"an int", "agents parameters.max", decls,
			`2:8: agents needs a set<string> parameter (the agents' Base58 public keys): parameters.max is int`},
		{"a set of ints", "agents intent.ids", decls,
			`2:8: agents needs a set<string> parameter (the agents' Base58 public keys): parameters.ids is set<int>`},
		{"a string", "agents parameters.name", decls,
			`2:8: agents needs a set<string> parameter (the agents' Base58 public keys): parameters.name is string`},
		{"optional", "agents parameters.opt", decls,
			`2:8: agents needs a parameter that is not optional: parameters.opt is optional, and an intent without it would not say whom it delegates to`},
		{"repeated", "agents parameters.agents\nagents parameters.agents", decls,
			`3:1: repeated agents part (first at 2:1): a policy delegates to the agents of one parameter`},
		{"repeated, another parameter", "agents parameters.agents agents intent.opt", decls,
			`2:26: repeated agents part (first at 2:1): a policy delegates to the agents of one parameter`},
		{"evidence", "agents evidence.agents", decls,
			`2:8: agents names a parameter, not evidence: the agents must be in the intent's signed attrs (want parameters.NAME)`},
		{"a bare name", "agents agents", decls,
			`2:8: expected parameters.NAME after agents (the parameter that lists the agents), found "agents"`},
		{"a string literal", `agents "3yZe7d"`, decls,
			`2:8: expected parameters.NAME after agents (the parameter that lists the agents), found string "3yZe7d"`},
		{"a set literal", `agents {"3yZe7d"}`, decls,
			`2:8: expected parameters.NAME after agents (the parameter that lists the agents), found '{'`},
		{"nothing", "agents", "",
			`3:1: expected parameters.NAME after agents (the parameter that lists the agents), found end of input`},
		{"no dot", "agents parameters agents", decls,
			`2:19: expected '.' and a parameter name after parameters, found "agents"`},
		{"no field name", "agents intent.7", decls,
			`2:15: expected a parameter name after intent., found integer 7`},
		{"an expression", "agents parameters.agents + parameters.opt", decls,
			`2:26: expected name, extractor, agents, amount, period, parameters, evidence or requires, found '+'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "name x\n" + tc.agents + "\n" + tc.decls
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
	t.Run("reported with the others", func(t *testing.T) {
		src := "name x\nagents parameters.max\n" + strings.Replace(decls, "true;", "parameters.max;", 1)
		_, err := Compile(src)
		want := "2:8: agents needs a set<string> parameter (the agents' Base58 public keys): parameters.max is int\n" +
			"10:12: a constraint must be bool: parameters.max is int"
		if err == nil || err.Error() != want {
			t.Fatalf("got\n%v\nwant\n%s", err, want)
		}
	})
}

// paramsEnd is the offset in b, bytecode, just past the parameter table, and the offset
// of the flags byte: where an agents part's slot and flag are.
func paramsEnd(t *testing.T, b []byte) (end, flags int) {
	t.Helper()
	off := len(bytecodeMagic) + 1
	skipString := func() {
		n, k := binary.Uvarint(b[off:])
		if k <= 0 {
			t.Fatalf("bad string length at %d", off)
		}
		off += k + int(n)
	}
	skipString() // name
	skipString() // extractor
	flags = off
	off++
	np, k := binary.Uvarint(b[off:])
	if k <= 0 {
		t.Fatalf("bad parameter count at %d", off)
	}
	off += k
	for range np {
		skipString()
		off += 2 // type, optional
	}
	return off, flags
}

// TestAgentsAddOnlyTheirBytes pins the encoding from both sides: a policy without an
// agents part is written as it was before the part existed (the golden files of
// testdata/bytecode pin those bytes), and adding the part to a policy changes only the
// flags byte and puts the slot after the parameters: the rest, and so everything an
// older policy's id rests on, stays as it is.
func TestAgentsAddOnlyTheirBytes(t *testing.T) {
	var srcs []string
	files, _ := filepath.Glob(filepath.Join("testdata", "pretty", "*.src"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, string(b))
	}
	srcs = append(srcs, example, identityBase, "name nothing\nrequires { true; }\n")
	for seed := range uint64(50) {
		srcs = append(srcs, newGen(seed).source())
	}
	for i, src := range srcs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p := mustCompile(t, src)
			if _, ok := p.Agents(); ok {
				// The delegated golden policy: its part, taken out, must leave the rest.
				src = strings.Replace(src, "agents intent.agents", "", 1)
				p = mustCompile(t, src)
			}
			if _, ok := p.Agents(); ok {
				t.Fatal("a policy without an agents part has one")
			}
			// The parameter the part will name, declared in both policies.
			var plain string
			switch {
			case strings.Contains(src, "parameters {"):
				plain = strings.Replace(src, "parameters {", "parameters {\n  m_agents: set<string>\n", 1)
			case strings.Contains(src, "intent {"):
				plain = strings.Replace(src, "intent {", "intent {\n  m_agents: set<string>\n", 1)
			default:
				plain = src + "\nparameters { m_agents: set<string> }\n"
			}
			without := mustCompile(t, plain)
			with := mustCompile(t, plain+"\nagents parameters.m_agents\n")
			b0, b1 := without.Bytecode(), with.Bytecode()
			end, flags := paramsEnd(t, b0)
			slot := -1
			for k, d := range without.Parameters() {
				if d.Name == "m_agents" {
					slot = k
				}
			}
			want := bytes.Clone(b0[:end])
			want[flags] |= flagAgents
			want = binary.AppendUvarint(want, uint64(slot))
			want = append(want, b0[end:]...)
			if !bytes.Equal(b1, want) {
				t.Fatalf("with an agents part:\n% x\nwant\n% x", b1, want)
			}
			if b0[flags]&flagAgents != 0 {
				t.Fatal("the agents flag is set without the part")
			}
		})
	}
}

// TestDecodeAgents refuses the malformed agents sections that a hand or a bit flip could
// write, each with an error that says what is wrong.
func TestDecodeAgents(t *testing.T) {
	// policy is bytecode of one parameter p of the given type and optional byte, the
	// flags byte, and slot written as given after the parameter table.
	policy := func(flags byte, typ Type, optional byte, slot ...byte) []byte {
		b := []byte("IPOL\x01\x01x\x00")
		b = append(b, flags, 1, 1, 'p', byte(typ), optional)
		b = append(b, slot...)
		return append(b, 0, 1, 0, 1, bcTrue) // no evidence, one constraint: true
	}
	if p, err := Decode(policy(flagAgents, TypeStringSet, 0, 0)); err != nil {
		t.Fatalf("the well-formed policy: %v", err)
	} else if param, ok := p.Agents(); !ok || param != "p" {
		t.Fatalf("Agents() = %q, %v", param, ok)
	}
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"unknown flag", policy(flagAgents|0x80, TypeStringSet, 0, 0), "unknown flags 0x82"},
		{"slot out of range", policy(flagAgents, TypeStringSet, 0, 1), "agents slot 1 is over the limit of 0"},
		{"no parameters", append([]byte("IPOL\x01\x01x\x00\x02\x00\x00\x00\x01\x00\x01"), bcTrue), "agents slot, but no parameters"},
		{"truncated slot", policy(flagAgents, TypeStringSet, 0)[:14], "truncated (reading agents slot)"},
		{"overlong slot", policy(flagAgents, TypeStringSet, 0, 0x80, 0x00), "not in the canonical form"},
		{"slot without the flag", policy(0, TypeStringSet, 0, 0), "bytes after the last constraint"},
		{"an int parameter", policy(flagAgents, TypeInt, 0, 0), "bytecode does not check: agents needs a set<string> parameter (the agents' Base58 public keys): parameters.p is int"},
		{"an optional parameter", policy(flagAgents, TypeStringSet, 1, 0), "bytecode does not check: agents needs a parameter that is not optional"},
		{"a parameter of no type", policy(flagAgents, 9, 0, 0), `bytecode does not check: field "p" has no valid type`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestExampleDelegated compiles examples/delegated.policy: the t-shirt purchase of
// examples/tshirt.policy, delegated. Without its agents part and parameter it is that
// policy again, with the id the documentation shows for it.
func TestExampleDelegated(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	src := read("delegated.policy")
	p := mustCompile(t, src)
	if param, ok := p.Agents(); !ok || param != "agents" {
		t.Fatalf("Agents() = %q, %v", param, ok)
	}
	tshirt := mustCompile(t, read("tshirt.policy"))
	if tshirt.ID() != "93kcNXu64iv6i5ZNxZLZRaTJwgxZzBeLiKNK3kb6KdUb" {
		t.Fatalf("examples/tshirt.policy has the id %s", tshirt.ID())
	}
	plain := strings.NewReplacer("agents parameters.agents\n", "", "  agents: set<string>\n", "").Replace(src)
	if q := mustCompile(t, plain); q.ID() != tshirt.ID() || p.ID() == tshirt.ID() {
		t.Fatalf("without its agents part, the delegated example is %s, not %s", q.ID(), tshirt.ID())
	}
}
