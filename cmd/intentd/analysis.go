package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/policy/smt"
)

// analyzer is the service's intentd.PolicyAnalyzer: the analysis on this solver, a
// few at a time, since each is a solver process busy for up to a second or so.
type analyzer struct {
	solver  *smt.Solver
	slots   chan struct{}
	timeout time.Duration
}

// newAnalyzer analyses with s, at most concurrent analyses at once, each question
// given timeout (policy.DefaultCheckTimeout when zero).
func newAnalyzer(s *smt.Solver, concurrent int, timeout time.Duration) *analyzer {
	return &analyzer{solver: s, slots: make(chan struct{}, max(concurrent, 1)), timeout: timeout}
}

// Analyze runs the analysis of p, or refuses at once when every slot is taken.
func (a *analyzer) Analyze(ctx context.Context, p *policy.Policy) (*policy.Analysis, error) {
	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	default:
		return nil, intentd.Errorf(intentd.KindBusy, intentd.CodeAnalysisBusy, "the server is analysing %d policies already: try again shortly", cap(a.slots))
	}
	res, err := policy.Analyze(ctx, p, a.solver, policy.AnalyzeOptions{CheckTimeout: a.timeout})
	if errors.Is(err, policy.ErrUnsupported) {
		return nil, intentd.Errorf(intentd.KindUnprocessable, intentd.CodePolicyUnanalysable, "%v", err)
	}
	return res, err
}

// maxAnalyses is how many policy analyses a server runs at once: each is a solver
// process using a core for up to a second or so.
const maxAnalyses = 2

// analyzer is the policy analyzer on the solver named (see --smt-solver), or nil.
// No solver is no error: the service runs without the analysis, and says so once.
func (m *Main) analyzer(name string) intentd.PolicyAnalyzer {
	if name == "none" {
		return nil
	}
	s, err := smt.Find(name)
	if err != nil {
		level := slog.LevelInfo
		if name != "" {
			level = slog.LevelWarn
		}
		m.logger.Log(context.Background(), level, "policy analysis off: POST /policy-analysis answers 503", "err", err)
		return nil
	}
	m.logger.Info("policy analysis on", "solver", s.Path())
	return newAnalyzer(s, maxAnalyses, 0)
}
