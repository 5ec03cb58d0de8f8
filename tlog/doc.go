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
//
// The entries also go to the store (intentd.LogStore), a tlog-tiles entry bundle at a
// time, each interval, where pruning the event stream does not reach them. A log whose
// files are lost, or a new node's, builds its tree from the events while they are
// retained and from the store's entries where they are not; the hashes are made again
// from the entries. Every node writes its bundles and compares them with those already
// stored, so that two nodes that made different trees of one stream find it: the log
// stops with intentd.ErrLogFork, as it does when the tree it rebuilt has another root
// than a checkpoint it signed before. Without the entries in the store a log refuses to
// start over from a pruned stream, which would make another tree.
//
// With witnesses (Options.Witnesses, a C2SP tlog-policy), the log asks each to cosign its
// newest checkpoint (C2SP tlog-witness) at an interval and when a proof needs it, and
// serves the newest checkpoint whose cosignatures meet the policy's quorum: a reader who
// requires that quorum cannot be shown a history the witnesses did not see (witness.go).
package tlog
