// Package actors is the engine of one intentd node: it implements intentd.Engine with
// one actor per live intent, which owns its state machine and is the only writer of its
// snapshot, a proving limiter, an event bus and an expiry scheduler, over any
// intentd.Store. The domain (types, errors, the Engine and Store seams) is the root
// package's; this one is how a node runs it. docs/engine.md says what the engine
// promises (what a 200 is worth, the life of an intent, capacity, expiry, events) and the
// choices it makes where the specification is silent.
//
// The write path: every transition is written to the store before it is acknowledged.
// A new intent is one CreateIntent, a proposal one BeginProcessing, an outcome one Finish
// (snapshot, event and index changes in one batch). Actors stop after a while without a
// message and come back from their snapshot, so a million open intents are not a
// million live actors.
//
// Proofs: a decided proposal is handed to the Config's Prover; ReceiptProver signs a
// crypto.Receipt with the service's key. Engine.Proof returns the intentd.ProofBundle of
// a decided intent, or an error coded proof_not_ready while the intent is open or
// processing, or no_proof when none will come. Package proof checks a bundle offline.
//
// Configuration: DefaultConfig is the one place the engine's defaults are written; Open
// takes a Config as it is and refuses one it cannot run with.
package actors
