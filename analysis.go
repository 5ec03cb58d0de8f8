package intentd

import (
	"context"

	"github.com/intentd/intentd/policy"
)

// PolicyAnalyzer answers what a policy can and cannot do: whether anything passes it,
// which constraints never hold, always hold, are implied by others or never decide
// anything, each with an example (policy.Analyze). It runs an SMT solver, a program
// outside the service, so that a server without one simply has no analyzer.
type PolicyAnalyzer interface {
	// Analyze analyses a compiled policy. Errors: KindBusy (CodeAnalysisBusy) while
	// the analyses the server allows at once are running; KindUnprocessable
	// (CodePolicyUnanalysable) for a policy the analysis cannot express exactly
	// (policy.ErrUnsupported).
	Analyze(ctx context.Context, p *policy.Policy) (*policy.Analysis, error)
}

// The codes of the analysis of a policy.
const (
	// CodeAnalysisUnavailable: the server has no SMT solver to analyse with (503).
	CodeAnalysisUnavailable = "analysis_unavailable"
	// CodeAnalysisBusy: the analyses the server runs at once are running (503).
	CodeAnalysisBusy = "analysis_busy"
	// CodePolicyUnanalysable: the policy holds what the analysis cannot express
	// exactly, such as an evidence field of no fixed type (422).
	CodePolicyUnanalysable = "policy_unanalysable"
)
