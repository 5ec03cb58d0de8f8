package intentd

import "context"

// LogStore is the capability of a Store that keeps the transparency log's entries beside
// the events, where every node of a cluster reads them (docs/proofs.md, "Where it is
// kept"). A node builds its tree from the events while they are retained; the entries
// kept here are what it rebuilds from once they are not, so that the log outlives the
// event stream's retention and a new node serves the same tree as the others.
//
// The unit is the tlog-tiles entry bundle: the entries of leaves 256·index to
// 256·index+255, each after its length as a big-endian uint16. A bundle grows until it
// is full and then never changes; the store keeps the longest one written. Both stores
// of this module implement it.
type LogStore interface {
	// PutLogBundle stores bundle as entry bundle index, unless the stored one already
	// begins with it. The stored bundle and the new one must agree byte for byte on
	// what both hold: when neither begins with the other, nothing is written and the
	// error is ErrLogFork. Writers may race, on one node or several; of a longer and a
	// shorter agreeing bundle the longer stays.
	PutLogBundle(ctx context.Context, index uint64, bundle []byte) error
	// LogBundle returns the stored entry bundle index, or ErrNotFound.
	LogBundle(ctx context.Context, index uint64) ([]byte, error)
}

// ErrLogFork is the error of a log whose entries disagree with the ones already kept in
// the store: two nodes made different leaves of the same events, or the store was
// written by another log. Either way one of the trees is another history, and the node
// that finds it says so and appends no more (docs/proofs.md).
var ErrLogFork = &Error{Kind: KindConflict, Code: CodeLogFork,
	Message: "the transparency log's entries differ from those the store keeps"}

// LogReader reads the transparency log of outcomes as the service serves it: under
// /log/ in the C2SP tlog-tiles layout, and as the inclusion a proof bundle carries. A
// node that keeps the log reads its own (tlog.Log.Reader); a member of a cluster that
// keeps none reads, over the members' port, the log of a member that keeps one
// (actors.Engine.ClusterLog): every member that keeps it holds the same tree, byte
// for byte, so any one of them answers for the cluster.
type LogReader interface {
	// Checkpoint returns the newest checkpoint the log serves.
	Checkpoint(ctx context.Context) ([]byte, error)
	// Tile returns a tile of hashes; KindNotFound while the log lacks it.
	Tile(ctx context.Context, level, index uint64, width int) ([]byte, error)
	// Entries returns an entry bundle; KindNotFound while the log lacks it.
	Entries(ctx context.Context, index uint64, width int) ([]byte, error)
	// Inclusion returns the inclusion of an intent's outcome, nil while it is not in
	// the log, and, when the log has witnesses, whether its checkpoint meets their
	// quorum.
	Inclusion(ctx context.Context, intentID string) (*LogInclusion, *LogWitnessing, error)
}
