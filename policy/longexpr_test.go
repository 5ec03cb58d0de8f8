package policy

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// longSum is a policy of one constraint, a sum of n ones, which a chain of one operator
// keeps within the nesting limit however long it is.
func longSum(n int) string {
	return "name s\nrequires { 1" + strings.Repeat(" + 1", n-1) + " == " + strconv.Itoa(n) + "; }\n"
}

// allocated is how many bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLongExpressionCost compiles and decodes the longest sum the source limit allows:
// what it allocates must grow with the source, not with its square. Each subexpression
// kept a copy of its own text for explanations, so that a 60 KB sum of 15,000 terms
// allocated gigabytes and took seconds to compile, and kept over a gigabyte while its
// policy was cached.
func TestLongExpressionCost(t *testing.T) {
	n := (MaxSourceBytes - 64) / len(" + 1")
	src := longSum(n)
	var p *Policy
	compiled := allocated(func() {
		var err error
		if p, err = Compile(src); err != nil {
			t.Fatal(err)
		}
	})
	decoded := allocated(func() {
		if _, err := Decode(p.Bytecode()); err != nil {
			t.Fatal(err)
		}
	})
	// The same sum over the evidence leaves a residual as long as itself.
	q, err := Compile(strings.Replace(src, "requires { 1", "requires { evidence.a", 1))
	if err != nil {
		t.Fatal(err)
	}
	var open Requirements
	folded := allocated(func() { p.Requirements(nil) })
	residual := allocated(func() { open = q.Requirements(nil) })
	if r := open.Constraints[0]; r.State != ResidualOpen || len(r.Residual) != len(r.PrettyExpr) {
		t.Fatalf("the sum over the evidence is %s, with a residual of %d bytes", r.State, len(r.Residual))
	}
	// About a kilobyte a term (its tokens, its node, its instructions, its place in the
	// text); a copy of the text per node would be 15 KB a term on average here.
	most := uint64(n) * 4096
	for _, c := range []struct {
		what  string
		bytes uint64
	}{{"Compile", compiled}, {"Decode", decoded}, {"Requirements, folded", folded}, {"Requirements, open", residual}} {
		t.Logf("%s of a sum of %d terms (%d bytes of source) allocated %d KiB", c.what, n, len(src), c.bytes>>10)
		if c.bytes > most {
			t.Errorf("%s of a sum of %d terms allocated %d MiB, want at most %d MiB", c.what, n, c.bytes>>20, most>>20)
		}
	}
	if f := p.Evaluate(nil, nil); f != nil {
		t.Fatalf("the sum does not hold: %v", f)
	}
}
