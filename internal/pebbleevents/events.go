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
)

// Listener returns the listener to set as a database's Options.EventListener. db names
// the database in each line ("store", "tlog").
func Listener(log *slog.Logger, db string) *pebble.EventListener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("db", db)
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			log.Error("store background error", "err", err)
		},
		FlushEnd: func(i pebble.FlushInfo) {
			if i.Err != nil {
				log.Error("store flush failed", "err", i.Err)
				return
			}
			if i.Ingest {
				return // an ingestion, which the service does not make
			}
			log.Info(FlushedMsg, "took", i.TotalDuration, "bytes_in", i.InputBytes,
				"bytes_out", tablesSize(i.Output), "tables", len(i.Output))
		},
		CompactionEnd: func(i pebble.CompactionInfo) {
			if i.Err != nil {
				log.Error("store compaction failed", "err", i.Err)
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
