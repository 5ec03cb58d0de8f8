package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/intentd/intentd/internal/pebbleevents"
)

// window is a span of a server's background work.
type window struct{ start, end time.Time }

// background records when a server worked in the background in ways that can hold a
// request up: its store's flushes and compactions, from the lines the store logs for
// each, and the collector's cycles, from the runtime's gctrace lines (the tool starts
// its servers with GODEBUG=gctrace=1). Decide counts its slow proposals against them.
type background struct {
	mu    sync.Mutex
	store []window
	gc    []window
}

// gcTraceRe matches a gctrace line: the cycle's start, in seconds since the process
// started, and its three wall-clock phases (sweep termination, mark, mark termination).
// The runtime may put a remark between the percentage and the colon.
var gcTraceRe = regexp.MustCompile(`^gc \d+ @([0-9.]+)s [0-9]+%[^:]*: ([0-9.]+)\+([0-9.]+)\+([0-9.]+) ms clock`)

// observe takes one line of the server's standard error; started is when the process
// was started. gctrace's times count from the runtime's start, a few milliseconds
// later (the exec, the loading of the binary), so the collections' windows are placed
// that much early: close enough to set beside gaps of over 10 ms, not finer.
func (bg *background) observe(line string, started time.Time) {
	if w, ok := parseGCTrace(line, started); ok {
		bg.mu.Lock()
		bg.gc = append(bg.gc, w)
		bg.mu.Unlock()
		return
	}
	if w, ok := parseStoreWork(line); ok {
		bg.mu.Lock()
		bg.store = append(bg.store, w)
		bg.mu.Unlock()
	}
}

func parseGCTrace(line string, started time.Time) (window, bool) {
	m := gcTraceRe.FindStringSubmatch(line)
	if m == nil {
		return window{}, false
	}
	at, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return window{}, false
	}
	var ms float64
	for _, p := range m[2:] {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return window{}, false
		}
		ms += v
	}
	start := started.Add(time.Duration(at * float64(time.Second)))
	return window{start, start.Add(time.Duration(ms * float64(time.Millisecond)))}, true
}

// parseStoreWork reads a flush's or a compaction's line in slog's text format: it is
// logged when the work ends, and took says how long it ran.
func parseStoreWork(line string) (window, bool) {
	if !strings.Contains(line, `msg="`+pebbleevents.FlushedMsg+`"`) && !strings.Contains(line, `msg="`+pebbleevents.CompactedMsg+`"`) {
		return window{}, false
	}
	end, err := time.Parse(time.RFC3339Nano, textAttr(line, "time"))
	if err != nil {
		return window{}, false
	}
	took, err := time.ParseDuration(textAttr(line, "took"))
	if err != nil {
		return window{}, false
	}
	return window{end.Add(-took), end}, true
}

// textAttr returns the unquoted value of key in a slog text line, or "".
func textAttr(line, key string) string {
	var rest string
	if strings.HasPrefix(line, key+"=") {
		rest = line[len(key)+1:]
	} else if i := strings.Index(line, " "+key+"="); i >= 0 {
		rest = line[i+len(key)+2:]
	} else {
		return ""
	}
	if end := strings.IndexByte(rest, ' '); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// windows returns copies of what was recorded so far.
func (bg *background) windows() (store, gc []window) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	return slices.Clone(bg.store), slices.Clone(bg.gc)
}

// overlaps says whether [from, to] meets any of ws.
func overlaps(from, to time.Time, ws []window) bool {
	for _, w := range ws {
		if w.start.Before(to) && from.Before(w.end) {
			return true
		}
	}
	return false
}

// coverage is the share of [from, to] that ws cover, counting overlapping windows once.
func coverage(from, to time.Time, ws []window) float64 {
	if !from.Before(to) {
		return 0
	}
	var covered time.Duration
	var last time.Time // the end of what has been counted so far
	for _, w := range sortedWindows(ws) {
		s, e := maxTime(w.start, from, last), minTime(w.end, to)
		if s.Before(e) {
			covered += e.Sub(s)
			last = e
		}
	}
	return float64(covered) / float64(to.Sub(from))
}

func sortedWindows(ws []window) []window {
	out := slices.Clone(ws)
	slices.SortFunc(out, func(a, b window) int { return a.start.Compare(b.start) })
	return out
}

func maxTime(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.After(m) {
			m = t
		}
	}
	return m
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
