package actors

import (
	"context"
	"errors"
	"time"

	"github.com/intentd/intentd"
)

// markScan is the width of an id range read whole rather than halved again: one read
// of a few dozen events costs about what one more halving does. A variable, so that a
// test can make every search halve down to one event.
var markScan uint64 = 64

// errMarkStop ends a scan of the event log once it passed the time it looks for.
var errMarkStop = errors.New("stop")

// MarkEvents places times among the retained events by halving the id range: ids and
// the times the store gives events rise together, so the newest event before a time is
// found in a few dozen reads of one event each, however many events there are. The
// store stamps an event when its write is queued and numbers it when the write commits,
// so two events written within the same moment may be stamped out of their order; a
// mark is then right to within that moment.
func (e *Engine) MarkEvents(ctx context.Context, times []time.Time) (intentd.EventMarks, error) {
	first, last, err := e.store.EventBounds(ctx)
	if err != nil {
		return intentd.EventMarks{}, storeFailed("read the event log's bounds: %w", err)
	}
	m := intentd.EventMarks{Before: make([]uint64, len(times)), Last: last}
	if first == 0 {
		for i := range m.Before {
			m.Before[i] = last
		}
		return m, nil
	}
	pruned, err := e.store.PrunedThrough(ctx)
	if err != nil {
		return intentd.EventMarks{}, storeFailed("read the event log's bounds: %w", err)
	}
	if pruned > 0 {
		ev, ok, err := e.eventFrom(ctx, first)
		if err != nil {
			return intentd.EventMarks{}, err
		}
		if ok {
			m.RetainedFrom = ev.At
		}
	}
	lo := first - 1
	for i, t := range times {
		if lo, err = e.newestBefore(ctx, lo, last, t); err != nil {
			return intentd.EventMarks{}, err
		}
		m.Before[i] = lo
	}
	return m, nil
}

// newestBefore returns the id of the newest event in (lo, hi] stored before t, or lo
// when none is.
func (e *Engine) newestBefore(ctx context.Context, lo, hi uint64, t time.Time) (uint64, error) {
	for hi-lo > markScan {
		mid := lo + (hi-lo+1)/2
		ev, ok, err := e.eventFrom(ctx, mid)
		if err != nil {
			return 0, err
		}
		if !ok || ev.ID > hi || !ev.At.Before(t) {
			hi = mid - 1
		} else {
			lo = ev.ID
		}
	}
	if hi == lo {
		return lo, nil
	}
	newest := lo
	err := e.store.Events(ctx, lo, int(hi-lo), func(ev intentd.Event) error {
		if ev.ID > hi || !ev.At.Before(t) {
			return errMarkStop
		}
		newest = ev.ID
		return nil
	})
	if err != nil && !errors.Is(err, errMarkStop) {
		return 0, storeFailed("read events: %w", err)
	}
	return newest, nil
}

// eventFrom reads the first retained event whose id is id or more.
func (e *Engine) eventFrom(ctx context.Context, id uint64) (ev intentd.Event, ok bool, err error) {
	err = e.store.Events(ctx, id-1, 1, func(got intentd.Event) error {
		ev, ok = got, true
		return nil
	})
	if err != nil {
		return intentd.Event{}, false, storeFailed("read an event: %w", err)
	}
	return ev, ok, nil
}
