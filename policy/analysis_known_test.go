package policy_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/policy"
)

// A corpus of policies whose answers are known by construction: each constraint bounds
// one evidence field (an interval, a value, a literal set), so that what each admits is
// a set of values decided on a handful of representatives, and satisfiable, never,
// always and implied follow from intersections and inclusions of those sets, which the
// test computes without any solver.

// knownField is an evidence field of the corpus and its representative values: every
// literal the generator writes and its neighbours, and values far from all of them.
type knownField struct {
	name string
	reps []any
}

var knownFields = func() []knownField {
	var ints []any
	for n := int64(-12); n <= 12; n++ {
		ints = append(ints, n)
	}
	ints = append(ints, int64(math.MinInt64), int64(-1000), int64(1000), int64(math.MaxInt64))
	strs := []any{"a", "b", "c", "d", "zz", ""}
	return []knownField{{"x", ints}, {"y", ints}, {"c", strs}}
}()

// knownConstraint is one constraint of the corpus: its text and the values of its
// field it admits.
type knownConstraint struct {
	text  string
	field int
	admit func(v any) bool
}

func knownConstraintOf(r *rand.Rand) knownConstraint {
	lit := func() int64 { return int64(r.IntN(21) - 10) }
	if r.IntN(4) == 0 {
		s := []string{"a", "b", "c", "d"}
		a, b := s[r.IntN(4)], s[r.IntN(4)]
		switch r.IntN(3) {
		case 0:
			return knownConstraint{fmt.Sprintf("evidence.c in {%q, %q}", a, b), 2, func(v any) bool { return v == a || v == b }}
		case 1:
			return knownConstraint{fmt.Sprintf("evidence.c not in {%q, %q}", a, b), 2, func(v any) bool { return v != a && v != b }}
		}
		return knownConstraint{fmt.Sprintf("evidence.c == %q", a), 2, func(v any) bool { return v == a }}
	}
	f := r.IntN(2)
	name := "evidence." + knownFields[f].name
	lo, hi := lit(), lit()
	n := func(v any) int64 { return v.(int64) }
	switch r.IntN(9) {
	case 0:
		return knownConstraint{fmt.Sprintf("%d <= %s", lo, name), f, func(v any) bool { return lo <= n(v) }}
	case 1:
		return knownConstraint{fmt.Sprintf("%s <= %d", name, hi), f, func(v any) bool { return n(v) <= hi }}
	case 2, 3:
		return knownConstraint{fmt.Sprintf("%d <= %s <= %d", lo, name, hi), f, func(v any) bool { return lo <= n(v) && n(v) <= hi }}
	case 4:
		return knownConstraint{fmt.Sprintf("%s < %d", name, hi), f, func(v any) bool { return n(v) < hi }}
	case 5:
		return knownConstraint{fmt.Sprintf("%s == %d", name, lo), f, func(v any) bool { return n(v) == lo }}
	case 6:
		return knownConstraint{fmt.Sprintf("%s != %d", name, lo), f, func(v any) bool { return n(v) != lo }}
	case 7:
		return knownConstraint{fmt.Sprintf("%s in {%d, %d}", name, lo, hi), f, func(v any) bool { return n(v) == lo || n(v) == hi }}
	}
	return knownConstraint{fmt.Sprintf("%s >= -9223372036854775808", name), f, func(any) bool { return true }}
}

// knownPolicy is a policy of the corpus and its answers.
type knownPolicy struct {
	src         string
	cons        []knownConstraint
	satisfiable bool
	findings    map[int]string // constraint: the finding the analysis must report
	given       map[int][]int  // for a never given others, or implied: which
}

// admits reports whether every constraint of ks admits some value: on each field, the
// intersection of what the constraints of that field admit is not empty.
func admits(ks []knownConstraint) bool {
	for f, kf := range knownFields {
		if !slices.ContainsFunc(kf.reps, func(v any) bool {
			return !slices.ContainsFunc(ks, func(k knownConstraint) bool { return k.field == f && !k.admit(v) })
		}) {
			return false
		}
	}
	return true
}

// implies reports whether every value of k's field that the constraints ks admit, k
// admits too.
func implies(ks []knownConstraint, k knownConstraint) bool {
	for _, v := range knownFields[k.field].reps {
		if !slices.ContainsFunc(ks, func(o knownConstraint) bool { return o.field == k.field && !o.admit(v) }) && !k.admit(v) {
			return false
		}
	}
	return true
}

func newKnownPolicy(seed uint64) knownPolicy {
	r := rand.New(rand.NewPCG(seed, 99))
	kp := knownPolicy{findings: map[int]string{}, given: map[int][]int{}}
	var b strings.Builder
	b.WriteString("name known\nevidence {\n  x: int\n  y: int\n  c: string\n}\nrequires {\n")
	for range 1 + r.IntN(6) {
		k := knownConstraintOf(r)
		kp.cons = append(kp.cons, k)
		b.WriteString("  " + k.text + ";\n")
	}
	b.WriteString("}\n")
	kp.src = b.String()
	kp.satisfiable = admits(kp.cons)
	prefixSat := true
	for i, k := range kp.cons {
		switch {
		case !admits([]knownConstraint{k}):
			kp.findings[i] = policy.FindingNever
		case implies(nil, k):
			kp.findings[i] = policy.FindingAlways
		case !kp.satisfiable && prefixSat && !admits(kp.cons[:i+1]):
			kp.findings[i] = policy.FindingNever
			prefixSat = false
		case kp.satisfiable && implies(slices.Delete(slices.Clone(kp.cons), i, i+1), k):
			kp.findings[i] = policy.FindingImplied
		}
		if !admits(kp.cons[:i+1]) {
			prefixSat = false
		}
	}
	return kp
}

// TestAnalyzeKnown analyses a corpus of policies with known answers and compares every
// answer: satisfiable or not, and each constraint's finding; the constraints a finding
// gives must suffice for it.
func TestAnalyzeKnown(t *testing.T) {
	cvc5 := solverOrSkip(t, "cvc5")
	n := 300
	if testing.Short() {
		n = 60
	}
	kinds := map[string]int{}
	start := time.Now()
	for seed := range n {
		kp := newKnownPolicy(uint64(seed))
		p := compile(t, kp.src)
		a := analyze(t, p, cvc5, policy.AnalyzeOptions{CheckTimeout: slowMachine})
		if len(a.Unknown) > 0 {
			t.Fatalf("seed %d: unknown %+v\n%s", seed, a.Unknown, kp.src)
		}
		if a.Satisfiable != kp.satisfiable {
			t.Fatalf("seed %d: satisfiable %v, want %v\n%s", seed, a.Satisfiable, kp.satisfiable, kp.src)
		}
		got := map[int]string{}
		for _, f := range a.Findings {
			got[f.Constraint] = f.Kind
			kinds[f.Kind]++
			if f.Kind == policy.FindingImplied || f.Kind == policy.FindingNever && len(f.Given) > 0 {
				var given []knownConstraint
				for _, g := range f.Given {
					given = append(given, kp.cons[g])
				}
				if f.Kind == policy.FindingImplied && !implies(given, kp.cons[f.Constraint]) ||
					f.Kind == policy.FindingNever && admits(append(given, kp.cons[f.Constraint])) {
					t.Fatalf("seed %d: finding %+v: the constraints it gives do not show it\n%s", seed, f, kp.src)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(kp.findings) {
			t.Fatalf("seed %d: findings %v, want %v\n%+v\n%s", seed, got, kp.findings, a.Findings, kp.src)
		}
	}
	t.Logf("%d policies of known answers, %v a policy; findings %v", n, time.Since(start)/time.Duration(n), kinds)
}
