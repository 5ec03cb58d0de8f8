package tlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/intentd/intentd"
)

// errRestored ends a subscription that found its first events pruned, after the log
// took the leaves of those events from the store: the log follows again from its new
// last event.
var errRestored = errors.New("tlog: leaves restored from the store")

// restore appends the leaves the store keeps beyond the log's own, a bundle at a time,
// and returns how many. The entries the log holds of a bundle must begin the stored
// one; the stored entries must be in the log's own form, of events after its last.
func (l *Log) restore(ctx context.Context) (int, error) {
	if l.store == nil {
		return 0, nil
	}
	added := 0
	for {
		size := l.Size()
		b := size / TileWidth
		raw, err := l.store.LogBundle(ctx, b)
		if errors.Is(err, intentd.ErrNotFound) {
			return added, nil
		}
		if err != nil {
			return added, fmt.Errorf("tlog: read entry bundle %d from the store: %w", b, err)
		}
		entries, err := ParseBundle(raw)
		if err != nil {
			return added, fmt.Errorf("tlog: entry bundle %d in the store: %w", b, err)
		}
		have := int(size - b*TileWidth)
		if have > 0 {
			mine, err := l.Entries(b, have)
			if err != nil {
				return added, err
			}
			// The store may hold fewer of them than the log (its writer lags): only
			// what both hold is compared.
			if !bytes.HasPrefix(raw, mine) && !bytes.HasPrefix(mine, raw) {
				return added, fmt.Errorf("%w: entry bundle %d and the log's %d entries of it differ", intentd.ErrLogFork, b, have)
			}
		}
		if len(entries) <= have {
			return added, nil
		}
		l.mu.Lock()
		last := l.lastEvent
		l.mu.Unlock()
		leaves := make([]leaf, 0, len(entries)-have)
		for i, data := range entries[have:] {
			e, err := intentd.ParseLogEntry(data)
			if err != nil {
				return added, fmt.Errorf("tlog: entry %d in the store: %w", size+uint64(i), err)
			}
			if e.EventID <= last {
				return added, fmt.Errorf("tlog: entry %d in the store is of event %d, not after event %d", size+uint64(i), e.EventID, last)
			}
			last = e.EventID
			leaves = append(leaves, leaf{eventID: e.EventID, entry: e})
		}
		if err := l.append(leaves); err != nil {
			return added, err
		}
		added += len(leaves)
		if len(entries) < TileWidth {
			return added, nil
		}
	}
}

// shareLoop writes the log's entries to the store each interval, and once more when
// ctx ends, so that a node stopped in order leaves the store every leaf it made; a fork
// it finds ends Run.
func (l *Log) shareLoop(ctx context.Context, fork context.CancelCauseFunc) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	failing := false
	for ctx.Err() == nil {
		err := l.share(ctx)
		switch {
		case errors.Is(err, intentd.ErrLogFork):
			fork(err)
			return
		case err == nil:
			failing = false
		case ctx.Err() == nil && !failing:
			// Said once, until a write succeeds: the store is tried each interval.
			l.log.Warn("the transparency log cannot write its entries to the store; it tries again", "err", err)
			failing = true
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	if errors.Is(context.Cause(ctx), intentd.ErrLogFork) {
		return
	}
	last, cancel := context.WithTimeout(context.WithoutCancel(ctx), lastShare)
	defer cancel()
	if err := l.share(last); err != nil {
		l.log.Warn("the transparency log could not write its last entries to the store; its next start writes them", "err", err)
	}
}

// lastShare bounds the write of the last entries when the log stops.
const lastShare = 2 * time.Second

// share writes the bundles of the leaves the store does not hold yet: each full one
// once, and the last, partial one as it grows. Its first pass after a start writes or
// compares every bundle, so that a node checks the whole of its tree against the one
// the store keeps.
func (l *Log) share(ctx context.Context) error {
	size := l.Size()
	for l.shared < size {
		b := l.shared / TileWidth
		width := min(TileWidth, size-b*TileWidth)
		bundle, err := l.Entries(b, int(width))
		if err != nil {
			return err
		}
		if err := l.store.PutLogBundle(ctx, b, bundle); err != nil {
			return fmt.Errorf("tlog: write entry bundle %d: %w", b, err)
		}
		l.shared = b*TileWidth + width
	}
	return nil
}
