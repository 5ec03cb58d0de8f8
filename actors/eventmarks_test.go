package actors

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/intentd/intentd"
)

// TestMarkEvents decides outcomes one after another, noting the time after each, and
// checks that the marks of those times are the ids of the events before them: by
// halving down to one event and by scanning, and after the oldest events were pruned.
func TestMarkEvents(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	const n = 20
	times := []time.Time{time.Now()}
	for range n {
		id := h.submit("M", 2500)
		if err := proposeTo(h, id, "fail:x"); err != nil {
			t.Fatal(err)
		}
		h.waitState(id, intentd.StateFailure)
		times = append(times, time.Now())
	}
	all := make([]uint64, n+1)
	for i := range all {
		all[i] = uint64(i)
	}

	tests := []struct {
		name      string
		scan      uint64
		keep      uint64 // events retained; 0: all
		times     []time.Time
		want      []uint64
		retained  bool
		wantFirst uint64 // the oldest retained event, whose time RetainedFrom is
	}{
		{"halving", 1, 0, times, all, false, 0},
		{"scanning", 64, 0, times, all, false, 0},
		{"some times", 2, 0, []time.Time{times[3], times[4], times[17]}, []uint64{3, 4, 17}, false, 0},
		{"none asked", 64, 0, nil, []uint64{}, false, 0},
		{"before every event", 1, 0, []time.Time{times[0].Add(-time.Hour)}, []uint64{0}, false, 0},
		{"after every event", 1, 0, []time.Time{times[n].Add(time.Hour)}, []uint64{n}, false, 0},
		// After pruning, what came before the oldest retained event is placed before it.
		{"pruned", 1, 8, times, []uint64{12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 20}, true, 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(old uint64) { markScan = old }(markScan)
			markScan = tt.scan
			if tt.keep > 0 {
				if _, err := h.store.PruneEvents(ctx, tt.keep, times[0].Add(-time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			m, err := h.e.MarkEvents(ctx, tt.times)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.Before, tt.want) || m.Last != n {
				t.Fatalf("marks %v, last %d; want %v, last %d", m.Before, m.Last, tt.want, n)
			}
			if !tt.retained {
				if !m.RetainedFrom.IsZero() {
					t.Fatalf("RetainedFrom %s with nothing pruned", m.RetainedFrom)
				}
				return
			}
			first := h.events(tt.wantFirst-1, int(n-tt.wantFirst+1))[0]
			if first.ID != tt.wantFirst || !m.RetainedFrom.Equal(first.At) {
				t.Fatalf("RetainedFrom %s, want the time of event %d, %s", m.RetainedFrom, first.ID, first.At)
			}
		})
	}
}
