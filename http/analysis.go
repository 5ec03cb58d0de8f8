package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/policy"
)

// analysisResponse is the answer of POST /policy-analysis: the policy's id and name,
// which storing it would give, and the analysis (docs/api.md).
type analysisResponse struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	*policy.Analysis
}

// handlePostPolicyAnalysis compiles a policy source (text/plain), stores nothing, and
// answers its analysis: whether anything passes it and what each constraint can do.
func (s *Server) handlePostPolicyAnalysis(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	body, err := s.readPolicySource(w, r)
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	p, err := policy.Compile(string(body))
	if err != nil {
		Error(w, r, s.log, &intentd.Error{Kind: intentd.KindInvalid, Code: intentd.CodePolicyInvalid, Message: err.Error()})
		return
	}
	if s.opts.Analyzer == nil {
		Error(w, r, s.log, intentd.Errorf(intentd.KindBusy, intentd.CodeAnalysisUnavailable,
			"this server analyses no policies: it has no SMT solver (its operator installs cvc5 or z3; intentctl policy check analyses here)"))
		return
	}
	a, err := s.opts.Analyzer.Analyze(r.Context(), p)
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, analysisResponse{ID: p.ID(), Name: p.Name(), Analysis: a})
}
