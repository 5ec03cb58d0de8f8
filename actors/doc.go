// Package actors is the core of intentd: the domain types, the Engine the HTTP layer
// calls, one actor per intent that owns its state machine, the proving limiter, the
// event bus and the expiry scheduler.
package actors
