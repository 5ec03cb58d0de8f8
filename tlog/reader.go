package tlog

import (
	"context"

	"github.com/intentd/intentd"
)

// Reader is the log as intentd.LogReader reads it: what GET /log/ and the proof bundles
// serve from a node that keeps the log, and what such a member serves to the members of
// its cluster that keep none.
func (l *Log) Reader() intentd.LogReader { return reader{l} }

// reader reads a log held here, where a read waits on nothing but the log's own Pebble
// (and, for an inclusion, on the witnesses as InclusionWitnessed says).
type reader struct{ l *Log }

// Checkpoint is the checkpoint the log serves; reading it cannot fail.
func (r reader) Checkpoint(context.Context) ([]byte, error) { return r.l.Checkpoint(), nil }

// Tile is Log.Tile.
func (r reader) Tile(_ context.Context, level, index uint64, width int) ([]byte, error) {
	return r.l.Tile(level, index, width)
}

// Entries is Log.Entries.
func (r reader) Entries(_ context.Context, index uint64, width int) ([]byte, error) {
	return r.l.Entries(index, width)
}

// Inclusion is Log.InclusionWitnessed.
func (r reader) Inclusion(ctx context.Context, intentID string) (*intentd.LogInclusion, *intentd.LogWitnessing, error) {
	return r.l.InclusionWitnessed(ctx, intentID)
}
