// Package persistence is the durable store of intentd on Pebble: policies, intent
// snapshots, the event log and the expiry index. It stores the opaque records the core
// hands it and keeps the few invariants that must hold across them (an intent id is
// taken once; a policy named by a live intent is not deleted; event ids are gapless),
// and no Pebble type leaves the package.
package persistence
