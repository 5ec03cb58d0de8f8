package docs

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
)

// A document's samples were printed by another server on another day: its ids, keys,
// digests, times and ports are not the ones a run gets. Each such value is a token. A
// token of the document stands for the first value a run prints in its place, and for
// that one alone: the same document value must always meet the same run value, and two
// document values never one run value. So a sample that names a key other than the one
// the document showed before still fails, as a drifted value would.

// tokenClasses are the kinds of values the samples may differ in, tried in this order.
// A class that binds carries a value across commands; a time does not.
var tokenClasses = []struct {
	name    string
	pattern string
	binds   bool
}{
	{"time", `\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z`, false},
	{"uuid", `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`, true},
	{"base64", `[A-Za-z0-9+/]{43}=|[A-Za-z0-9+/]{60,}={0,2}`, true},
	{"base58", `\b[1-9A-HJ-NP-Za-km-z]{32,44}\b`, true},
}

// wildcard is what a sample elides: "…" or "..." within a line, any text; alone on a
// line, any number of lines.
const wildcard = `…|\.\.\.`

var tokenRE = func() *regexp.Regexp {
	var alts []string
	for _, c := range tokenClasses {
		alts = append(alts, "(?P<"+c.name+">"+c.pattern+")")
	}
	alts = append(alts, "(?P<wild>"+wildcard+")")
	return regexp.MustCompile(strings.Join(alts, "|"))
}()

// segment is a piece of a sample line: literal text, a token of a class, or a wildcard.
type segment struct {
	text  string
	class int // index into tokenClasses; -1 literal, -2 wildcard
}

// segments splits a line of a document into literal text, tokens and wildcards.
func segments(line string, wild bool) []segment {
	var out []segment
	pos := 0
	for _, m := range tokenRE.FindAllStringSubmatchIndex(line, -1) {
		class := -1
		for i := range tokenClasses {
			if m[2+2*i] >= 0 {
				class = i
			}
		}
		if class < 0 && !wild {
			continue // "..." in a command is the command's own
		}
		if class < 0 {
			class = -2
		}
		if m[0] > pos {
			out = append(out, segment{text: line[pos:m[0]], class: -1})
		}
		out = append(out, segment{text: line[m[0]:m[1]], class: class})
		pos = m[1]
	}
	if pos < len(line) {
		out = append(out, segment{text: line[pos:], class: -1})
	}
	return out
}

// bindings maps a document's token values to the values of this run.
type bindings map[string]string

// bind records that the document's value doc stands for got, or says why it cannot.
func (b bindings) bind(doc, got string) error {
	if v, ok := b[doc]; ok {
		if v != got {
			return fmt.Errorf("%s stands for %s, here %s", doc, v, got)
		}
		return nil
	}
	for d, v := range b {
		if v == got {
			return fmt.Errorf("%s here is %s, which %s already stands for", doc, got, d)
		}
	}
	b[doc] = got
	return nil
}

// rewrite puts this run's values in place of the document's in a command. A value the
// run has not met is the user's own choice (an intent id, say): it stands for itself.
func (b bindings) rewrite(command string) (string, error) {
	var sb strings.Builder
	for _, s := range segments(command, false) {
		if s.class < 0 || !tokenClasses[s.class].binds {
			sb.WriteString(s.text)
			continue
		}
		if v, ok := b[s.text]; ok {
			sb.WriteString(v)
			continue
		}
		if err := b.bind(s.text, s.text); err != nil {
			return "", err
		}
		sb.WriteString(s.text)
	}
	return sb.String(), nil
}

// matchLine matches one line of output with one of the sample, adding to b the values
// it learns; b is left as it was when they do not match.
func matchLine(want, got string, b bindings) bool {
	segs := segments(want, true)
	var re strings.Builder
	re.WriteString("^")
	for _, s := range segs {
		switch {
		case s.class == -1:
			re.WriteString(regexp.QuoteMeta(s.text))
		case s.class == -2:
			re.WriteString(".*?")
		default:
			re.WriteString("(" + strings.TrimPrefix(strings.TrimSuffix(tokenClasses[s.class].pattern, `\b`), `\b`) + ")")
		}
	}
	re.WriteString("$")
	m := regexp.MustCompile(re.String()).FindStringSubmatch(got)
	if m == nil {
		return false
	}
	next := maps.Clone(b)
	group := 1
	for _, s := range segs {
		if s.class < 0 {
			continue
		}
		v := m[group]
		group++
		if tokenClasses[s.class].binds && next.bind(s.text, v) != nil {
			return false
		}
	}
	maps.Copy(b, next)
	return true
}

// isEllipsis reports whether a sample line stands for any number of lines.
func isEllipsis(line string) bool {
	t := strings.TrimSpace(line)
	return t == "..." || t == "…"
}

// matchLines matches output with a sample line by line, a line "..." matching any
// number of lines; on success b holds what was learnt.
func matchLines(want, got []string, b bindings) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if isEllipsis(want[0]) {
		for k := 0; k <= len(got); k++ {
			try := maps.Clone(b)
			if matchLines(want[1:], got[k:], try) {
				maps.Copy(b, try)
				return true
			}
		}
		return false
	}
	if len(got) == 0 {
		return false
	}
	try := maps.Clone(b)
	if !matchLine(want[0], got[0], try) || !matchLines(want[1:], got[1:], try) {
		return false
	}
	maps.Copy(b, try)
	return true
}

// firstDifference names the first line at which output and sample part, for a failure's
// message.
func firstDifference(want, got []string, b bindings) string {
	try := maps.Clone(b)
	for i := range max(len(want), len(got)) {
		switch {
		case i < len(want) && isEllipsis(want[i]):
			return unmatched(want[i+1:], got[min(i, len(got)):], try)
		case i >= len(want):
			return fmt.Sprintf("line %d: output goes on: %q", i+1, got[i])
		case i >= len(got):
			return fmt.Sprintf("line %d: output ends; the sample goes on: %q", i+1, want[i])
		case !matchLine(want[i], got[i], try):
			return fmt.Sprintf("line %d:\n  sample: %s\n  output: %s", i+1, want[i], got[i])
		}
	}
	return "a value stands for two"
}

// unmatched names the first sample line after an elided part that no line of the rest of
// the output matches.
func unmatched(want, got []string, b bindings) string {
	for _, w := range want {
		if isEllipsis(w) {
			continue
		}
		found := false
		for _, g := range got {
			if matchLine(w, g, maps.Clone(b)) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Sprintf("after an elided part, no line of the output matches the sample's\n  %s", w)
		}
	}
	return "after an elided part, the lines come in another order, or a value stands for two"
}
