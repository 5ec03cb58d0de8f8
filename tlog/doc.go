// Package tlog is the transparency log of outcomes: an append-only RFC 6962 Merkle tree
// whose leaves are the outcome events, in event-id order, each bound with its receipt
// (intentd.LogEntry), served in the C2SP tlog-tiles layout with C2SP signed-note
// checkpoints.
//
// A receipt proves that the service said something about one intent; the log makes
// it hard to say something else to someone else, or to drop an outcome, unseen: every
// reader who compares checkpoints sees one history (docs/proofs.md).
//
// The tree is a function of the ordered event log. A Log follows the engine's event
// stream (intentd.Engine.Subscribe), so that it works on any store and every member of
// a cluster, following the same events, builds the same tree and signs the same
// checkpoints. What it has built it keeps in a Pebble database of its own, beside the
// store: the leaves, every node hash of the tree and an index from intent to leaf.
// Pruning the event stream for replay does not touch it; a log whose files are lost
// is rebuilt from the events while they are all retained, and refuses to start over
// from a pruned stream, which would make another tree.
package tlog
