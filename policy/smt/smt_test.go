package smt

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/policy"
)

// TestReadAnswer reads answers as the solvers write them, one after another.
func TestReadAnswer(t *testing.T) {
	in := "success\nsat\n((x 4)\n (s \"a)\"\"(\"))\n(\nk2\nk0\n)\n(error \"line 1: \"\"x\"\"\")\n|a)b|\n"
	r := bufio.NewReader(strings.NewReader(in))
	want := []string{"success", "sat", "((x 4)\n (s \"a)\"\"(\"))", "(\nk2\nk0\n)", `(error "line 1: ""x""")`, "|a)b|"}
	for _, w := range want {
		got, err := readAnswer(r)
		if err != nil || got != w {
			t.Fatalf("got %q, %v; want %q", got, err, w)
		}
	}
	if _, err := readAnswer(r); err == nil {
		t.Fatal("read past the end")
	}
}

// FuzzReadAnswer: whatever a solver writes is read as answers or refused, never a
// panic or a read that does not end.
func FuzzReadAnswer(f *testing.F) {
	f.Add("success\n((x \"a\"\"\"))\n")
	f.Add("(((\n")
	f.Add("\"unterminated")
	f.Fuzz(func(t *testing.T, s string) {
		r := bufio.NewReader(strings.NewReader(s))
		for range len(s) + 1 {
			if _, err := readAnswer(r); err != nil {
				return
			}
		}
	})
}

// TestSession talks to each installed solver: answers in turn, a refused command as
// an error, and a session that ends with its context.
func TestSession(t *testing.T) {
	for _, name := range []string{"cvc5", "z3"} {
		t.Run(name, func(t *testing.T) {
			s, err := Find(name)
			if err != nil {
				t.Skipf("%v (apt-get install %s)", err, name)
			}
			ctx, cancel := context.WithCancel(context.Background())
			sess, err := s.Start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			for _, c := range []struct{ cmd, want string }{
				{"(declare-const x Int)", "success"},
				{"(assert (> x 41))", "success"},
				{"(assert (< x 43))", "success"},
				{"(check-sat)", "sat"},
				{"(get-value (x))", "((x 42))"},
			} {
				got, err := sess.Do(c.cmd)
				if err != nil || got != c.want {
					t.Fatalf("%s: got %q, %v; want %q", c.cmd, got, err, c.want)
				}
			}
			got, err := sess.DoAll([]string{"(push 1)", "(assert (> x 42))", "(check-sat)", "(pop 1)", "(check-sat)"})
			if err != nil || strings.Join(got, " ") != "success success unsat success sat" {
				t.Fatalf("DoAll: got %q, %v", got, err)
			}
			// cvc5 ends after a command it refuses, z3 goes on: either way the
			// refusal is the answer, and the session is not used again after it.
			other, err := s.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if _, err := other.DoAll([]string{"(declare-const y Int)", "(assert (= y \"a\"))"}); err == nil || !strings.Contains(err.Error(), "refused (assert (= y") {
				t.Fatalf("DoAll with a refused command: got %v, want the refusal", err)
			}
			if _, err := sess.Do("(assert (= x \"a\"))"); err == nil || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("got %v, want the solver's refusal", err)
			}
			cancel()
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err := sess.Do("(check-sat)")
				if errors.Is(err, context.Canceled) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("got %v after the context ended, want context.Canceled", err)
				}
			}
			if s.Dialect() != map[string]policy.Dialect{"cvc5": policy.DialectCVC5, "z3": policy.DialectZ3}[name] {
				t.Fatalf("dialect %v", s.Dialect())
			}
		})
	}
}

// TestFind: a program that is neither solver is refused by name.
func TestFind(t *testing.T) {
	if _, err := Find("/bin/sh"); err == nil || !strings.Contains(err.Error(), "neither cvc5 nor z3") {
		t.Fatalf("got %v", err)
	}
	if _, err := Find("cvc5-not-installed"); err == nil {
		t.Fatal("found a program that is not there")
	}
}

// TestSessionsReuse: a session that ended well leaves its process to the next, its
// scopes dropped (one left open by the session too): nothing of the first session is
// seen by the second. One that a command was refused
// in, or whose context ended, does not.
func TestSessionsReuse(t *testing.T) {
	for _, name := range []string{"cvc5", "z3"} {
		t.Run(name, func(t *testing.T) {
			s, err := Find(name)
			if err != nil {
				t.Skipf("%v (apt-get install %s)", err, name)
			}
			begin := func() *session {
				sess, err := s.Start(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				for _, cmd := range []string{"(push 1)", "(declare-const x Int)"} {
					if got, err := sess.Do(cmd); err != nil || got != "success" {
						t.Fatalf("%s: %q, %v (a declaration of the last session seen?)", cmd, got, err)
					}
				}
				return sess.(*session)
			}
			first := begin()
			first.Close()
			second := begin()
			if second.p != first.p {
				t.Fatal("the second session started a process of its own")
			}
			second.Do("(assert (= x \"a\"))")
			second.Close()
			third := begin()
			if third.p == first.p {
				t.Fatal("a process a command was refused in was kept")
			}
			third.Close()
		})
	}
}
