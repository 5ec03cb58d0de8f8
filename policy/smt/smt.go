// Package smt runs an SMT solver, cvc5 or z3, as a child process for the policy
// analysis (policy.Analyze, policy.Compare). Each session is one process in SMT-LIB's
// interactive mode, spoken to over its standard input and output: the analysis sends a
// command, reads its one answer, and sends the next. The solver is a program outside
// the service; nothing here trusts its answers further than the analysis does, which
// runs every witness through the policy's own evaluator.
package smt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/intentd/intentd/policy"
)

// ErrNotFound is returned by Find when no solver is installed.
var ErrNotFound = errors.New("smt: no SMT solver found: install cvc5 (apt-get install cvc5) or z3")

// Solver is an installed solver program.
type Solver struct {
	path    string
	dialect policy.Dialect
}

// Find looks up a solver: name is a program name or path whose base name starts with
// cvc5 or z3; empty finds cvc5, then z3, on PATH. cvc5 is preferred: it decides sets
// with their sizes, which z3 here does not.
func Find(name string) (*Solver, error) {
	names := []string{name}
	if name == "" {
		names = []string{"cvc5", "z3"}
	}
	for _, n := range names {
		d, err := dialectOf(n)
		if err != nil {
			return nil, err
		}
		path, err := exec.LookPath(n)
		if err != nil {
			if name != "" {
				return nil, fmt.Errorf("smt: %w", err)
			}
			continue
		}
		return &Solver{path: path, dialect: d}, nil
	}
	return nil, ErrNotFound
}

func dialectOf(name string) (policy.Dialect, error) {
	base := filepath.Base(name)
	switch {
	case strings.HasPrefix(base, "cvc5"):
		return policy.DialectCVC5, nil
	case strings.HasPrefix(base, "z3"):
		return policy.DialectZ3, nil
	}
	return 0, fmt.Errorf("smt: %q is neither cvc5 nor z3", name)
}

// Path is the solver program's path.
func (s *Solver) Path() string { return s.path }

// Dialect is which solver it is.
func (s *Solver) Dialect() policy.Dialect { return s.dialect }

// Start starts the solver. The process ends with Close or with ctx.
func (s *Solver) Start(ctx context.Context) (policy.SolverSession, error) {
	args := []string{"-in", "-smt2"}
	if s.dialect == policy.DialectCVC5 {
		args = []string{"--lang=smt2", "--incremental"}
	}
	cmd := exec.CommandContext(ctx, s.path, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("smt: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("smt: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("smt: starting %s: %w", s.path, err)
	}
	return &session{cmd: cmd, in: stdin, out: bufio.NewReader(stdout), stderr: &stderr, ctx: ctx}, nil
}

// session is one solver process.
type session struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *strings.Builder
	ctx    context.Context
	once   sync.Once
	err    error
}

// Do sends one command and reads its answer.
func (s *session) Do(cmd string) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	if _, err := io.WriteString(s.in, cmd+"\n"); err != nil {
		return "", s.fail(err)
	}
	got, err := readAnswer(s.out)
	if err != nil {
		return "", s.fail(err)
	}
	if strings.HasPrefix(got, "(error ") {
		return "", fmt.Errorf("smt: the solver refused %.120s: %s", cmd, got)
	}
	return got, nil
}

// DoAll sends the commands in one write and reads their answers.
func (s *session) DoAll(cmds []string) ([]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	if _, err := io.WriteString(s.in, strings.Join(cmds, "\n")+"\n"); err != nil {
		return nil, s.fail(err)
	}
	answers := make([]string, len(cmds))
	var refused error
	for i := range cmds {
		got, err := readAnswer(s.out)
		if err != nil {
			return nil, s.fail(err)
		}
		if strings.HasPrefix(got, "(error ") && refused == nil {
			refused = fmt.Errorf("smt: the solver refused %.120s: %s", cmds[i], got)
		}
		answers[i] = got
	}
	return answers, refused
}

// fail records why the session cannot go on: the context's end, if that is what
// stopped the process.
func (s *session) fail(err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		err = ctxErr
	} else if msg := strings.TrimSpace(s.stderr.String()); msg != "" {
		err = fmt.Errorf("%w: %s", err, msg)
	}
	s.err = fmt.Errorf("smt: %w", err)
	return s.err
}

// Close ends the process.
func (s *session) Close() error {
	s.once.Do(func() {
		s.in.Close()
		if s.cmd.Process != nil {
			s.cmd.Process.Kill()
		}
		s.cmd.Wait()
	})
	return nil
}

// maxAnswer bounds one answer: a model of a large policy is some kilobytes.
const maxAnswer = 16 << 20

// readAnswer reads one answer: a word on its line, or an s-expression, which may
// span lines, read to its closing parenthesis (strings and |symbols| may hold
// parentheses).
func readAnswer(r *bufio.Reader) (string, error) {
	var b strings.Builder
	depth := 0
	inStr, inSym, started := false, false, false
	for {
		c, err := r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		if b.Len() > maxAnswer {
			return "", fmt.Errorf("answer longer than %d bytes", maxAnswer)
		}
		if !started {
			if c == ' ' || c == '\n' || c == '\r' || c == '\t' {
				continue
			}
			started = true
		}
		b.WriteByte(c)
		switch {
		case inStr:
			if c == '"' {
				// A doubled quote is a quote within the string: peek.
				if next, err := r.Peek(1); err == nil && next[0] == '"' {
					r.ReadByte()
					b.WriteByte('"')
					continue
				}
				inStr = false
			}
		case inSym:
			inSym = c != '|'
		case c == '"':
			inStr = true
		case c == '|':
			inSym = true
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return b.String(), nil
			}
		case c == '\n' && depth == 0:
			return strings.TrimSpace(b.String()), nil
		}
	}
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w *strings.Builder
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if rest := l.n - l.w.Len(); rest > 0 {
		l.w.Write(p[:min(len(p), rest)])
	}
	return len(p), nil
}
