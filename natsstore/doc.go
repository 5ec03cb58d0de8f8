// Package natsstore is the durable store of intentd on NATS JetStream, so that intents
// outlive a machine and several nodes can share them. It keeps the promises of
// intentd.Store that the Pebble store keeps, and no NATS type leaves the package.
//
// # Layout
//
// One stream, named for the prefix (INTENTD), holds everything under <prefix>.>:
//
//	<prefix>.intent.<id>    an intent's snapshot, the last one only (each write is a rollup),
//	                        with its phase, policy and deadline in headers
//	<prefix>.ref.<id>       the policy an intent named, written with its creation
//	<prefix>.policy.<id>    a policy's bytecode and source, or a tombstone
//	<prefix>.bytecode.<id>  a policy's bytecode, kept after a delete for proofs
//	<prefix>.event          the event log: one message per outcome
//	<prefix>.meta.floor     the lowest event id not pruned
//
// One stream rather than a stream and KV buckets, because JetStream's atomic batches and
// its expected-sequence checks work within one stream: an intent's creation (snapshot
// and policy reference, checked against the policy's subject) and its terminal write
// (snapshot and event) are each one atomic batch, which several streams could not give.
//
// Every write names the sequence of the record it replaces (Nats-Expected-Last-Subject-
// Sequence): a create expects none, so of racing creates of one id, on any node, one
// wins and the others get intentd.ErrExists; a stale writer of an intent is refused.
//
// An event's id is its stream sequence. Ids increase in the one order every node reads,
// but skip the sequences of the other records: a reader resumes after any id, assigned
// or not, and gets the next event.
//
// The expiry index, the processing set and the policies' states are in memory, built at
// Open from the last record of each subject (an ordered consumer of headers only) and
// kept by following the stream, so that another node's writes reach them too. A read of
// them costs no round trip; a scan is a pass over the open intents.
//
// # Durability
//
// A write returns once JetStream acknowledges it: on R3 once a quorum of replicas has
// it. On one server it is on disk only if the server syncs every write (sync_interval:
// always); Embed sets it, a server run elsewhere must be configured so.
package natsstore
