// Package intentd is the domain of the intent orchestrator: the intent, its authorship,
// the proposal, the status and the event, in their wire form; the one error type, whose
// kind the HTTP layer maps to a status; and the two seams of the service, Engine (what
// the HTTP layer calls) and Store (what an engine persists through).
//
// It holds no implementation of either: actors is the engine of one node, persistence
// the store on Pebble. Packages that only speak the API (the Go client, intentctl, the
// proof checker) import this one and the leaves it names, policy and crypto, and link
// no actor system, store or metrics.
package intentd
