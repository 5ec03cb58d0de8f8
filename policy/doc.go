// Package policy is the policy language: it compiles constraint source to versioned,
// deterministic bytecode whose SHA-256 is the policy's identity, loads that bytecode
// back, prints the canonical text, checks an intent's attributes against the declared
// parameters, and evaluates the constraints against extracted evidence.
//
// The package is a leaf: it imports nothing else of the project, so that anyone holding
// a policy's bytecode, an intent's attributes and the evidence can re-run a decision.
package policy
