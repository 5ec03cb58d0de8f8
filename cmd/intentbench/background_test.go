package main

import (
	"bytes"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd/internal/pebbleevents"
)

func TestBackgroundObserve(t *testing.T) {
	started := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		line      string
		store, gc []window
	}{
		{
			name: "gctrace",
			line: "gc 40 @22.716s 1%: 0.36+18+0.015 ms clock, 0.72+1.7/9.9/8.9+0.030 ms cpu, 50->50->25 MB, 51 MB goal, 0 MB stacks, 0 MB globals, 2 P",
			gc: []window{{
				started.Add(22716 * time.Millisecond),
				started.Add(22716*time.Millisecond + 18375*time.Microsecond),
			}},
		},
		{
			name: "flush",
			line: `time=2026-11-27T08:14:47.250Z level=INFO msg="store flushed" component=store db=store took=250ms bytes_in=33274450 bytes_out=10769360 tables=6`,
			store: []window{{
				time.Date(2026, 11, 27, 8, 14, 47, 0, time.UTC),
				time.Date(2026, 11, 27, 8, 14, 47, 250e6, time.UTC),
			}},
		},
		{
			name: "compaction",
			line: `time=2026-11-27T08:14:48.000Z level=INFO msg="store compacted" db=tlog took=1.5s from="[0 6]" to=6`,
			store: []window{{
				time.Date(2026, 11, 27, 8, 14, 46, 500e6, time.UTC),
				time.Date(2026, 11, 27, 8, 14, 48, 0, time.UTC),
			}},
		},
		{name: "a forced collection", line: "gc 3 @0.5s 1%: 0.1+2+0.1 ms clock, 0.2+0/1/0+0.2 ms cpu, 4->4->2 MB, 5 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)",
			gc: []window{{started.Add(500 * time.Millisecond), started.Add(502200 * time.Microsecond)}}},
		{name: "a collection while checking for leaks", line: "gc 7 @1.25s 2% (checking for goroutine leaks): 0.1+3+0.1 ms clock, 0.2+0/1/0+0.2 ms cpu, 4->4->2 MB, 5 MB goal, 0 MB stacks, 0 MB globals, 2 P",
			gc: []window{{started.Add(1250 * time.Millisecond), started.Add(1253200 * time.Microsecond)}}},
		{name: "a request line", line: `time=2026-11-27T08:14:48.000Z level=INFO msg=request took=3ms`},
		{name: "a flush line without took", line: `time=2026-11-27T08:14:48.000Z level=INFO msg="store flushed" db=store`},
		{name: "a flush line with a bad time", line: `time=yesterday level=INFO msg="store flushed" took=3ms`},
		{name: "scavenger", line: "scvg: 1 MB released"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bg background
			bg.observe(tt.line, started)
			store, gc := bg.windows()
			if !sameWindows(store, tt.store) || !sameWindows(gc, tt.gc) {
				t.Errorf("store %v, gc %v; want %v, %v", store, gc, tt.store, tt.gc)
			}
		})
	}
}

// TestBackgroundReadsTheStoresLines feeds the recorder the lines pebbleevents writes,
// in the format intentd is started with, so that a change to either is caught.
func TestBackgroundReadsTheStoresLines(t *testing.T) {
	var buf bytes.Buffer
	l := pebbleevents.Listener(slog.New(slog.NewTextHandler(&buf, nil)), "store")
	l.FlushEnd(pebble.FlushInfo{TotalDuration: 120 * time.Millisecond, InputBytes: 1 << 20})
	l.CompactionEnd(pebble.CompactionInfo{TotalDuration: 2 * time.Second, Input: []pebble.LevelInfo{{Level: 0}}})
	var bg background
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		bg.observe(string(line), time.Now())
	}
	store, _ := bg.windows()
	if len(store) != 2 {
		t.Fatalf("%d windows from %q, want 2", len(store), buf.String())
	}
	for i, want := range []time.Duration{120 * time.Millisecond, 2 * time.Second} {
		if got := store[i].end.Sub(store[i].start); got != want {
			t.Errorf("window %d lasts %v, want %v", i, got, want)
		}
	}
}

// sameWindows compares with time.Time.Equal: the parsed times carry their own zone.
func sameWindows(a, b []window) bool {
	return slices.EqualFunc(a, b, func(x, y window) bool { return x.start.Equal(y.start) && x.end.Equal(y.end) })
}

func TestCoverage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name string
		ws   []window
		want float64
	}{
		{"none", nil, 0},
		{"inside", []window{{at(100), at(200)}}, 0.1},
		{"overlapping ones count once", []window{{at(100), at(300)}, {at(200), at(400)}}, 0.3},
		{"out of order", []window{{at(500), at(600)}, {at(0), at(100)}}, 0.2},
		{"one inside another", []window{{at(100), at(500)}, {at(200), at(300)}}, 0.4},
		{"cut at the ends", []window{{at(-100), at(100)}, {at(900), at(1200)}}, 0.2},
		{"outside", []window{{at(1100), at(1200)}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := coverage(at(0), at(1000), tt.ws); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("coverage %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSlowCauses(t *testing.T) {
	var h hist
	p := newPairClock(5, &h, 1)
	p.origin = time.Unix(2000, 0)
	ms := func(v int) int64 { return int64(v)*int64(time.Millisecond) + 1 }
	// Proposal i's 200 at ack, its event at event (ms since origin).
	for i, g := range []struct{ ack, event int }{
		{0, 2},      // fast
		{100, 130},  // slow, inside the flush
		{300, 320},  // slow, inside the collection only
		{500, 520},  // slow, nothing
		{880, 1000}, // slow, meets the flush and the collection: counted for the store
	} {
		p.ack[i].Store(ms(g.ack))
		p.event[i].Store(ms(g.event))
	}
	at := func(v int) time.Time { return p.origin.Add(time.Duration(v) * time.Millisecond) }
	store := []window{{at(90), at(150)}, {at(950), at(960)}}
	gc := []window{{at(310), at(312)}, {at(900), at(905)}}
	slow, inStore, inGC, from, to := p.slowCauses(store, gc)
	if slow != 4 || inStore != 2 || inGC != 1 {
		t.Errorf("slow %d, in the store's work %d, in collections %d; want 4, 2, 1", slow, inStore, inGC)
	}
	if !from.Equal(at(0)) || !to.Equal(at(880)) {
		t.Errorf("span %v to %v, want the first and the last 200", from, to)
	}
}

func TestGCTraceEnv(t *testing.T) {
	for in, want := range map[string]string{
		"":               "GODEBUG=gctrace=1",
		"madvdontneed=1": "GODEBUG=madvdontneed=1,gctrace=1",
	} {
		if got := gcTraceEnv(in); got != want {
			t.Errorf("gcTraceEnv(%q) = %q, want %q", in, got, want)
		}
	}
}
