package persistence

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestFsyncCollector checks that synced writes show in the fsync histogram, in seconds.
func TestFsyncCollector(t *testing.T) {
	s := openMem(t, NewMemFS())
	defer s.Close()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(s.FsyncCollector()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	for i := range 3 {
		if _, err := s.PutPolicy(ctx, string(rune('a'+i)), []byte{1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	n, err := testutil.GatherAndCount(reg, "intentd_store_fsync_seconds")
	if err != nil || n != 1 {
		t.Fatalf("GatherAndCount = %d, %v; want one histogram", n, err)
	}
	// Pebble's WAL releases a write's waiters when its fsync returns and observes the
	// fsync's latency just after, so the last write can be acknowledged a moment before
	// its fsync is counted.
	var mfs []*dto.MetricFamily
	var h *dto.Histogram
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if mfs, err = reg.Gather(); err != nil {
			t.Fatal(err)
		}
		h = mfs[0].GetMetric()[0].GetHistogram()
		if h.GetSampleCount() >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d fsyncs counted after 3 synced writes", h.GetSampleCount())
		}
	}
	// Pebble counts nanoseconds; the histogram must be in seconds: no in-memory fsync
	// takes a second, so the sum of three is far below one.
	if sum := h.GetSampleSum(); sum >= 1 {
		t.Fatalf("sum %v: not in seconds", sum)
	}
	if !strings.Contains(mfs[0].GetHelp(), "fsync") {
		t.Fatalf("help %q", mfs[0].GetHelp())
	}
}
