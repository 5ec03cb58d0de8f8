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
	mu      sync.Mutex
	idle    []*proc
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

// maxIdle is how many solver processes a Solver keeps for the next sessions: starting
// one costs 20 ms (cvc5) to 60 ms (z3), more than a small policy's questions.
const maxIdle = 2

// Start begins a session on a solver process kept from an earlier session, reset, or
// on a new one. The session ends with Close, or with ctx, which stops its process.
func (s *Solver) Start(ctx context.Context) (policy.SolverSession, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("smt: %w", err)
	}
	p := s.takeIdle()
	if p == nil {
		var err error
		if p, err = s.start(); err != nil {
			return nil, err
		}
	}
	// A session is a scope of its own, which Close drops with all it declared and
	// asserted, so that the process can serve the next one.
	if got, err := p.do("(push 1)"); err != nil || got != "success" {
		p.kill()
		return nil, fmt.Errorf("smt: %s answered %q, %v to (push 1)", s.path, got, err)
	}
	return s.session(ctx, p), nil
}

// setup is what every process is told once: one answer a command, models, unsat
// cores, the logic. Options must come before the logic, and cannot change after it.
func (s *Solver) setup() []string {
	cmds := []string{"(set-option :print-success true)", "(set-option :produce-models true)", "(set-option :produce-unsat-cores true)"}
	if s.dialect == policy.DialectCVC5 {
		cmds = append(cmds, "(set-option :incremental true)", "(set-option :strings-exp true)")
	}
	return append(cmds, "(set-logic ALL)")
}

func (s *Solver) takeIdle() *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.idle) == 0 {
		return nil
	}
	p := s.idle[len(s.idle)-1]
	s.idle = s.idle[:len(s.idle)-1]
	return p
}

// putIdle keeps p for a later session, or stops it when enough are kept.
func (s *Solver) putIdle(p *proc) {
	s.mu.Lock()
	if len(s.idle) < maxIdle {
		s.idle = append(s.idle, p)
		p = nil
	}
	s.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

func (s *Solver) session(ctx context.Context, p *proc) *session {
	sess := &session{s: s, p: p, ctx: ctx}
	sess.stop = context.AfterFunc(ctx, p.kill)
	return sess
}

// start starts a solver process.
func (s *Solver) start() (*proc, error) {
	args := []string{"-in", "-smt2"}
	if s.dialect == policy.DialectCVC5 {
		args = []string{"--lang=smt2", "--incremental"}
	}
	cmd := exec.Command(s.path, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("smt: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("smt: %w", err)
	}
	p := &proc{cmd: cmd, in: stdin, out: bufio.NewReader(stdout), stderr: &limitedWriter{n: 4096}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("smt: starting %s: %w", s.path, err)
	}
	for _, c := range s.setup() {
		if got, err := p.do(c); err != nil || got != "success" {
			p.kill()
			if msg := strings.TrimSpace(p.stderr.String()); msg != "" && err != nil {
				err = fmt.Errorf("%w: %s", err, msg)
			}
			return nil, fmt.Errorf("smt: %s answered %q, %v to %s", s.path, got, err, c)
		}
	}
	return p, nil
}

// proc is one solver process.
type proc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *limitedWriter
	once   sync.Once
}

// do writes one command and reads its answer.
func (p *proc) do(cmd string) (string, error) {
	if _, err := io.WriteString(p.in, cmd+"\n"); err != nil {
		return "", err
	}
	return readAnswer(p.out)
}

// kill stops the process and waits for it.
func (p *proc) kill() {
	p.once.Do(func() {
		p.in.Close()
		if p.cmd.Process != nil {
			p.cmd.Process.Kill()
		}
		p.cmd.Wait()
	})
}

// session is one session on a solver process.
type session struct {
	s    *Solver
	p    *proc
	ctx  context.Context
	stop func() bool // stops the watch of ctx; false once ctx has stopped the process
	err  error
	// refused: the solver refused a command, after which cvc5 ends and z3 is in a
	// state no later session should inherit.
	refused bool
	closed  bool
	// depth is how many scopes the session pushed and has not popped: Close pops them
	// with its own.
	depth int
}

// count follows the scopes a command opens or closes.
func (s *session) count(cmd string) {
	switch {
	case strings.HasPrefix(cmd, "(push 1)"):
		s.depth++
	case strings.HasPrefix(cmd, "(pop 1)"):
		s.depth--
	}
}

// Do sends one command and reads its answer.
func (s *session) Do(cmd string) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	s.count(cmd)
	got, err := s.p.do(cmd)
	if err != nil {
		return "", s.fail(err)
	}
	if strings.HasPrefix(got, "(error ") {
		s.refused = true
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
	for _, c := range cmds {
		s.count(c)
	}
	if _, err := io.WriteString(s.p.in, strings.Join(cmds, "\n")+"\n"); err != nil {
		return nil, s.fail(err)
	}
	answers := make([]string, len(cmds))
	var refused error
	for i := range cmds {
		got, err := readAnswer(s.p.out)
		if err != nil {
			return nil, s.fail(err)
		}
		if strings.HasPrefix(got, "(error ") && refused == nil {
			s.refused = true
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
	} else if msg := strings.TrimSpace(s.p.stderr.String()); msg != "" {
		err = fmt.Errorf("%w: %s", err, msg)
	}
	s.err = fmt.Errorf("smt: %w", err)
	return s.err
}

// Close ends the session: its process is kept for a later session when the session
// ended well, and stopped otherwise.
func (s *session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.stop() && s.err == nil && !s.refused && s.depth >= 0 {
		if got, err := s.p.do(fmt.Sprintf("(pop %d)", s.depth+1)); err == nil && got == "success" {
			s.s.putIdle(s.p)
			return nil
		}
	}
	s.p.kill()
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

// limitedWriter keeps the first n bytes written to it. The process's output is
// copied into it on a goroutine of its own while a session may read it.
type limitedWriter struct {
	mu sync.Mutex
	b  strings.Builder
	n  int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rest := l.n - l.b.Len(); rest > 0 {
		l.b.Write(p[:min(len(p), rest)])
	}
	return len(p), nil
}

func (l *limitedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
