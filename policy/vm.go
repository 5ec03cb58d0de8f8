package policy

import (
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// instr is one loaded instruction. Constants live in the program's tables, and jump
// targets are instruction indexes, so that the machine never decodes bytes.
type instr struct {
	op  byte
	cmp byte  // bcChain: the comparison
	a   int32 // constant index, slot, or jump target
}

// program holds the constants of a policy's loaded code.
type program struct {
	ints []int64
	strs []string
	sets []*setValue
}

// result is what running a constraint gives: it holds, it does not, or it could not
// be decided (a missing or wrongly typed value, an overflow). The explainer finds out
// which and why, off the passing path.
type result uint8

const (
	resTrue result = iota
	resFalse
	resFault
)

// fault is why an operation could not give a value.
type fault uint8

const (
	faultNone fault = iota
	faultType
	faultOverflow
)

// frame is the machine's working memory for one evaluation: the operand stack, and
// the parameters and evidence fields converted to values, in the policy's slots.
// Evaluate keeps it on its goroutine's stack (see inlineValues), so that copying a
// Value, which holds pointers, into it needs no write barrier while the collector
// runs: on the heap every such copy went through the runtime's barrier code, most of
// a failing evaluation's cost when allocation kept the collector busy.
type frame struct {
	stack  []Value
	params []Value
	ev     []Value
	// ctx is the decision's context, numCtx values, only for a policy that reads it:
	// the mandate's totals, the purchase's amount, the decision time (loadContext).
	ctx []Value
}

// inlineValues is how many Values (stack, parameters and evidence together) an
// evaluation holds in an array on its goroutine's stack: 2.5 KiB, more than the
// policies the service runs use. A larger policy takes its values from valueBufs.
const inlineValues = 64

// valueBuf holds the values of a policy too large for inlineValues, pooled so that
// an evaluation of one allocates nothing for them.
type valueBuf struct {
	v  []Value
	fr frame
}

var valueBufs = sync.Pool{New: func() any { return new(valueBuf) }}

// reasonBuf is the explainer's buffer for reasons and where each ends, pooled so that a
// failing evaluation allocates little more than its result. Only an evaluation with a
// failure takes one.
type reasonBuf struct {
	out  []byte
	ends []int
}

// maxPooledOut is the largest reason buffer kept for the next evaluation: one that
// quoted huge values is dropped rather than held for ever.
const maxPooledOut = 16 << 10

var reasonBufs = sync.Pool{New: func() any { return new(reasonBuf) }}

// run executes one constraint's code.
func (pg *program) run(code []instr, fr *frame) result {
	if !pg.exec(code, fr) {
		return resFault
	}
	switch v := &fr.stack[0]; {
	case v.t != TypeBool:
		return resFault
	case v.n != 0:
		return resTrue
	}
	return resFalse
}

// exec executes code, a constraint's or the amount's, and reports whether it came to
// a value, which it leaves in fr.stack[0].
func (pg *program) exec(code []instr, fr *frame) bool {
	st := fr.stack
	sp := 0
	for pc := 0; pc < len(code); pc++ {
		in := code[pc]
		switch in.op {
		case bcInt:
			st[sp] = Value{t: TypeInt, n: pg.ints[in.a]}
			sp++
		case bcStr:
			st[sp] = Value{t: TypeString, s: pg.strs[in.a]}
			sp++
		case bcTrue, bcFalse:
			st[sp] = boolean(in.op == bcTrue)
			sp++
		case bcSetStr, bcSetInt:
			st[sp] = Value{t: setType(in.op), set: pg.sets[in.a]}
			sp++
		case bcParam, bcEvid, bcCtx:
			v := fr.slot(in.op, in.a)
			if !v.t.isValue() {
				return false
			}
			st[sp] = *v
			sp++
		case bcNot:
			if st[sp-1].t != TypeBool {
				return false
			}
			st[sp-1].n ^= 1
		case bcJumpIfFalse, bcJumpIfTrue:
			v := st[sp-1]
			if v.t != TypeBool {
				return false
			}
			if (v.n != 0) == (in.op == bcJumpIfTrue) {
				pc = int(in.a) - 1
				continue
			}
			sp--
		case bcChain:
			r, f := apply2(in.cmp, st[sp-2], st[sp-1])
			if f != faultNone {
				return false
			}
			sp--
			if r.n == 0 {
				st[sp-1] = r
				pc = int(in.a) - 1
				continue
			}
			st[sp-1] = st[sp]
		case bcNeg, bcLen, bcLower, bcUpper:
			r, f := apply1(in.op, st[sp-1])
			if f != faultNone {
				return false
			}
			st[sp-1] = r
		case bcLt, bcLe, bcGt, bcGe, bcEq, bcNe:
			// The common case, ints and strings, without the general path's copies.
			x, y := &st[sp-2], &st[sp-1]
			if x.t == y.t && (x.t == TypeInt || x.t == TypeString && in.op <= bcNe) {
				var ok bool
				switch in.op {
				case bcEq:
					ok = x.n == y.n && x.s == y.s
				case bcNe:
					ok = x.n != y.n || x.s != y.s
				case bcLt:
					ok = x.n < y.n
				case bcLe:
					ok = x.n <= y.n
				case bcGt:
					ok = x.n > y.n
				default:
					ok = x.n >= y.n
				}
				sp--
				*x = boolean(ok)
				continue
			}
			r, f := apply2(in.op, *x, *y)
			if f != faultNone {
				return false
			}
			sp--
			st[sp-1] = r
		default:
			r, f := apply2(in.op, st[sp-2], st[sp-1])
			if f != faultNone {
				return false
			}
			sp--
			st[sp-1] = r
		}
	}
	return sp == 1
}

// slot is the value of the frame an instruction that reads one loads: a parameter, an
// evidence field or a value of the context.
func (fr *frame) slot(op byte, a int32) *Value {
	switch op {
	case bcParam:
		return &fr.params[a]
	case bcEvid:
		return &fr.ev[a]
	}
	return &fr.ctx[a]
}

// setType is the type of the set a set literal's instruction pushes.
func setType(op byte) Type {
	if op == bcSetInt {
		return TypeIntSet
	}
	return TypeStringSet
}

// apply1 is a one-operand operation. The machine and the explainer share it, so they
// cannot disagree.
func apply1(op byte, x Value) (Value, fault) {
	switch op {
	case bcNeg:
		if x.t != TypeInt {
			return Value{}, faultType
		}
		if x.n == math.MinInt64 {
			return Value{}, faultOverflow
		}
		return Value{t: TypeInt, n: -x.n}, faultNone
	case bcNot:
		if x.t != TypeBool {
			return Value{}, faultType
		}
		return Value{t: TypeBool, n: x.n ^ 1}, faultNone
	case bcLen:
		switch x.t {
		case TypeString:
			return Value{t: TypeInt, n: int64(utf8.RuneCountInString(x.s))}, faultNone
		case TypeStringSet, TypeIntSet:
			return Value{t: TypeInt, n: int64(x.set.len())}, faultNone
		}
	case bcLower, bcUpper:
		if x.t == TypeString {
			if op == bcLower {
				return Value{t: TypeString, s: strings.ToLower(x.s)}, faultNone
			}
			return Value{t: TypeString, s: strings.ToUpper(x.s)}, faultNone
		}
	}
	return Value{}, faultType
}

func boolean(b bool) Value {
	if b {
		return Value{t: TypeBool, n: 1}
	}
	return Value{t: TypeBool}
}

// apply2 is a two-operand operation (arithmetic, comparison, membership, the
// functions of two arguments).
func apply2(op byte, x, y Value) (Value, fault) {
	switch op {
	case bcAdd, bcSub, bcMul:
		if x.t != TypeInt || y.t != TypeInt {
			return Value{}, faultType
		}
		n, ok := arith(op, x.n, y.n)
		if !ok {
			return Value{}, faultOverflow
		}
		return Value{t: TypeInt, n: n}, faultNone
	case bcLt, bcLe, bcGt, bcGe:
		if x.t != TypeInt || y.t != TypeInt {
			return Value{}, faultType
		}
		switch op {
		case bcLt:
			return boolean(x.n < y.n), faultNone
		case bcLe:
			return boolean(x.n <= y.n), faultNone
		case bcGt:
			return boolean(x.n > y.n), faultNone
		}
		return boolean(x.n >= y.n), faultNone
	case bcEq, bcNe:
		eq, ok := equal(x, y)
		if !ok {
			return Value{}, faultType
		}
		return boolean(eq == (op == bcEq)), faultNone
	case bcIn, bcNotIn:
		in, ok := member(x, y)
		if !ok {
			return Value{}, faultType
		}
		return boolean(in == (op == bcIn)), faultNone
	case bcContains, bcStartsWith, bcEndsWith:
		if x.t != TypeString || y.t != TypeString {
			return Value{}, faultType
		}
		switch op {
		case bcContains:
			return boolean(strings.Contains(x.s, y.s)), faultNone
		case bcStartsWith:
			return boolean(strings.HasPrefix(x.s, y.s)), faultNone
		}
		return boolean(strings.HasSuffix(x.s, y.s)), faultNone
	case bcSubset, bcIntersects:
		if !x.t.isSet() || !y.t.isSet() || x.t != y.t && x.set.len() > 0 && y.set.len() > 0 {
			return Value{}, faultType
		}
		if op == bcSubset {
			return boolean(subset(x.set, y.set)), faultNone
		}
		return boolean(intersects(x.set, y.set)), faultNone
	}
	return Value{}, faultType
}

func arith(op byte, a, b int64) (int64, bool) {
	switch op {
	case bcAdd:
		c := a + b
		return c, (c > a) == (b > 0)
	case bcSub:
		c := a - b
		return c, (c < a) == (b > 0)
	}
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || a == -1 && b == math.MinInt64 || b == -1 && a == math.MinInt64 {
		return 0, false
	}
	return c, true
}

// equal compares two values of one type; sets are equal when they hold the same
// elements, and an empty set equals an empty set of either element type.
func equal(x, y Value) (bool, bool) {
	if x.t != y.t {
		if x.t.isSet() && y.t.isSet() && (x.set.len() == 0 || y.set.len() == 0) {
			return x.set.len() == y.set.len(), true
		}
		return false, false
	}
	switch x.t {
	case TypeInt, TypeBool:
		return x.n == y.n, true
	case TypeString:
		return x.s == y.s, true
	case TypeStringSet:
		return slices.Equal(x.set.strs, y.set.strs), true
	case TypeIntSet:
		return slices.Equal(x.set.ints, y.set.ints), true
	}
	return false, false
}

func member(x, s Value) (bool, bool) {
	switch {
	case s.t == TypeStringSet && x.t == TypeString:
		_, ok := slices.BinarySearch(s.set.strs, x.s)
		return ok, true
	case s.t == TypeIntSet && x.t == TypeInt:
		_, ok := slices.BinarySearch(s.set.ints, x.n)
		return ok, true
	case s.t.isSet() && s.set.len() == 0 && (x.t == TypeString || x.t == TypeInt):
		return false, true
	}
	return false, false
}

func subset(a, b *setValue) bool {
	if len(a.strs) > 0 {
		return sortedSubset(a.strs, b.strs)
	}
	return sortedSubset(a.ints, b.ints)
}

func sortedSubset[T int64 | string](a, b []T) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
		j++
	}
	return true
}

func intersects(a, b *setValue) bool {
	if len(a.strs) > 0 {
		return sortedIntersects(a.strs, b.strs)
	}
	return sortedIntersects(a.ints, b.ints)
}

func sortedIntersects[T int64 | string](a, b []T) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			return true
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return false
}
