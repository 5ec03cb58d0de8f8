package main

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/policy/smt"
)

// TestPolicyAnalysisRoute analyses policies through the real server: the demo policy,
// one that nothing passes, one the analysis cannot express, one that does not compile,
// and a server without a solver.
func TestPolicyAnalysisRoute(t *testing.T) {
	if _, err := smt.Find(""); err != nil {
		t.Skipf("%v (apt-get install cvc5)", err)
	}
	s := startServer(t, nil)
	src, err := os.ReadFile("../../examples/tshirt.policy")
	if err != nil {
		t.Fatal(err)
	}
	r := s.do("POST", "/policy-analysis", "text/plain", src)
	if r.status != http.StatusOK {
		t.Fatalf("analysis of the t-shirt policy: %s", r)
	}
	var a struct {
		ID string `json:"id"`
		policy.Analysis
	}
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compile(string(src))
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != p.ID() || a.PolicyID != p.ID() || !a.Satisfiable || len(a.Findings) != 0 || len(a.Unknown) != 0 {
		t.Fatalf("got %s, want the t-shirt policy satisfiable with no findings", r.body)
	}
	if ok, failed, err := a.Witness.Run(p); err != nil || !ok || len(failed) > 0 {
		t.Fatalf("the witness %s fails %v (%v)", r.body, failed, err)
	}

	r = s.do("POST", "/policy-analysis", "text/plain", []byte("name never\nevidence { p: int }\nrequires {\n  100 <= evidence.p <= 50;\n}\n"))
	if r.status != http.StatusOK {
		t.Fatalf("%s", r)
	}
	var never policy.Analysis
	json.Unmarshal(r.body, &never)
	if never.Satisfiable || len(never.Findings) != 1 || never.Findings[0].Kind != policy.FindingNever {
		t.Fatalf("got %s, want one never finding", r.body)
	}

	for _, tt := range []struct {
		name, src string
		status    int
		code      string
	}{
		{"no fixed type", "name any\nrequires { evidence.a == evidence.b; }", 422, "policy_unanalysable"},
		{"does not compile", "name broken\nrequires { evidence.a == ; }", 400, "policy_invalid"},
	} {
		r := s.do("POST", "/policy-analysis", "text/plain", []byte(tt.src))
		if code, _ := r.errorBody(t); r.status != tt.status || code != tt.code {
			t.Fatalf("%s: got %s, want %d %s", tt.name, r, tt.status, tt.code)
		}
	}

	off := startServer(t, []string{"--smt-solver", "none"})
	r = off.do("POST", "/policy-analysis", "text/plain", src)
	if code, _ := r.errorBody(t); r.status != http.StatusServiceUnavailable || code != "analysis_unavailable" {
		t.Fatalf("without a solver: got %s, want 503 analysis_unavailable", r)
	}
}

// TestAnalyzerBusy: past its slots, the analyzer refuses at once with 503
// analysis_busy rather than queue solver processes.
func TestAnalyzerBusy(t *testing.T) {
	s, err := smt.Find("")
	if err != nil {
		t.Skipf("%v (apt-get install cvc5)", err)
	}
	a := newAnalyzer(s, 1, 0)
	a.slots <- struct{}{}
	p, _ := policy.Compile("name a\nevidence { p: int }\nrequires { evidence.p > 1; }")
	_, err = a.Analyze(t.Context(), p)
	if intentd.ErrorKind(err) != intentd.KindBusy || intentd.ErrorCode(err) != intentd.CodeAnalysisBusy {
		t.Fatalf("got %v, want busy", err)
	}
	<-a.slots
	if res, err := a.Analyze(t.Context(), p); err != nil || !res.Satisfiable {
		t.Fatalf("got %+v, %v", res, err)
	}
}
