package main

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// histSubBits sets the histogram's precision: 2^histSubBits buckets per power of two,
// so a recorded value is known to within 1/64 (1.6 %) of itself. Fan-out records
// millions of lags; keeping each one would take gigabytes, a histogram takes 30 KB.
const histSubBits = 7

const (
	histSub     = 1 << histSubBits
	histHalf    = histSub / 2
	histBuckets = histSub + (64-histSubBits)*histHalf
)

// hist is a log-linear histogram of durations in nanoseconds, safe for concurrent use:
// Record is a few atomic adds, so many goroutines can share one.
type hist struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Uint64
	max    atomic.Int64
}

func bucketOf(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v) - histSubBits
	m := v >> e // in [histSub/2, histSub) once shifted
	return histSub + (e-1)*histHalf + int(m) - histHalf
}

// bucketMid is the middle of bucket i, the value a quantile falling in it reports.
func bucketMid(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	i -= histSub
	e := i/histHalf + 1
	m := uint64(i%histHalf + histHalf)
	lo := m << e
	return lo + (uint64(1)<<e)/2
}

// Record adds one duration; a negative one counts as zero.
func (h *hist) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(uint64(v))].Add(1)
	h.n.Add(1)
	h.sum.Add(uint64(v))
	for {
		old := h.max.Load()
		if v <= old || h.max.CompareAndSwap(old, v) {
			return
		}
	}
}

// Count is the number of values recorded.
func (h *hist) Count() uint64 { return h.n.Load() }

// Max is the largest value recorded, exactly.
func (h *hist) Max() time.Duration { return time.Duration(h.max.Load()) }

// Mean is the mean of the values recorded.
func (h *hist) Mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Quantile returns the value below which a fraction q of the values lie, to the
// histogram's precision, and never above the exact maximum.
func (h *hist) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return min(time.Duration(bucketMid(i)), h.Max())
		}
	}
	return h.Max()
}
