package actors

import (
	"sync"
	"time"

	"github.com/intentd/intentd"
)

// expiryBatch is how many due intents one read of the expiry index brings.
const expiryBatch = 1000

// expiryWorkers expire due intents side by side, so that their terminal writes share
// fsyncs in the store's committer.
const expiryWorkers = 32

// expiryLoop wakes the intents whose deadline has passed; each expires itself. The
// store's expiry index is the truth, so expiry survives passivation and restarts: the
// first sweep, at start-up, expires what fell due while the service was down.
func (e *Engine) expiryLoop() {
	first := true
	for {
		scanner := e.expiryScanner()
		if scanner {
			e.expireDue()
		}
		if first {
			close(e.ready)
			first = false
		}
		wait := e.cfg.ExpiryInterval
		// Only the member that scans asks for the next deadline: a store that leaves
		// the index to that member would load it to answer (intentd.IndexKeeper).
		if scanner {
			if next, ok, err := e.store.NextExpiry(e.ctx); err == nil && ok {
				wait = min(wait, max(next.Sub(e.cfg.Now()), time.Millisecond))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-e.ctx.Done():
			t.Stop()
			return
		case <-e.expiryWake:
			t.Stop()
		case <-t.C:
		}
	}
}

// scheduleExpiry makes the expiry loop look again when a new deadline falls before its
// next regular look.
func (e *Engine) scheduleExpiry(at time.Time) {
	if at.Sub(e.cfg.Now()) >= e.cfg.ExpiryInterval {
		return
	}
	select {
	case e.expiryWake <- struct{}{}:
	default:
	}
}

func (e *Engine) expireDue() {
	seen := make(map[string]bool)
	for !e.closed() {
		ids, err := e.store.DueExpiries(e.ctx, e.cfg.Now(), expiryBatch)
		if err != nil {
			e.log.Error("read expiry index", "err", err)
			return
		}
		var todo []string
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				todo = append(todo, id)
			}
		}
		if len(todo) == 0 {
			return // nothing due, or only entries this sweep already handled
		}
		e.sendAll(todo, expire{}, "expire intent")
		if len(ids) < expiryBatch {
			return
		}
	}
}

// sendAll sends msg to the actors of ids side by side, and logs the internal errors.
func (e *Engine) sendAll(ids []string, msg any, what string) {
	ch := make(chan string)
	var wg sync.WaitGroup
	for range min(expiryWorkers, len(ids)) {
		wg.Go(func() {
			for id := range ch {
				if _, err := e.registry.call(e.ctx, id, msg); err != nil && intentd.ErrorKind(err) == intentd.KindInternal {
					e.log.Error(what, "intent_id", id, "err", err)
				}
			}
		})
	}
	for _, id := range ids {
		ch <- id
	}
	close(ch)
	wg.Wait()
}

// retentionInterval is how often old events are pruned.
const retentionInterval = time.Minute

func (e *Engine) retentionLoop() {
	t := time.NewTicker(retentionInterval)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
		}
		e.pruneEvents()
	}
}

func (e *Engine) pruneEvents() {
	n, err := e.store.PruneEvents(e.ctx, e.cfg.EventRetention, e.cfg.Now().Add(-e.cfg.EventRetentionAge))
	if err != nil {
		e.log.Error("prune events", "err", err, "count", n)
	} else if n > 0 {
		e.log.Info("pruned events", "count", n)
	}
}
