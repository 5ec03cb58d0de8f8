// Package pebbleevents logs what a Pebble database does in the background: its flushes,
// its compactions, its write stalls, its background errors, and operations on its files
// that do not return.
//
// Flushes and compactions share the disk and the cores with requests: while a flush
// writes its tables, the write-ahead log's fsyncs, which every acknowledged write waits
// for, take several times as long. A line for each, with how long it took and how much
// it wrote, lets an operator set a latency spike beside the store's work, and lets the
// load tool count the slow requests that fell inside it. They come once per tens of
// megabytes written, so they are logged at info. A background error or a write stall
// means the store cannot keep up or cannot write; Pebble's own default would log the
// first at the level of its informational lines, which the service keeps at debug.
package pebbleevents

import (
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
)

// Messages of the lines this package logs, which the load tool looks for.
const (
	FlushedMsg   = "store flushed"
	CompactedMsg = "store compacted"
	// DiskSlowMsg is logged while an operation on a database's files has run longer
	// than the watch's threshold (the database's Options.FS must be wrapped with
	// vfs.WithDiskHealthChecks): a disk that has stopped answering.
	DiskSlowMsg = "store disk slow: an operation on its files has not returned"
	// BackgroundErrorMsg is logged when a flush or a compaction fails.
	BackgroundErrorMsg = "store background error"
)

// errorGap is the least time between two lines of background errors.
const errorGap = 10 * time.Second

// every lets one event through per gap and counts those it holds back.
type every struct {
	gap time.Duration
	now func() time.Time

	mu      sync.Mutex
	last    time.Time // zero: none let through yet
	skipped int
}

// allow reports whether this event is let through and, if so, how many were held back
// since the last one that was.
func (e *every) allow() (ok bool, skipped int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if !e.last.IsZero() && now.Sub(e.last) < e.gap {
		e.skipped++
		return false, 0
	}
	e.last, skipped, e.skipped = now, e.skipped, 0
	return true, skipped
}

// Listener returns the listener to set as a database's Options.EventListener. db names
// the database in each line ("store", "tlog").
func Listener(log *slog.Logger, db string) *pebble.EventListener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("db", db)
	errs := &every{gap: errorGap, now: time.Now}
	return &pebble.EventListener{
		// A failed flush or compaction comes here; its FlushEnd or CompactionEnd
		// carries the same error and logs nothing. Pebble tries the work again at
		// once, without a pause, so one cause that lasts (a full disk) would fail
		// many times a second.
		BackgroundError: func(err error) {
			if ok, repeated := errs.allow(); ok {
				// The message alone: the error's %+v, which slog's text prints, is
				// a stack trace.
				log.Error(BackgroundErrorMsg, "err", err.Error(), "repeated", repeated)
			}
		},
		FlushEnd: func(i pebble.FlushInfo) {
			if i.Err != nil || i.Ingest {
				return // a failure (BackgroundError), or an ingestion, which the service does not make
			}
			log.Info(FlushedMsg, "took", i.TotalDuration, "bytes_in", i.InputBytes,
				"bytes_out", tablesSize(i.Output), "tables", len(i.Output))
		},
		CompactionEnd: func(i pebble.CompactionInfo) {
			if i.Err != nil {
				return
			}
			var from []int
			var read uint64
			for _, in := range i.Input {
				from = append(from, in.Level)
				read += tablesSize(in.Tables)
			}
			log.Info(CompactedMsg, "took", i.TotalDuration, "from", from, "to", i.Output.Level,
				"bytes_in", read, "bytes_out", tablesSize(i.Output.Tables), "reason", i.Reason)
		},
		WriteStallBegin: func(i pebble.WriteStallBeginInfo) {
			log.Warn("store writes stalled: flushes or compactions are behind", "reason", i.Reason)
		},
		WriteStallEnd: func() {
			log.Warn("store writes resumed")
		},
		DiskSlow: func(i pebble.DiskSlowInfo) {
			log.Warn(DiskSlowMsg, "op", i.OpType.String(), "file", filepath.Base(i.Path),
				"running_for", i.Duration.Round(time.Millisecond))
		},
	}
}

func tablesSize(ts []pebble.TableInfo) uint64 {
	var n uint64
	for _, t := range ts {
		n += t.Size
	}
	return n
}
