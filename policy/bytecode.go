package policy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Reading bytecode back: the header and declarations (readBytecode), each constraint's
// code into instructions (load), and the instructions back into a syntax tree
// (decompile). Decode then checks the tree and compiles it again: only bytecode that
// comes out byte for byte the same is accepted, so a decoded policy is one the
// compiler could have produced, with the same id and the same behaviour.

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("bytecode offset %d: %s", r.off, fmt.Sprintf(format, args...))
	}
}

func (r *reader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("truncated (reading %s)", what)
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		if n == 0 {
			r.fail("truncated (reading %s)", what)
		} else {
			r.fail("%s is not a valid varint", what)
		}
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		if n == 0 {
			r.fail("truncated (reading %s)", what)
		} else {
			r.fail("%s is not a valid varint", what)
		}
		return 0
	}
	r.off += n
	return v
}

// count reads a length or a count no greater than limit.
func (r *reader) count(what string, limit int) int {
	n := r.uvarint(what)
	if r.err == nil && n > uint64(limit) {
		r.fail("%s %d is over the limit of %d", what, n, limit)
		return 0
	}
	return int(n)
}

func (r *reader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.fail("truncated (reading %s of %d bytes)", what, n)
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) string(what string, limit int) string {
	s := string(r.bytes(r.count(what+" length", limit), what))
	if r.err == nil && !utf8.ValidString(s) {
		r.fail("%s is not valid UTF-8", what)
	}
	return s
}

// decoded is the bytecode read back, before checking.
type decoded struct {
	f      *file
	codes  [][]byte
	amount []byte       // the amount's code, or nil
	decls  []*fieldDecl // the evidence table as written (inferred or declared)
	ctx    bool         // flagContext: the code may read the context
}

func readBytecode(b []byte) (*decoded, error) {
	if len(b) < len(bytecodeMagic)+1 || string(b[:len(bytecodeMagic)]) != bytecodeMagic {
		return nil, errors.New("not policy bytecode (bad magic)")
	}
	if v := b[len(bytecodeMagic)]; v != bytecodeVersion {
		return nil, fmt.Errorf("bytecode version %d is not supported (this build reads version %d)", v, bytecodeVersion)
	}
	r := &reader{b: b, off: len(bytecodeMagic) + 1}
	f := &file{}
	f.name = r.string("name", MaxSourceBytes)
	f.extractor = r.string("extractor", maxExtractorName)
	f.hasExtractor = f.extractor != ""
	flags := r.byte("flags")
	if flags&^knownFlags != 0 {
		r.fail("unknown flags %#x", flags)
	}
	f.evidenceDeclared = flags&flagEvidence != 0
	np := r.count("parameter count", MaxParameters)
	for i := 0; i < np && r.err == nil; i++ {
		d := &fieldDecl{name: r.string("parameter name", MaxSourceBytes), typ: Type(r.byte("parameter type"))}
		switch r.byte("parameter flag") {
		case 0:
		case 1:
			d.optional = true
		default:
			r.fail("parameter %q: bad optional flag", d.name)
		}
		f.params = append(f.params, d)
	}
	if flags&flagAgents != 0 {
		slot := r.count("agents slot", max(np-1, 0))
		if r.err == nil && np == 0 {
			r.fail("agents slot, but no parameters")
		}
		if r.err == nil {
			// By name, as a source names it: the checker resolves the slot again, and
			// encoding it must give the same byte.
			f.agents = &ref{name: f.params[slot].name}
		}
	}
	ne := r.count("evidence count", MaxEvidence)
	var evs []*fieldDecl
	for i := 0; i < ne && r.err == nil; i++ {
		evs = append(evs, &fieldDecl{name: r.string("evidence name", MaxSourceBytes), typ: Type(r.byte("evidence type"))})
	}
	if f.evidenceDeclared {
		f.evidence = evs
	}
	var amount []byte
	if flags&flagAmount != 0 {
		amount = r.bytes(r.count("amount code length", len(b)), "amount code")
		if r.err == nil && len(amount) == 0 {
			r.fail("amount code is empty")
		}
	}
	if flags&flagPeriod != 0 {
		f.period = period(r.byte("period"))
		if r.err == nil && (f.period == periodNone || int(f.period) >= len(periodNames)) {
			r.fail("period %d is not day (1), week (2) or month (3)", f.period)
		}
	}
	nc := r.count("constraint count", MaxConstraints)
	codes := make([][]byte, 0, nc)
	for i := 0; i < nc && r.err == nil; i++ {
		c := &constraint{}
		switch r.byte("constraint flag") {
		case 0:
		case 1:
			c.optional = true
		default:
			r.fail("constraint %d: bad flag", i)
		}
		f.constraints = append(f.constraints, c)
		codes = append(codes, r.bytes(r.count("code length", len(b)), "constraint code"))
	}
	if r.err == nil && r.off != len(b) {
		r.fail("%d bytes after the last constraint", len(b)-r.off)
	}
	if r.err != nil {
		return nil, r.err
	}
	if f.hasExtractor {
		if msg := checkExtractorName(f.extractor); msg != "" {
			return nil, errors.New(msg)
		}
	}
	return &decoded{f: f, codes: codes, amount: amount, decls: evs, ctx: flags&flagContext != 0}, nil
}

// load turns one expression's code into instructions, adding its constants to pg.
// It checks what can be checked locally: known opcodes, well-formed operands, slots
// in range, context values only where ctx allows them (flagContext), jumps forward
// onto an instruction, and a stack that never underflows. It returns the stack depth
// the code needs.
func (pg *program) load(code []byte, nparams, nev int, ctx bool) ([]instr, int, error) {
	r := &reader{b: code}
	var ins []instr
	at := make([]int32, len(code)+1) // byte offset -> instruction index + 1
	var jumps []int                  // instructions whose a is still a byte offset
	height, maxHeight := 0, 0
	use := func(pop, push int) {
		if height < pop {
			r.fail("stack underflow")
			return
		}
		height += push - pop
		maxHeight = max(maxHeight, height)
	}
	for r.off < len(code) && r.err == nil {
		at[r.off] = int32(len(ins)) + 1
		in := instr{op: r.byte("opcode")}
		switch in.op {
		case bcInt, bcStr, bcSetStr, bcSetInt:
			in.a = pg.constant(r, in.op)
			use(0, 1)
		case bcTrue, bcFalse:
			use(0, 1)
		case bcParam, bcEvid, bcCtx:
			in.a = slot(r, in.op, nparams, nev, ctx)
			use(0, 1)
		case bcNeg, bcNot, bcLen, bcLower, bcUpper:
			use(1, 1)
		case bcAdd, bcSub, bcMul, bcEq, bcNe, bcLt, bcLe, bcGt, bcGe, bcIn, bcNotIn,
			bcContains, bcStartsWith, bcEndsWith, bcSubset, bcIntersects:
			use(2, 1)
		case bcChain:
			in.cmp = r.byte("chain comparison")
			if in.cmp < bcEq || in.cmp > bcGe {
				r.fail("chain comparison %#x is not a comparison", in.cmp)
			}
			in.a = int32(r.count("jump offset", len(code)))
			jumps = append(jumps, len(ins))
			use(2, 1)
		case bcJumpIfFalse, bcJumpIfTrue:
			in.a = int32(r.count("jump offset", len(code)))
			jumps = append(jumps, len(ins))
			// The jump path keeps the value; the path that goes on pops it, and the
			// right operand pushes the result again.
			use(1, 0)
		default:
			r.fail("unknown opcode %#x", in.op)
		}
		if in.op == bcChain || in.op == bcJumpIfFalse || in.op == bcJumpIfTrue {
			// Offsets count from the end of the instruction.
			target := r.off + int(in.a)
			if target > len(code) {
				r.fail("jump past the end of the code")
			} else {
				in.a = int32(target)
			}
		}
		ins = append(ins, in)
	}
	if r.err != nil {
		return nil, 0, r.err
	}
	at[len(code)] = int32(len(ins)) + 1
	for _, j := range jumps {
		idx := at[ins[j].a] - 1
		if idx < 0 {
			return nil, 0, errors.New("bytecode: a jump lands inside an instruction")
		}
		if int(idx) <= j {
			return nil, 0, errors.New("bytecode: a jump does not go forward")
		}
		ins[j].a = idx
	}
	if height != 1 {
		return nil, 0, fmt.Errorf("bytecode: code leaves %d values on the stack, want 1", height)
	}
	return ins, maxHeight, nil
}

// constant reads the operand of an instruction that pushes a constant into pg's
// tables, and returns its index there.
func (pg *program) constant(r *reader, op byte) int32 {
	switch op {
	case bcInt:
		pg.ints = append(pg.ints, r.varint("integer"))
		return int32(len(pg.ints) - 1)
	case bcStr:
		pg.strs = append(pg.strs, r.string("string", MaxStringBytes))
		return int32(len(pg.strs) - 1)
	case bcSetStr:
		n := r.count("set size", MaxSetElements)
		strs := make([]string, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			strs = append(strs, r.string("set element", MaxStringBytes))
		}
		pg.sets = append(pg.sets, newStrSet(strs))
	default:
		n := r.count("set size", MaxSetElements)
		ints := make([]int64, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			ints = append(ints, r.varint("set element"))
		}
		pg.sets = append(pg.sets, newIntSet(ints))
	}
	return int32(len(pg.sets) - 1)
}

// slot reads the operand of an instruction that loads a parameter, an evidence field
// or a context value, and checks it against the tables; ctx says whether the flags
// allow context values.
func slot(r *reader, op byte, nparams, nev int, ctx bool) int32 {
	switch op {
	case bcParam:
		a := r.count("parameter slot", max(nparams-1, 0))
		if nparams == 0 {
			r.fail("parameter slot, but no parameters")
		}
		return int32(a)
	case bcEvid:
		a := r.count("evidence slot", max(nev-1, 0))
		if nev == 0 {
			r.fail("evidence slot, but no evidence fields")
		}
		return int32(a)
	}
	a := r.count("context value", int(numCtx)-1)
	if !ctx {
		r.fail("context value, but flags bit 4 is clear")
	}
	return int32(a)
}

// decompiler rebuilds the tree of one constraint from its instructions.
type decompiler struct {
	ins    []instr
	pg     *program
	params []*fieldDecl
	ev     []*fieldDecl
	depth  int
}

// entry is a stack entry: an expression, or a chain whose last operand is on top
// waiting for the next comparison.
type entry struct {
	x     expr
	chain *chain
	end   int // for a chain: the instruction index all its links jump to
}

var errShape = errors.New("bytecode: code does not have the shape the compiler gives")

func (d *decompiler) run(lo, hi int) (expr, error) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > MaxDepth+1 {
		return nil, fmt.Errorf("bytecode: nesting over the limit of %d", MaxDepth)
	}
	var st []entry
	pop := func() (expr, bool) {
		if len(st) == 0 || st[len(st)-1].x == nil {
			return nil, false
		}
		x := st[len(st)-1].x
		st = st[:len(st)-1]
		return x, true
	}
	for pc := lo; pc < hi; pc++ {
		in := d.ins[pc]
		switch in.op {
		case bcInt:
			st = append(st, entry{x: &intLit{v: d.pg.ints[in.a]}})
		case bcStr:
			st = append(st, entry{x: &strLit{v: d.pg.strs[in.a]}})
		case bcTrue, bcFalse:
			st = append(st, entry{x: &boolLit{v: in.op == bcTrue}})
		case bcSetStr:
			st = append(st, entry{x: &setLit{elem: TypeString, strs: d.pg.sets[in.a].strs}})
		case bcSetInt:
			st = append(st, entry{x: &setLit{elem: TypeInt, ints: d.pg.sets[in.a].ints}})
		case bcParam:
			st = append(st, entry{x: &ref{name: d.params[in.a].name}})
		case bcEvid:
			st = append(st, entry{x: &ref{evidence: true, name: d.ev[in.a].name}})
		case bcCtx:
			st = append(st, entry{x: &ctxRef{v: ctxVal(in.a)}})
		case bcNeg, bcNot:
			x, ok := pop()
			if !ok {
				return nil, errShape
			}
			o := opNeg
			if in.op == bcNot {
				o = opNot
			}
			st = append(st, entry{x: &unary{op: o, x: x}})
		case bcJumpIfFalse, bcJumpIfTrue:
			x, ok := pop()
			target := int(in.a)
			if !ok || target > hi {
				return nil, errShape
			}
			y, err := d.run(pc+1, target)
			if err != nil {
				return nil, err
			}
			o := opAnd
			if in.op == bcJumpIfTrue {
				o = opOr
			}
			st = append(st, entry{x: &binaryExpr{op: o, x: x, y: y}})
			pc = target - 1
		case bcChain, bcEq, bcNe, bcLt, bcLe, bcGt, bcGe:
			y, ok := pop()
			if !ok || len(st) == 0 {
				return nil, errShape
			}
			e, err := compareEntry(st[len(st)-1], y, in, pc, hi)
			if err != nil {
				return nil, err
			}
			st[len(st)-1] = e
		case bcAdd, bcSub, bcMul, bcIn, bcNotIn:
			y, ok1 := pop()
			x, ok2 := pop()
			if !ok1 || !ok2 {
				return nil, errShape
			}
			st = append(st, entry{x: &binaryExpr{op: binOp(in.op), x: x, y: y}})
		default: // the functions
			f := fnOf(in.op)
			args := make([]expr, f.arity())
			for i := len(args) - 1; i >= 0; i-- {
				x, ok := pop()
				if !ok {
					return nil, errShape
				}
				args[i] = x
			}
			st = append(st, entry{x: &call{fn: f, name: fnNames[f], args: args}})
		}
	}
	if len(st) != 1 || st[0].x == nil {
		return nil, errShape
	}
	return st[0].x, nil
}

// compareEntry is the entry a comparison instruction at pc makes of the entry below
// its right operand y: a comparison of two operands, a chain begun, a link added to
// one, or the chain ended.
func compareEntry(top entry, y expr, in instr, pc, hi int) (entry, error) {
	code := in.op
	if code == bcChain {
		code = in.cmp
	}
	o := cmpOp(code)
	var c *chain
	switch {
	case top.chain != nil:
		c = top.chain
		if in.op == bcChain && int(in.a) != top.end || in.op != bcChain && pc+1 != top.end {
			return entry{}, errShape
		}
		c.ops = append(c.ops, o)
		c.xs = append(c.xs, y)
	case in.op == bcChain:
		if int(in.a) > hi {
			return entry{}, errShape
		}
		c = &chain{ops: []op{o}, xs: []expr{top.x, y}}
	default:
		return entry{x: &binaryExpr{op: o, x: top.x, y: y}}, nil
	}
	if in.op == bcChain {
		return entry{chain: c, end: int(in.a)}, nil
	}
	return entry{x: c}, nil
}

func cmpOp(c byte) op {
	return [...]op{bcEq: opEq, bcNe: opNe, bcLt: opLt, bcLe: opLe, bcGt: opGt, bcGe: opGe}[c]
}

func binOp(c byte) op {
	switch c {
	case bcAdd:
		return opAdd
	case bcSub:
		return opSub
	case bcMul:
		return opMul
	case bcIn:
		return opIn
	}
	return opNotIn
}

func fnOf(c byte) fn {
	for f := fnLen; f <= fnIntersects; f++ {
		if fnCode[f] == c {
			return f
		}
	}
	return fnUnknown
}
