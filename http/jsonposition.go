package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// syntaxPosition says where text that is not JSON stops parsing: the line and column
// (from 1, in characters) of the character at fault, and what is wrong there, so that a
// person who wrote the body by hand finds the spot. It is "" when the standard parser
// takes the text, which the strict reader may still refuse for what only it checks.
func syntaxPosition(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return ""
	}
	// Offset is the number of bytes read when the parser stopped: the character at
	// fault is the last one read, or, at the end of the text, none.
	at := min(max(int(se.Offset)-1, 0), len(data))
	if at == len(data) || int(se.Offset) > len(data) || se.Error() == "unexpected end of JSON input" {
		line, col := lineColumn(data, len(data))
		return fmt.Sprintf("line %d, column %d: the text ends inside a value", line, col)
	}
	line, col := lineColumn(data, at)
	what := se.Error()
	if c := data[at]; c == '}' || c == ']' {
		if prev := bytes.TrimRight(data[:at], " \t\r\n"); len(prev) > 0 && prev[len(prev)-1] == ',' {
			what = fmt.Sprintf("a comma before '%c': JSON allows no trailing comma", c)
		}
	}
	return fmt.Sprintf("line %d, column %d: %s", line, col, what)
}

// lineColumn is the line and column, from 1, of the byte at offset at.
func lineColumn(data []byte, at int) (int, int) {
	before := data[:at]
	line := 1 + bytes.Count(before, []byte("\n"))
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, 1 + utf8.RuneCount(before[start:])
}
