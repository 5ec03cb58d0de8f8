package tlog

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/benchcpu"
)

// BenchmarkAppendCPU appends leaves as a member's log does under load, a tile's worth a
// batch (the follower's largest) and a checkpoint after each, to logs of four sizes, and
// reports the process's CPU a leaf, Pebble's flushes and compactions included: they run
// on goroutines of their own, which a benchmark's time does not see. A log's compactions
// grow with it, so the larger logs are what a member that has run for a while pays.
func BenchmarkAppendCPU(b *testing.B) {
	for _, batches := range []int{36, 100, 400, 4000} {
		b.Run(fmt.Sprint(batches*TileWidth, " leaves"), func(b *testing.B) { appendCPU(b, batches) })
	}
}

func appendCPU(b *testing.B, batches int) {
	key, err := crypto.NewSigningKey(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		b.Fatal(err)
	}
	d, _ := crypto.Digest([]byte(`{}`))
	const perBatch = TileWidth
	for b.Loop() {
		l, err := Open(Options{Dir: b.TempDir(), Key: key})
		if err != nil {
			b.Fatal(err)
		}
		before := benchcpu.Now()
		next := uint64(1)
		for range batches {
			batch := make([]leaf, 0, perBatch)
			for range perBatch {
				batch = append(batch, leaf{next, intentd.LogEntry{EventID: next, Type: intentd.StateSuccess, IntentID: uuid.NewString(), EventDigest: d, ReceiptDigest: d}})
				next++
			}
			if err := l.append(batch); err != nil {
				b.Fatal(err)
			}
			if _, err := l.publish(); err != nil {
				b.Fatal(err)
			}
		}
		// The flush and the compactions under way are waited for, and what they start:
		// the run's leaves cost them too.
		for m := l.db.Metrics(); m.Flush.NumInProgress > 0 || m.Compact.NumInProgress > 0; m = l.db.Metrics() {
			time.Sleep(10 * time.Millisecond)
		}
		spent := benchcpu.Now() - before
		m := l.db.Metrics()
		b.ReportMetric(float64(spent.Microseconds())/float64(perBatch*batches), "cpu-µs/leaf")
		b.ReportMetric(float64(m.Flush.Count), "flushes")
		b.ReportMetric(float64(m.Compact.Count), "compactions")
		var written uint64
		for _, lv := range m.Levels {
			written += lv.BytesCompacted
		}
		b.ReportMetric(float64(written)/float64(perBatch*batches), "compacted-B/leaf")
		l.Close()
	}
}
