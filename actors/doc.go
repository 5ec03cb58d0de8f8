// Package actors is the core of intentd: the domain types, the Engine the HTTP layer
// calls, one actor per intent that owns its state machine, the proving limiter, the
// event bus and the expiry scheduler. docs/engine.md says what the engine promises (what
// a 200 is worth, the life of an intent, capacity, expiry, events) and the choices it
// makes where the specification is silent.
//
// Proofs: a decided proposal is handed to the Config's Prover; ReceiptProver signs a
// crypto.Receipt with the service's key. Engine.Proof returns the ProofBundle of a
// decided intent (the signed receipt with the authored intent, proposal, evidence and
// policy bytecode it binds), or an error coded proof_not_ready while the intent is open
// or processing, or no_proof when none will come. VerifyProof checks a bundle offline
// against a trusted key, re-running the policy on the evidence, and names the check that
// failed in a *VerifyError; docs/proofs.md lists the checks.
package actors
