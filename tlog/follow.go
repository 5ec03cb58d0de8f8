package tlog

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

// Source is what a log is built from: the event stream and the receipts of its
// outcomes. actors.Engine is one.
type Source interface {
	// Subscribe follows the events after from, as intentd.Engine.Subscribe.
	Subscribe(ctx context.Context, from uint64, f intentd.Filter) (intentd.Subscription, error)
	// Receipt returns the stored JSON of a decided intent's signed receipt, nil when
	// its outcome has none.
	Receipt(ctx context.Context, id string) (json.RawMessage, error)
}

// Run follows the engine's events into the log, and signs a checkpoint each interval
// while leaves come, until ctx ends; with Options.Store it also writes the entries to
// the store each interval, and takes from there the leaves whose events are no longer
// retained. It returns ErrGap when the events it needs are retained nowhere, and an
// error that is intentd.ErrLogFork when its tree differs from the one the store keeps or
// it signed before; then the log serves what it has and grows no more.
func (l *Log) Run(ctx context.Context, e Source) error {
	// A fork the writer finds ends Run with it as the cause.
	ctx, fork := context.WithCancelCause(ctx)
	defer fork(nil)
	// The signer and the writer stop with Run, so that Close never closes the database
	// under them.
	sctx, stop := context.WithCancel(ctx)
	var workers sync.WaitGroup
	workers.Add(1)
	go func() { defer workers.Done(); l.checkpoints(sctx) }()
	if l.store != nil {
		workers.Add(1)
		go func() { defer workers.Done(); l.shareLoop(sctx, fork) }()
	}
	if l.wit != nil {
		workers.Add(1)
		go func() { defer workers.Done(); l.wit.loop(sctx) }()
	}
	defer func() { stop(); workers.Wait() }()
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.follow(ctx, e)
		if errors.Is(err, errRestored) {
			continue // follow the events after the leaves the store gave
		}
		if cause := context.Cause(ctx); errors.Is(cause, intentd.ErrLogFork) {
			err = cause
		}
		if errors.Is(err, ErrGap) || errors.Is(err, intentd.ErrLogFork) {
			l.stopped.Store(true)
			what := "the transparency log stops: restore its folder from a copy, or from another node"
			if errors.Is(err, intentd.ErrLogFork) {
				what = "FORK: the transparency log stops: its tree is not the one it kept or signed before"
				fork(err) // nor does the writer write this tree to the store as it stops
			}
			l.log.Error(what, "err", err, "last_event", l.lastEvent, "leaves", l.Size())
			return err
		}
		if ctx.Err() != nil || l.stopped.Load() {
			return err
		}
		if !errors.Is(err, intentd.ErrSubscriberTooSlow) {
			l.log.Warn("the transparency log lost the event stream; following it again", "err", err)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
	}
	return nil
}

// follow appends the events after the log's last one until the subscription ends.
func (l *Log) follow(ctx context.Context, e Source) error {
	l.mu.Lock()
	from := l.lastEvent
	l.mu.Unlock()
	sub, err := e.Subscribe(ctx, from, intentd.Filter{Patient: true})
	if err != nil {
		return err
	}
	l.following.Store(true)
	defer func() {
		sub.Close()
		l.following.Store(false)
	}()
	if sub.Truncated() {
		n, err := l.restore(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			l.log.Info("the transparency log took leaves from the store, whose events are pruned", "leaves", n, "size", l.Size())
			return errRestored
		}
		return fmt.Errorf("%w (the log holds up to event %d)", ErrGap, from)
	}
	batch := make([]leaf, 0, TileWidth)
	for {
		batch = batch[:0]
		ev, err := sub.Next(ctx)
		for ; err == nil; ev, err = sub.Next(ctx) {
			lf, lerr := l.leafOf(ctx, e, ev)
			if lerr != nil {
				return lerr
			}
			batch = append(batch, lf)
			if !sub.Pending() || len(batch) == cap(batch) {
				break
			}
		}
		if aerr := l.append(batch); aerr != nil {
			return aerr
		}
		if err != nil {
			return err
		}
		// At most one batch each commitEvery: under load the events of that time
		// wait in the subscription and share one commit, which costs as much for one
		// leaf as for a hundred.
		select {
		case <-time.After(commitEvery):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// commitEvery spaces the log's writes; a leaf waits at most this long beyond its event.
const commitEvery = 10 * time.Millisecond

// leafOf makes the leaf of an event: its digest, and its receipt's, which the event
// carries when this node decided it and which is read from the source otherwise. A receipt that cannot be read now is asked for again, never left
// out: a leaf made without it would differ from the one every other node makes.
func (l *Log) leafOf(ctx context.Context, e Source, ev intentd.Event) (leaf, error) {
	sum := sha256.Sum256(ev.Data)
	lf := leaf{eventID: ev.ID, entry: intentd.LogEntry{EventID: ev.ID, Type: ev.Type, IntentID: ev.IntentID, EventDigest: crypto.EncodeBase58(sum[:])}}
	if ev.Type == intentd.StateExpired {
		return lf, nil
	}
	if digest, known := ev.Decided.Digest(); known {
		// Decided on this node, or carried by the store beside the event.
		lf.entry.ReceiptDigest = digest
		return lf, nil
	}
	for tries := 1; ; tries++ {
		var raw json.RawMessage
		var err error
		if ev.Decided != nil {
			raw = ev.Decided.Receipt // decided on this node: what it stored
		} else {
			raw, err = e.Receipt(ctx, ev.IntentID)
		}
		switch {
		case err == nil && len(raw) == 0:
			return lf, nil
		case err == nil:
			if lf.entry.ReceiptDigest, err = crypto.Digest(raw); err != nil {
				return leaf{}, fmt.Errorf("tlog: receipt of %s: %w", ev.IntentID, err)
			}
			return lf, nil
		case ctx.Err() != nil:
			return leaf{}, ctx.Err()
		}
		if tries%10 == 1 {
			l.log.Warn("the transparency log cannot read a receipt; it waits", "intent_id", ev.IntentID, "event_id", ev.ID, "err", err)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return leaf{}, ctx.Err()
		}
	}
}
