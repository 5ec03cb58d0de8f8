package policy

import (
	"strings"
	"unicode/utf8"
)

// lexer turns source into tokens. It reports what it cannot read to errs and goes on,
// so that the parser sees the rest of the source and can report more than one error.
type lexer struct {
	src  string
	off  int
	line int
	col  int
	errs *errList
}

// lex returns every token of src, ending with tEOF.
func lex(src string, errs *errList) []token {
	l := &lexer{src: src, line: 1, col: 1, errs: errs}
	toks := make([]token, 0, len(src)/4+1)
	for {
		t := l.next()
		toks = append(toks, t)
		if t.kind == tEOF {
			return toks
		}
	}
}

func (l *lexer) pos() Pos { return Pos{l.line, l.col} }

// peek returns the byte at off+i, or 0 past the end.
func (l *lexer) peek(i int) byte {
	if l.off+i < len(l.src) {
		return l.src[l.off+i]
	}
	return 0
}

// advance moves past one character.
func (l *lexer) advance() {
	c := l.src[l.off]
	if c < utf8.RuneSelf {
		l.off++
		if c == '\n' {
			l.line++
			l.col = 1
			return
		}
	} else {
		_, n := utf8.DecodeRuneInString(l.src[l.off:])
		l.off += n
	}
	l.col++
}

func (l *lexer) skipSpaceAndComments() {
	for l.off < len(l.src) {
		switch c := l.src[l.off]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.advance()
		case c == '#' || c == '/' && l.peek(1) == '/':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				if r, n := utf8.DecodeRuneInString(l.src[l.off:]); r == utf8.RuneError && n == 1 {
					l.errs.add(l.pos(), "invalid UTF-8 in comment")
				}
				l.advance()
			}
		default:
			return
		}
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

func (l *lexer) next() token {
	l.skipSpaceAndComments()
	p := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tEOF, pos: p}
	}
	c := l.src[l.off]
	switch {
	case isLetter(c):
		start := l.off
		for l.off < len(l.src) && (isLetter(l.src[l.off]) || isDigit(l.src[l.off])) {
			l.advance()
		}
		return token{kind: tIdent, pos: p, text: l.src[start:l.off]}
	case isDigit(c):
		start := l.off
		for l.off < len(l.src) && isDigit(l.src[l.off]) {
			l.advance()
		}
		text := l.src[start:l.off]
		if l.off < len(l.src) && (isLetter(l.src[l.off]) || l.src[l.off] == '.') {
			l.errs.add(p, "invalid integer literal: a number is decimal digits only")
			for l.off < len(l.src) && (isLetter(l.src[l.off]) || isDigit(l.src[l.off]) || l.src[l.off] == '.') {
				l.advance()
			}
			return token{kind: tIllegal, pos: p}
		}
		if len(text) > 1 && text[0] == '0' {
			l.errs.add(p, "invalid integer literal %s: leading zeros are not allowed", text)
			return token{kind: tIllegal, pos: p}
		}
		return token{kind: tInt, pos: p, text: text}
	case c == '"':
		return l.string(p)
	}
	if k := twoCharToken(c, l.peek(1)); k != tEOF {
		l.advance()
		l.advance()
		return token{kind: k, pos: p}
	}
	if c >= utf8.RuneSelf {
		r, _ := utf8.DecodeRuneInString(l.src[l.off:])
		l.advance()
		if r == utf8.RuneError {
			l.errs.add(p, "invalid UTF-8 in source")
		} else {
			l.errs.add(p, "unexpected character %q", r)
		}
		return token{kind: tIllegal, pos: p}
	}
	l.advance()
	switch c {
	case '{':
		return token{kind: tLBrace, pos: p}
	case '}':
		return token{kind: tRBrace, pos: p}
	case '(':
		return token{kind: tLParen, pos: p}
	case ')':
		return token{kind: tRParen, pos: p}
	case ',':
		return token{kind: tComma, pos: p}
	case ';':
		return token{kind: tSemi, pos: p}
	case ':':
		return token{kind: tColon, pos: p}
	case '.':
		return token{kind: tDot, pos: p}
	case '<':
		return token{kind: tLt, pos: p}
	case '>':
		return token{kind: tGt, pos: p}
	case '+':
		return token{kind: tPlus, pos: p}
	case '-':
		return token{kind: tMinus, pos: p}
	case '*':
		return token{kind: tStar, pos: p}
	case '!':
		return token{kind: tBang, pos: p}
	case '=':
		// A lone '=' is almost always a mistyped '=='; reading it as such lets the
		// parser go on and report what else is wrong.
		l.errs.add(p, "unexpected '=' (want '==' to compare)")
		return token{kind: tEq, pos: p}
	case '&':
		l.errs.add(p, "unexpected '&' (want '&&' or and)")
		return token{kind: tAndAnd, pos: p}
	case '|':
		l.errs.add(p, "unexpected '|' (want '||' or or)")
		return token{kind: tOrOr, pos: p}
	case '/':
		l.errs.add(p, "unexpected '/' (comments start with # or //; there is no division)")
		return token{kind: tIllegal, pos: p}
	}
	l.errs.add(p, "unexpected character %q", rune(c))
	return token{kind: tIllegal, pos: p}
}

// twoCharToken is the operator spelled c0 c1, or tEOF.
func twoCharToken(c0, c1 byte) tokKind {
	switch {
	case c1 == '=' && c0 == '<':
		return tLe
	case c1 == '=' && c0 == '>':
		return tGe
	case c1 == '=' && c0 == '=':
		return tEq
	case c1 == '=' && c0 == '!':
		return tNe
	case c0 == '&' && c1 == '&':
		return tAndAnd
	case c0 == '|' && c1 == '|':
		return tOrOr
	}
	return tEOF
}

// string reads a string literal with the escapes of JSON.
func (l *lexer) string(p Pos) token {
	l.advance() // opening quote
	var b strings.Builder
	start := l.off
	plain := true // no escape seen: the value is a slice of the source
	for {
		if l.off >= len(l.src) || l.src[l.off] == '\n' {
			l.errs.add(p, "string literal not terminated (want a closing '\"' on the same line)")
			return token{kind: tIllegal, pos: p}
		}
		c := l.src[l.off]
		switch {
		case c == '"':
			end := l.off
			l.advance()
			if plain {
				return token{kind: tString, pos: p, text: l.src[start:end]}
			}
			return token{kind: tString, pos: p, text: b.String()}
		case c < 0x20:
			l.errs.add(l.pos(), "control character %U in string literal (write it as an escape such as \\n or \\u%04x)", c, c)
			l.advance()
			return l.skipString(p)
		case c == '\\':
			if plain {
				b.WriteString(l.src[start:l.off])
				plain = false
			}
			if !l.escape(&b) {
				return l.skipString(p)
			}
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(l.src[l.off:])
			if r == utf8.RuneError && n == 1 {
				l.errs.add(l.pos(), "invalid UTF-8 in string literal")
				l.advance()
				return l.skipString(p)
			}
			if !plain {
				b.WriteString(l.src[l.off : l.off+n])
			}
			l.advance()
		default:
			if !plain {
				b.WriteByte(c)
			}
			l.advance()
		}
	}
}

// skipString moves past the rest of a bad string literal.
func (l *lexer) skipString(p Pos) token {
	for l.off < len(l.src) && l.src[l.off] != '\n' {
		c := l.src[l.off]
		l.advance()
		if c == '\\' && l.off < len(l.src) && l.src[l.off] != '\n' {
			l.advance()
		} else if c == '"' {
			break
		}
	}
	return token{kind: tIllegal, pos: p}
}

// escape reads one escape sequence at l.off into b.
func (l *lexer) escape(b *strings.Builder) bool {
	p := l.pos()
	l.advance() // backslash
	if l.off >= len(l.src) {
		l.errs.add(p, "string literal not terminated")
		return false
	}
	c := l.src[l.off]
	switch c {
	case '"', '\\', '/':
		b.WriteByte(c)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		l.advance()
		r, ok := l.hex4(p)
		if !ok {
			return false
		}
		if r >= 0xD800 && r < 0xDC00 {
			// A high surrogate must be followed by an escaped low one.
			if l.peek(0) != '\\' || l.peek(1) != 'u' {
				l.errs.add(p, "invalid escape: lone surrogate \\u%04X", r)
				return false
			}
			l.advance()
			l.advance()
			r2, ok := l.hex4(p)
			if !ok {
				return false
			}
			if r2 < 0xDC00 || r2 > 0xDFFF {
				l.errs.add(p, "invalid escape: \\u%04X is not followed by a low surrogate", r)
				return false
			}
			r = (r-0xD800)<<10 + (r2 - 0xDC00) + 0x10000
		} else if r >= 0xDC00 && r <= 0xDFFF {
			l.errs.add(p, "invalid escape: lone surrogate \\u%04X", r)
			return false
		}
		b.WriteRune(r)
		return true
	default:
		l.errs.add(p, "unknown escape in string literal (want \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX)")
		return false
	}
	l.advance()
	return true
}

func (l *lexer) hex4(p Pos) (rune, bool) {
	var r rune
	for i := 0; i < 4; i++ {
		c := l.peek(0)
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			l.errs.add(p, "invalid \\u escape: want four hexadecimal digits")
			return 0, false
		}
		r = r<<4 | rune(d)
		l.advance()
	}
	return r, true
}
