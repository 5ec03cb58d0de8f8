package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The printer writes the canonical text: the layout of the language's example, fields
// sorted by name, two-space indentation, the word spellings of the operators, sets
// sorted, and parentheses exactly where precedence needs them. Parsing that text gives
// back the same tree, which is why printing twice changes nothing and why the pretty
// form compiles to the same id.

// printFile prints the policy; exprs are its constraints, already printed, as is the
// amount's text (build's prepare).
func printFile(f *file, exprs []string) string {
	var b strings.Builder
	b.WriteString("name ")
	b.WriteString(f.name)
	b.WriteByte('\n')
	if f.hasExtractor {
		b.WriteString("extractor ")
		b.WriteString(quote(f.extractor))
		b.WriteByte('\n')
	}
	if f.agents != nil {
		// In one place, after the name, wherever the source had it: the canonical
		// form is one text per policy.
		b.WriteString("\nagents parameters.")
		b.WriteString(f.agents.name)
		b.WriteByte('\n')
	}
	if f.amount != nil || f.period != periodNone {
		// Together, after the agents: what a mandate counts, and in what period.
		b.WriteByte('\n')
		if f.amount != nil {
			b.WriteString("amount ")
			b.WriteString(f.amount.node().text)
			b.WriteByte('\n')
		}
		if f.period != periodNone {
			b.WriteString("period ")
			b.WriteString(periodNames[f.period])
			b.WriteByte('\n')
		}
	}
	if len(f.params) > 0 {
		b.WriteString("\nparameters {\n")
		printDecls(&b, f.params)
		b.WriteString("}\n")
	}
	if f.evidenceDeclared {
		b.WriteString("\nevidence {\n")
		printDecls(&b, f.evidence)
		b.WriteString("}\n")
	}
	b.WriteString("\nrequires {\n")
	for i, c := range f.constraints {
		b.WriteString("  ")
		if c.optional {
			b.WriteString("optional: ")
		}
		b.WriteString(exprs[i])
		b.WriteString(";\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func printDecls(b *strings.Builder, ds []*fieldDecl) {
	for _, d := range sortDecls(ds) {
		b.WriteString("  ")
		b.WriteString(d.name)
		b.WriteString(": ")
		if d.optional {
			b.WriteString("optional ")
		}
		b.WriteString(d.typ.String())
		b.WriteByte('\n')
	}
}

// exprString is the canonical text of one expression: a constraint's pretty_expr.
func exprString(e expr) string {
	var b strings.Builder
	printExpr(&b, e, precLowest, nil)
	return b.String()
}

// setTexts gives every node of a constraint its text (exprNode.text): each is a part of
// the constraint's own, printed once. A node prints the same inside its parent as alone,
// but for the parentheses its place may need, so that its text is the part of the
// parent's between them. A copy of each node's text would cost the square of the
// constraint's length: 15,000 terms of a sum within the source limit took gigabytes.
func setTexts(x expr) {
	type span struct {
		e          expr
		start, end int
	}
	var spans []span
	var b strings.Builder
	printExpr(&b, x, precLowest, func(e expr, start, end int) { spans = append(spans, span{e, start, end}) })
	text := b.String()
	for _, s := range spans {
		s.e.node().text = text[s.start:s.end]
	}
}

func exprPrec(e expr) int {
	switch e := e.(type) {
	case *unary:
		return e.op.prec()
	case *binaryExpr:
		return e.op.prec()
	case *chain:
		return precCmp
	case *intLit:
		if e.v < 0 {
			return precUnary
		}
	}
	return precPrimary
}

// printExpr writes e, in parentheses when its precedence is below prec. When mark is
// not nil, it hears of the span of b each node's text took, its parentheses left out.
func printExpr(b *strings.Builder, e expr, prec int, mark func(e expr, start, end int)) {
	if exprPrec(e) < prec {
		b.WriteByte('(')
		printExpr(b, e, precLowest, mark)
		b.WriteByte(')')
		return
	}
	start := b.Len()
	printNode(b, e, mark)
	if mark != nil {
		mark(e, start, b.Len())
	}
}

// printNode writes e without the parentheses around it.
func printNode(b *strings.Builder, e expr, mark func(e expr, start, end int)) {
	switch e := e.(type) {
	case *intLit:
		b.WriteString(strconv.FormatInt(e.v, 10))
	case *strLit:
		b.WriteString(quote(e.v))
	case *boolLit:
		b.WriteString(strconv.FormatBool(e.v))
	case *setLit:
		b.WriteByte('{')
		for i, s := range e.strs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quote(s))
		}
		for i, n := range e.ints {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatInt(n, 10))
		}
		b.WriteByte('}')
	case *ref:
		if e.evidence {
			b.WriteString("evidence.")
		} else {
			b.WriteString("parameters.")
		}
		b.WriteString(e.name)
	case *ctxRef:
		b.WriteString(ctxNames[e.v])
	case *unary:
		if e.op == opNot {
			b.WriteString("not ")
			printExpr(b, e.x, precNot, mark)
			return
		}
		b.WriteByte('-')
		printExpr(b, e.x, precUnary, mark)
	case *binaryExpr:
		lp, rp := e.op.prec(), e.op.prec()+1
		if e.op.prec() == precCmp {
			lp = precAdd
		}
		printExpr(b, e.x, lp, mark)
		b.WriteByte(' ')
		b.WriteString(e.op.String())
		b.WriteByte(' ')
		printExpr(b, e.y, rp, mark)
	case *chain:
		for i, x := range e.xs {
			if i > 0 {
				b.WriteByte(' ')
				b.WriteString(e.ops[i-1].String())
				b.WriteByte(' ')
			}
			printExpr(b, x, precAdd, mark)
		}
	case *call:
		b.WriteString(e.name)
		b.WriteByte('(')
		for i, a := range e.args {
			if i > 0 {
				b.WriteString(", ")
			}
			printExpr(b, a, precLowest, mark)
		}
		b.WriteByte(')')
	}
}

const hexDigits = "0123456789abcdef"

// quote writes s as a string literal of the language, which is also a JSON string:
// quotes, backslashes and control characters escaped, everything else as it is.
func quote(s string) string {
	return string(appendQuote(make([]byte, 0, len(s)+2), s))
}

// appendQuote is quote appending to b, so that an explanation, which quotes several
// values, builds its sentence in one buffer rather than a string per value.
func appendQuote(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		// Copy the run that needs no escaping in one go: most values are plain.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '"' && s[j] != '\\' {
			j++
		}
		b = append(b, s[i:j]...)
		i = j
		if i == len(s) {
			break
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			b = append(b, `\u00`...)
			b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
	}
	return append(b, '"')
}
