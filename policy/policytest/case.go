// Package policytest runs test cases against a compiled policy and measures which of
// its constraints the cases saw hold and saw fail. A policy is a small program that
// decides purchases; its author checks it before it decides anything, with cases of
// attrs and evidence whose outcome they know, as `intentctl policy test` does.
//
// The cases come from JSON files (Decode reads them strictly: docs/cli.md, "policy
// test", describes the format), and each is evaluated as the engine evaluates a
// proposal: the intent's attrs checked against the policy's parameters, then every
// constraint run on the attrs, the evidence and the decision's context.
package policytest

import (
	"time"

	"github.com/intentd/intentd/policy"
)

// The outcomes a case expects.
const (
	Success = "success"
	Failure = "failure"
)

// The failure kinds a case may expect of a failure: those an evaluation gives, as the
// engine classifies its failures (docs/engine.md, "Failure kinds").
const (
	KindConstraints = "constraints"
	KindEvidence    = "evidence"
)

// Case is one test of a policy: an intent's attrs, the evidence of a solution, the
// decision's context, and the outcome expected of them.
type Case struct {
	// Name names the case in reports; it is unique within its file.
	Name string
	// Attrs are the intent's attrs; nil when the intent carries none.
	Attrs policy.Attrs
	// Evidence is what an extractor returned, a flat object decoded as the engine
	// decodes it (numbers as json.Number).
	Evidence map[string]any
	// Context is the mandate's totals before the purchase and the decision's time,
	// for a policy that reads mandate.*, purchase.amount or decision.time; a zero
	// Context is a mandate's first purchase, decided at no time.
	Context policy.Context
	// Expect is Success or Failure.
	Expect string
	// Failing are the indexes of the constraints expected to fail, sorted; empty when
	// Expect is Success.
	Failing []int
	// FailureKind is the kind of failure expected (KindConstraints or KindEvidence),
	// or "" when the case does not check it.
	FailureKind string
}

// decisionTime is the form of decision.time in a test file.
const decisionTime = time.RFC3339
