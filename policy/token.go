package policy

import "strconv"

// tokKind is the kind of a lexical token. Words (name, parameters, and, in, true...) are
// identifiers: the parser gives them their meaning by position, so that a field may be
// called "name" or "in".
type tokKind uint8

const (
	tEOF tokKind = iota
	tIllegal
	tIdent
	tInt    // text is the digits
	tString // text is the decoded value
	tLBrace
	tRBrace
	tLParen
	tRParen
	tComma
	tSemi
	tColon
	tDot
	tLt
	tGt
	tLe
	tGe
	tEq
	tNe
	tPlus
	tMinus
	tStar
	tAndAnd
	tOrOr
	tBang
)

var tokSpelling = [...]string{
	tLBrace: "{", tRBrace: "}", tLParen: "(", tRParen: ")", tComma: ",", tSemi: ";",
	tColon: ":", tDot: ".", tLt: "<", tGt: ">", tLe: "<=", tGe: ">=", tEq: "==", tNe: "!=",
	tPlus: "+", tMinus: "-", tStar: "*", tAndAnd: "&&", tOrOr: "||", tBang: "!",
}

type token struct {
	kind tokKind
	pos  Pos
	text string
}

// describe names the token for an error message ("found ...").
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tIllegal:
		return "an invalid character"
	case tIdent:
		return strconv.Quote(t.text)
	case tInt:
		return "integer " + t.text
	case tString:
		return "string " + quote(t.text)
	}
	return "'" + tokSpelling[t.kind] + "'"
}

func (t token) is(word string) bool { return t.kind == tIdent && t.text == word }

// op is an operator of the expression tree.
type op uint8

const (
	opNone op = iota
	opOr
	opAnd
	opNot
	opNeg
	opEq
	opNe
	opLt
	opLe
	opGt
	opGe
	opIn
	opNotIn
	opAdd
	opSub
	opMul
)

var opSpelling = [...]string{
	opOr: "or", opAnd: "and", opNot: "not", opNeg: "-", opEq: "==", opNe: "!=", opLt: "<",
	opLe: "<=", opGt: ">", opGe: ">=", opIn: "in", opNotIn: "not in", opAdd: "+", opSub: "-",
	opMul: "*",
}

func (o op) String() string { return opSpelling[o] }

// Precedence levels, lowest first, as the language defines them.
const (
	precLowest = iota
	precOr
	precAnd
	precNot
	precCmp
	precAdd
	precMul
	precUnary
	precPrimary
)

func (o op) prec() int {
	switch o {
	case opOr:
		return precOr
	case opAnd:
		return precAnd
	case opNot:
		return precNot
	case opEq, opNe, opLt, opLe, opGt, opGe, opIn, opNotIn:
		return precCmp
	case opAdd, opSub:
		return precAdd
	case opMul:
		return precMul
	case opNeg:
		return precUnary
	}
	return precLowest
}

// fn is a built-in function.
type fn uint8

const (
	fnUnknown fn = iota
	fnLen
	fnLower
	fnUpper
	fnContains
	fnStartsWith
	fnEndsWith
	fnSubset
	fnIntersects
)

var fnNames = [...]string{
	fnLen: "len", fnLower: "lower", fnUpper: "upper", fnContains: "contains",
	fnStartsWith: "starts_with", fnEndsWith: "ends_with", fnSubset: "subset", fnIntersects: "intersects",
}

const fnList = "len, lower, upper, contains, starts_with, ends_with, subset, intersects"

func lookupFn(name string) fn {
	for f := fnLen; f <= fnIntersects; f++ {
		if fnNames[f] == name {
			return f
		}
	}
	return fnUnknown
}

func (f fn) arity() int {
	switch f {
	case fnLen, fnLower, fnUpper:
		return 1
	}
	return 2
}
