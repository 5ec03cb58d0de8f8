// Package policy is the policy language: it compiles constraint source to versioned,
// deterministic bytecode whose SHA-256 is the policy's identity, loads that bytecode
// back, prints the canonical text, checks an intent's attributes against the declared
// parameters, and evaluates the constraints against extracted evidence.
//
// The package is a leaf: it imports nothing else of the project, so that anyone holding
// a policy's bytecode, an intent's attributes and the evidence can re-run a decision.
//
// One stage per file, as a small compiler reads:
//
//	token.go     tokens, operators, precedence, built-in functions
//	lexer.go     source to tokens (JSON string escapes, positions in characters)
//	parser.go    tokens to the syntax tree (ast.go), recovering to report several errors
//	checker.go   references to slots, types, limits; evidence types inferred for the
//	             older dialect, which has no evidence block
//	compiler.go  the tree to bytecode (docs/bytecode.md)
//	bytecode.go  bytecode back to instructions and to the tree, for Decode
//	vm.go        the stack machine that decides each constraint
//	explain.go   the reason of a failure, from the tree, with the machine's operations
//	printer.go   the canonical text
//	residual.go  the constraints partially evaluated on an intent's parameters, with
//	             the machine's operations; requirements.go puts them together with
//	             their reasons, schema.go writes the evidence's JSON Schema
//	value.go     attribute values and their wire form; evidence.go, evidence values
//
// The syntax tree holds only the canonical form, and Decode accepts only bytecode
// that the compiler would write for the tree it encodes, so a policy has one
// bytecode, one id and one printed form, whichever way it was written or loaded.
//
// Evaluation keeps the passing path cheap: values live in a pooled frame, the machine
// answers only "holds", "fails" or "cannot decide", and the words of a reason are
// found afterwards, for the constraints that did not hold.
package policy
