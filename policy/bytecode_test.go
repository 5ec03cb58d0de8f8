package policy

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func goldenPolicies(t testing.TB) map[string]*Policy {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "pretty", "*.src"))
	out := map[string]*Policy{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = mustCompile(t, string(src))
	}
	out["identity"] = mustCompile(t, identityBase)
	return out
}

func TestDecodeRoundTrip(t *testing.T) {
	for name, p := range goldenPolicies(t) {
		t.Run(name, func(t *testing.T) {
			q, err := Decode(p.Bytecode())
			if err != nil {
				t.Fatal(err)
			}
			if q.ID() != p.ID() || q.Pretty() != p.Pretty() || q.Name() != p.Name() || q.Extractor() != p.Extractor() ||
				!reflect.DeepEqual(q.Parameters(), p.Parameters()) || !reflect.DeepEqual(q.EvidenceSchema(), p.EvidenceSchema()) ||
				q.EvidenceDeclared() != p.EvidenceDeclared() || q.NumConstraints() != p.NumConstraints() || !sameAgents(p, q) || !sameMandate(p, q) {
				t.Fatalf("decoded policy differs:\n%s\n%s", q.Pretty(), p.Pretty())
			}
		})
	}
}

// sameAgents reports whether p and q delegate to the agents of the same parameter, or
// are both undelegated.
func sameAgents(p, q *Policy) bool {
	pa, pok := p.Agents()
	qa, qok := q.Agents()
	return pa == qa && pok == qok
}

// sameMandate reports whether p and q have the same amount and period parts, or none,
// and read the same context values.
func sameMandate(p, q *Policy) bool {
	text := func(p *Policy) string {
		if p.f.amount == nil {
			return ""
		}
		return p.f.amount.node().text
	}
	return text(p) == text(q) && p.Period() == q.Period() && p.Reads() == q.Reads()
}

func TestBytecodeHeader(t *testing.T) {
	p := mustCompile(t, example)
	b := p.Bytecode()
	if string(b[:4]) != "IPOL" || b[4] != 1 {
		t.Fatalf("header % x", b[:5])
	}
	if p.Name() != "tshirt_purchase_v1" || p.Extractor() != "" {
		t.Fatal(p.Name(), p.Extractor())
	}
	if strings.Contains(string(b), "tshirt") == false || strings.Contains(string(b), "evidence.") {
		t.Fatal("the name belongs in the bytecode, the source text does not")
	}
	if q := mustCompile(t, identityBase); q.Extractor() != "web" {
		t.Fatalf("extractor %q", q.Extractor())
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := mustCompile(t, example).Bytecode()
	with := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	// header builds a bytecode prefix by hand, for limits and shapes the compiler
	// never writes.
	header := func(nparams int) []byte {
		b := []byte("IPOL\x01\x01x\x00\x00")
		b = binary.AppendUvarint(b, uint64(nparams))
		for i := 0; i < nparams; i++ {
			name := "p" + strings.Repeat("a", i)
			b = append(b, byte(len(name)))
			b = append(b, name...)
			b = append(b, byte(TypeInt), 0)
		}
		return b
	}
	constraint := func(b []byte, code ...byte) []byte {
		b = append(b, 0, 1, 0) // no evidence, one constraint, not optional
		b = binary.AppendUvarint(b, uint64(len(code)))
		return append(b, code...)
	}
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"bad magic", with(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"unknown version", with(func(b []byte) []byte { b[4] = 2; return b }), "bytecode version 2 is not supported (this build reads version 1)"},
		{"version zero", with(func(b []byte) []byte { b[4] = 0; return b }), "version 0 is not supported"},
		{"trailing byte", append(append([]byte(nil), good...), 0), "1 bytes after the last constraint"},
		{"truncated", good[:len(good)-1], "truncated"},
		{"too many parameters", header(MaxParameters + 1), "parameter count 129 is over the limit of 128"},
		{"unsorted parameters", constraint([]byte("IPOL\x01\x01x\x00\x00\x02\x01b\x01\x00\x01a\x01\x00"), bcTrue), "not in the canonical form"},
		{"unknown opcode", constraint(header(0), 0xEE), "unknown opcode 0xee"},
		{"stack underflow", constraint(header(0), bcAdd), "stack underflow"},
		{"two results", constraint(header(0), bcTrue, bcTrue), "leaves 2 values on the stack"},
		{"slot out of range", constraint(header(1), bcParam, 1, bcInt, 2, bcEq), "parameter slot 1 is over the limit of 0"},
		{"evidence without fields", constraint(header(0), bcEvid, 0), "no evidence fields"},
		{"jump into an instruction", constraint(header(0), bcTrue, bcJumpIfFalse, 1, bcInt, 2, bcFalse), "lands inside an instruction"},
		{"jump past the end", constraint(header(0), bcTrue, bcJumpIfFalse, 3, bcTrue), "jump past the end"},
		{"type error", constraint(header(0), bcInt, 2, bcTrue, bcAdd, bcInt, 2, bcEq), "operator + needs an int"},
		{"not bool", constraint(header(0), bcInt, 2), "a constraint must be bool"},
		{"unsorted set", constraint(header(0), bcInt, 2, bcSetInt, 2, 4, 2, bcIn), "not in the canonical form"},
		{"repeated set element", constraint(header(0), bcInt, 2, bcSetInt, 2, 2, 2, bcIn), "not in the canonical form"},
		{"negative literal", constraint(header(0), bcInt, 1, bcInt, 0, bcLt), "negative integer literal -1"},
		{"chain shape", constraint(header(0), bcInt, 4, bcInt, 4, bcChain, bcEq, 1, bcNot), "shape"},
		{"bad utf-8", constraint(header(0), bcStr, 1, 0xff, bcStr, 0, bcEq), "not valid UTF-8"},
		{"bad name", append([]byte("IPOL\x01\x011\x00\x00\x00\x00\x01\x00\x01"), bcTrue), "not an identifier"},
		{"no constraints", []byte("IPOL\x01\x01x\x00\x00\x00\x00\x00"), "requires block is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// The hand-made header is right: with a good constraint it decodes.
	if _, err := Decode(constraint(header(2), bcParam, 1, bcInt, 2, bcEq)); err != nil {
		t.Fatal(err)
	}
}

// Every truncation and every one-byte change is an error or a policy whose bytecode
// is exactly the input; never a panic.
func TestDecodeCorruption(t *testing.T) {
	for name, p := range goldenPolicies(t) {
		good := p.Bytecode()
		for n := 0; n < len(good); n++ {
			if _, err := Decode(good[:n]); err == nil {
				t.Fatalf("%s: truncated to %d bytes: no error", name, n)
			}
		}
		for i := range good {
			for _, v := range []byte{0, 1, 2, 0x7f, 0x80, 0xff, good[i] + 1, good[i] - 1} {
				b := append([]byte(nil), good...)
				b[i] = v
				if q, err := Decode(b); err == nil && string(q.Bytecode()) != string(b) {
					t.Fatalf("%s: byte %d = %#x: decoded to other bytecode", name, i, v)
				}
			}
		}
	}
}
