package policy

import "encoding/binary"

// The bytecode format is described in docs/bytecode.md; a change to anything written
// here that could change an id or a decision needs a new bytecodeVersion, but for a
// part a policy may leave out that a flag bit announces (see flagAgents).

const (
	bytecodeMagic   = "IPOL"
	bytecodeVersion = 1
)

// Bits of the flags byte. A part the language adds later that a policy may leave out is
// announced by a bit of its own, with its bytes written only when the bit is set: a
// policy without the part keeps the bytes, and so the id, it had before the part
// existed, and a reader that does not know the bit refuses the bytecode as having
// unknown flags rather than misreading it.
//
// flagContext has no bytes of its own: it announces the CTX instruction, which only
// the constraints of a policy with the flag may use, so that a reader older than the
// instruction refuses such bytecode by its flags too, before reading any code.
const (
	flagEvidence byte = 1 << 0 // the policy has an evidence block
	flagAgents   byte = 1 << 1 // an agents part: a uvarint parameter slot follows the parameters
	flagAmount   byte = 1 << 2 // an amount part: its code follows the evidence table
	flagPeriod   byte = 1 << 3 // a period part: its byte follows the amount
	flagContext  byte = 1 << 4 // the constraints read the decision's context (CTX)
	knownFlags        = flagEvidence | flagAgents | flagAmount | flagPeriod | flagContext
)

// Opcodes. Their values are part of the format.
const (
	bcInt    byte = 0x01 // varint value
	bcStr    byte = 0x02 // uvarint length, bytes
	bcTrue   byte = 0x03
	bcFalse  byte = 0x04
	bcSetStr byte = 0x05 // uvarint count, then count strings, sorted and distinct
	bcSetInt byte = 0x06 // uvarint count, then count varints, sorted and distinct
	bcParam  byte = 0x07 // uvarint slot
	bcEvid   byte = 0x08 // uvarint slot
	bcCtx    byte = 0x09 // uvarint context value (ctxVal); only with flagContext

	bcNeg byte = 0x10
	bcNot byte = 0x11
	bcAdd byte = 0x12
	bcSub byte = 0x13
	bcMul byte = 0x14

	bcEq    byte = 0x20
	bcNe    byte = 0x21
	bcLt    byte = 0x22
	bcLe    byte = 0x23
	bcGt    byte = 0x24
	bcGe    byte = 0x25
	bcIn    byte = 0x26
	bcNotIn byte = 0x27
	bcChain byte = 0x28 // comparison opcode byte, uvarint offset to the end of the chain

	bcJumpIfFalse byte = 0x30 // uvarint offset; and
	bcJumpIfTrue  byte = 0x31 // uvarint offset; or

	bcLen        byte = 0x40
	bcLower      byte = 0x41
	bcUpper      byte = 0x42
	bcContains   byte = 0x43
	bcStartsWith byte = 0x44
	bcEndsWith   byte = 0x45
	bcSubset     byte = 0x46
	bcIntersects byte = 0x47
)

var opCode = [...]byte{
	opNeg: bcNeg, opNot: bcNot, opAdd: bcAdd, opSub: bcSub, opMul: bcMul,
	opEq: bcEq, opNe: bcNe, opLt: bcLt, opLe: bcLe, opGt: bcGt, opGe: bcGe, opIn: bcIn, opNotIn: bcNotIn,
	opAnd: bcJumpIfFalse, opOr: bcJumpIfTrue,
}

var fnCode = [...]byte{
	fnLen: bcLen, fnLower: bcLower, fnUpper: bcUpper, fnContains: bcContains,
	fnStartsWith: bcStartsWith, fnEndsWith: bcEndsWith, fnSubset: bcSubset, fnIntersects: bcIntersects,
}

// encode writes a checked tree as bytecode. It returns the whole, the code of each
// constraint and the amount's code, or nil (slices of the whole).
func encode(f *file, res *checkResult) (b []byte, codes [][]byte, amount []byte) {
	b = make([]byte, 0, 256)
	b = append(b, bytecodeMagic...)
	b = append(b, bytecodeVersion)
	b = appendString(b, f.name)
	b = appendString(b, f.extractor)
	var flags byte
	if f.evidenceDeclared {
		flags |= flagEvidence
	}
	if f.agents != nil {
		flags |= flagAgents
	}
	if f.amount != nil {
		flags |= flagAmount
	}
	if f.period != periodNone {
		flags |= flagPeriod
	}
	for _, c := range f.constraints {
		if readsOf(c.x) != 0 {
			flags |= flagContext
		}
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(res.params)))
	for _, d := range res.params {
		b = appendString(b, d.name)
		b = append(b, byte(d.typ))
		if d.optional {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	if f.agents != nil {
		// After the table, so that the slot is read when the table it indexes is known.
		b = binary.AppendUvarint(b, uint64(f.agents.slot))
	}
	b = binary.AppendUvarint(b, uint64(len(res.evidence)))
	for _, d := range res.evidence {
		b = appendString(b, d.name)
		b = append(b, byte(d.typ))
	}
	var code []byte
	var amountSpan [2]int
	if f.amount != nil {
		// After both tables, whose slots the code reads.
		code = compileExpr(code[:0], f.amount)
		b = binary.AppendUvarint(b, uint64(len(code)))
		amountSpan = [2]int{len(b), len(b) + len(code)}
		b = append(b, code...)
	}
	if f.period != periodNone {
		b = append(b, byte(f.period))
	}
	b = binary.AppendUvarint(b, uint64(len(f.constraints)))
	spans := make([][2]int, len(f.constraints))
	for i, c := range f.constraints {
		if c.optional {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		code = compileExpr(code[:0], c.x)
		b = binary.AppendUvarint(b, uint64(len(code)))
		spans[i] = [2]int{len(b), len(b) + len(code)}
		b = append(b, code...)
	}
	codes = make([][]byte, len(spans))
	for i, s := range spans {
		codes[i] = b[s[0]:s[1]:s[1]]
	}
	if f.amount != nil {
		amount = b[amountSpan[0]:amountSpan[1]:amountSpan[1]]
	}
	return b, codes, amount
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// compileExpr appends the postfix code of e to b.
func compileExpr(b []byte, e expr) []byte {
	switch e := e.(type) {
	case *intLit:
		b = append(b, bcInt)
		return binary.AppendVarint(b, e.v)
	case *strLit:
		b = append(b, bcStr)
		return appendString(b, e.v)
	case *boolLit:
		if e.v {
			return append(b, bcTrue)
		}
		return append(b, bcFalse)
	case *setLit:
		if e.elem == TypeString {
			b = append(b, bcSetStr)
			b = binary.AppendUvarint(b, uint64(len(e.strs)))
			for _, s := range e.strs {
				b = appendString(b, s)
			}
			return b
		}
		b = append(b, bcSetInt)
		b = binary.AppendUvarint(b, uint64(len(e.ints)))
		for _, n := range e.ints {
			b = binary.AppendVarint(b, n)
		}
		return b
	case *ref:
		if e.evidence {
			b = append(b, bcEvid)
		} else {
			b = append(b, bcParam)
		}
		return binary.AppendUvarint(b, uint64(e.slot))
	case *ctxRef:
		b = append(b, bcCtx)
		return binary.AppendUvarint(b, uint64(e.v))
	case *unary:
		b = compileExpr(b, e.x)
		return append(b, opCode[e.op])
	case *binaryExpr:
		b = compileExpr(b, e.x)
		if e.op == opAnd || e.op == opOr {
			// The right operand is skipped when the left decides: the jump keeps the
			// left value as the result.
			right := compileExpr(nil, e.y)
			b = append(b, opCode[e.op])
			b = binary.AppendUvarint(b, uint64(len(right)))
			return append(b, right...)
		}
		b = compileExpr(b, e.y)
		return append(b, opCode[e.op])
	case *chain:
		// x0 x1 CHAIN(op1, off) x2 CHAIN(op2, off) ... xn opN: a link that fails
		// leaves false and jumps to the end, one that holds leaves its right operand
		// for the next link.
		b = compileExpr(b, e.xs[0])
		n := len(e.ops)
		tail := compileExpr(nil, e.xs[n])
		tail = append(tail, opCode[e.ops[n-1]])
		for i := n - 1; i >= 1; i-- {
			x := compileExpr(nil, e.xs[i])
			x = append(x, bcChain, opCode[e.ops[i-1]])
			x = binary.AppendUvarint(x, uint64(len(tail)))
			tail = append(x, tail...)
		}
		return append(b, tail...)
	case *call:
		for _, a := range e.args {
			b = compileExpr(b, a)
		}
		return append(b, fnCode[e.fn])
	}
	panic("policy: compiling an unknown node")
}
