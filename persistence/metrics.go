package persistence

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// FsyncCollector returns a Prometheus collector of the fsync latencies of the store's
// write-ahead log, as Pebble measures them: the cost of durability itself, apart from
// the time a write waits for the group it joins. It reports the histogram
// intentd_store_fsync_seconds.
func (s *Store) FsyncCollector() prometheus.Collector {
	return &fsyncCollector{
		h: s.db.Metrics().LogWriter.FsyncLatency,
		desc: prometheus.NewDesc("intentd_store_fsync_seconds",
			"Latency of the write-ahead log's fsyncs; one fsync serves every write of a group commit.", nil, nil),
	}
}

// fsyncCollector re-exposes Pebble's histogram, which has no name and counts
// nanoseconds, under a name and in seconds.
type fsyncCollector struct {
	h    prometheus.Histogram
	desc *prometheus.Desc
}

func (c *fsyncCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *fsyncCollector) Collect(ch chan<- prometheus.Metric) {
	if c.h == nil {
		return
	}
	var m dto.Metric
	if err := c.h.Write(&m); err != nil || m.Histogram == nil {
		return
	}
	const nanos = 1e9
	buckets := make(map[float64]uint64, len(m.Histogram.Bucket))
	for _, b := range m.Histogram.Bucket {
		buckets[b.GetUpperBound()/nanos] = b.GetCumulativeCount()
	}
	ch <- prometheus.MustNewConstHistogram(c.desc, m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum()/nanos, buckets)
}
