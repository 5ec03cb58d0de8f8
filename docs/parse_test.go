package docs

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// block is one fenced block of a document that the test runs (or skips, by its marker).
type block struct {
	file   string
	line   int    // of the opening fence, from 1
	marker string // the directive of its doctest comment: "skip ...", "server ...", ...
	steps  []step
	output bool // a plain block shown as the output of the background command
}

// name locates the block for messages: file:line.
func (b block) name() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// step is one command and, in a transcript, the output the document shows for it.
type step struct {
	line    int // of the command's first line
	command string
	want    []string
	compare bool // a transcript ("$ " lines) shows the whole output, an empty one included
}

// shellInfo are the fence info strings of shell blocks.
var shellInfo = map[string]bool{"sh": true, "console": true, "shell": true, "bash": true}

const markerPrefix = "<!-- doctest:"

// parseFile reads the shell blocks of a Markdown file: fences whose info string is a
// shell's, plain fences that start with a "$ " prompt, and plain fences a marker names.
func parseFile(path, name string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks  []block
		marker  string
		lastTxt string // the last non-blank line outside a fence
		fence   string // the open fence, "" outside one
		cur     *block
		lines   []string
		lineNo  int
		startNo int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lineNo++
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if fence != "" {
			if trimmed == fence {
				if cur != nil {
					if err := cur.fill(lines, startNo); err != nil {
						return nil, fmt.Errorf("%s: %w", cur.name(), err)
					}
					if len(cur.steps) > 0 || cur.output || cur.marker != "" {
						blocks = append(blocks, *cur)
					}
				}
				fence, cur, lines = "", nil, nil
				continue
			}
			lines = append(lines, text)
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			fence = "```"
			info := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			if strings.HasPrefix(lastTxt, markerPrefix) {
				marker = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(lastTxt, markerPrefix), "-->"))
			}
			if shellInfo[info] || info == "" {
				cur = &block{file: name, line: lineNo, marker: marker, output: info == "" && marker == "background output"}
				// A plain fence is a shell block only if it is a transcript or marked.
				if info == "" && marker == "" {
					cur.line = -lineNo
				}
			}
			startNo, marker, lastTxt = lineNo+1, "", ""
			continue
		}
		if trimmed != "" {
			lastTxt = trimmed
		}
	}
	return blocks, sc.Err()
}

// fill splits a block's lines into steps: in a transcript each "$ " line starts a
// command (continued while it ends in a backslash or a quote is open) and the lines up
// to the next prompt are its output; in a script each line is a command, its output not
// shown.
func (b *block) fill(lines []string, first int) error {
	plain := b.line < 0
	if plain {
		b.line = -b.line
	}
	if b.output {
		b.steps = []step{{line: first, want: trimTrailingBlank(lines), compare: true}}
		return nil
	}
	transcript := false
	for _, l := range lines {
		if strings.HasPrefix(l, "$ ") {
			transcript = true
		}
	}
	if plain && !transcript {
		return nil // a sample of output, not a shell block
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if transcript && !strings.HasPrefix(l, "$ ") {
			if len(b.steps) == 0 {
				return fmt.Errorf("line %d: output before the first command", first+i)
			}
			s := &b.steps[len(b.steps)-1]
			s.want = append(s.want, l)
			continue
		}
		cmd := strings.TrimPrefix(l, "$ ")
		if !transcript && (strings.TrimSpace(cmd) == "" || strings.HasPrefix(strings.TrimSpace(cmd), "#")) {
			continue
		}
		start := i
		for continued(cmd) && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		b.steps = append(b.steps, step{line: first + start, command: cmd, compare: transcript})
	}
	for i := range b.steps {
		b.steps[i].want = trimTrailingBlank(b.steps[i].want)
	}
	return nil
}

// continued reports whether a command goes on on the next line: it ends in a backslash,
// or a quote is still open.
func continued(cmd string) bool {
	if strings.HasSuffix(cmd, "\\") {
		return true
	}
	var quote, prev rune
	escaped := false
	for _, r := range cmd {
		last := prev
		prev = r
		switch {
		case escaped:
			escaped = false
		case r == '\\' && quote != '\'':
			escaped = true
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (last == 0 || last == ' ' || last == '\t'):
			return false // a comment: quotes after it do not count
		}
	}
	return quote != 0
}

// trimTrailingBlank drops the blank lines at the end, and the spaces at each line's end,
// which neither an editor nor a reader keeps.
func trimTrailingBlank(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " \t")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
