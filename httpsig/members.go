package httpsig

import (
	"strconv"

	"github.com/dunglas/httpsfv"
)

// sigParams is a Signature-Input member as Verify reads it: whether it is an inner
// list, the list's items with the names of their parameters, and its parameters in
// order. Both readers of a member (readMember and httpsfv) give it, so that what
// follows does not depend on which one read it.
type sigParams struct {
	list   bool
	items  []sigItem
	params paramList
}

// sigItem is one item of an inner list: its value (a string for a component name)
// and the names of its parameters, which Verify refuses.
type sigItem struct {
	value  any
	params []string
}

// paramList is an RFC 8941 parameter list: names in order, each with its bare item
// (int64, string, httpsfv.Token, bool, and the other types httpsfv reads).
type paramList struct {
	names  []string
	values []any
}

// Get is the value of the parameter name, as httpsfv.Params.Get.
func (p *paramList) Get(name string) (any, bool) {
	for i, n := range p.names {
		if n == name {
			return p.values[i], true
		}
	}
	return nil, false
}

// fromHTTPSFV is m, as httpsfv read it, in the form Verify reads.
func fromHTTPSFV(m httpsfv.Member) sigParams {
	il, ok := m.(httpsfv.InnerList)
	if !ok {
		return sigParams{}
	}
	sp := sigParams{list: true, params: paramsOf(il.Params)}
	for _, it := range il.Items {
		item := sigItem{value: it.Value}
		if it.Params != nil && len(it.Params.Names()) > 0 {
			item.params = it.Params.Names()
		}
		sp.items = append(sp.items, item)
	}
	return sp
}

func paramsOf(p *httpsfv.Params) paramList {
	var out paramList
	if p == nil {
		return out
	}
	for _, n := range p.Names() {
		v, _ := p.Get(n)
		out.names = append(out.names, n)
		out.values = append(out.values, v)
	}
	return out
}

// readMember reads the value of a Signature-Input member, s, in the shape signers
// send: an inner list of plain strings, then parameters whose values are integers,
// strings, tokens or booleans, each named once. It reports false for anything else
// (decimals, byte sequences, dates, display strings, parameters on an item, a name
// used twice, a syntax error), which httpsfv then reads: readMember accepts nothing
// httpsfv refuses and reads what it accepts as httpsfv does (FuzzParseMembers). It
// exists because httpsfv's reading cost a signed proposal 7 µs and 60 allocations,
// most of them a map for the parameters of each component.
func readMember(label, s string) (sigParams, bool) {
	var sp sigParams
	if keyLen(label) != len(label) || len(s) == 0 || s[0] != '(' {
		return sp, false
	}
	i := 1
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			return sp, false
		}
		if s[i] == ')' {
			i++
			break
		}
		str, n, ok := readString(s[i:])
		if !ok {
			return sp, false
		}
		i += n
		sp.items = append(sp.items, sigItem{value: str})
		if i == len(s) || s[i] != ' ' && s[i] != ')' {
			return sp, false
		}
	}
	for i < len(s) {
		if s[i] != ';' {
			return sp, false
		}
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
		n := keyLen(s[i:])
		if n == 0 {
			return sp, false
		}
		name := s[i : i+n]
		i += n
		if _, dup := sp.params.Get(name); dup {
			return sp, false
		}
		var v any = true
		if i < len(s) && s[i] == '=' {
			i++
			var ok bool
			if v, n, ok = readBareItem(s[i:]); !ok {
				return sp, false
			}
			i += n
		}
		sp.params.names = append(sp.params.names, name)
		sp.params.values = append(sp.params.values, v)
	}
	sp.list = true
	return sp, true
}

// keyLen is the length of the RFC 8941 key that s begins with, 0 for none.
func keyLen(s string) int {
	if s == "" || !(isLower(s[0]) || s[0] == '*') {
		return 0
	}
	i := 1
	for i < len(s) {
		c := s[i]
		if !(isLower(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		i++
	}
	return i
}

// readBareItem reads the integer, string, token or boolean s begins with, and its
// length.
func readBareItem(s string) (any, int, bool) {
	if s == "" {
		return nil, 0, false
	}
	switch c := s[0]; {
	case c == '"':
		return readString(s)
	case c == '-' || isDigit(c):
		i := 0
		if c == '-' {
			i++
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start || i-start > 15 || i < len(s) && s[i] == '.' {
			return nil, 0, false
		}
		n, err := strconv.ParseInt(s[:i], 10, 64)
		return n, i, err == nil
	case c == '?':
		if len(s) > 1 && (s[1] == '0' || s[1] == '1') {
			return s[1] == '1', 2, true
		}
		return nil, 0, false
	case isAlpha(c) || c == '*':
		i := 1
		for i < len(s) && (isTChar(s[i]) || s[i] == ':' || s[i] == '/') {
			i++
		}
		return httpsfv.Token(s[:i]), i, true
	}
	return nil, 0, false
}

// readString reads the RFC 8941 string s begins with, and its length.
func readString(s string) (string, int, bool) {
	if s == "" || s[0] != '"' {
		return "", 0, false
	}
	var unescaped []byte // nil until an escape is met
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			if unescaped == nil {
				return s[1:i], i + 1, true
			}
			return string(unescaped), i + 1, true
		case c == '\\':
			if i+1 == len(s) || s[i+1] != '"' && s[i+1] != '\\' {
				return "", 0, false
			}
			if unescaped == nil {
				unescaped = append([]byte{}, s[1:i]...)
			}
			i++
			unescaped = append(unescaped, s[i])
		case c < 0x20 || c > 0x7e:
			return "", 0, false
		case unescaped != nil:
			unescaped = append(unescaped, c)
		}
	}
	return "", 0, false
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return isLower(c) || c >= 'A' && c <= 'Z' }

// isTChar reports whether c may appear in an HTTP token (RFC 9110).
func isTChar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
