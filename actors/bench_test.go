package actors

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/benchcpu"
	"github.com/intentd/intentd/persistence"
)

// benchEngine opens an engine on a real, synced store in a temporary folder.
func benchEngine(b *testing.B, dir string, tweak func(*Config)) (*Engine, *persistence.Store, string) {
	b.Helper()
	cfg := DefaultConfig()
	if tweak != nil {
		tweak(&cfg)
	}
	store, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cfg.Store = store
	if cfg.Extractor == nil {
		cfg.Extractor = newFakeExtractor()
	}
	e, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	<-e.Ready()
	pid, err := e.PutPolicy(context.Background(), testPolicy)
	if err != nil {
		b.Fatal(err)
	}
	return e, store, pid
}

type signedIntent struct {
	raw  []byte
	auth crypto.Authorship
}

// presign signs n intents ahead, so that signing does not count.
func presign(b *testing.B, n int, policyID string) []signedIntent {
	_, key, _ := ed25519.GenerateKey(nil)
	out := make([]signedIntent, n)
	for i := range out {
		raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":2500}}}}`,
			uuid.NewString(), policyID)
		auth, err := crypto.SignEd25519(key, raw)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = signedIntent{raw, auth}
	}
	return out
}

// BenchmarkSubmitIntent submits intents from 64 concurrent submitters to an engine on a
// synced store: decode, JCS, verification, the intent actor and the fsync. intents/s is
// the figure. The unsigned case leaves out the Ed25519 verification, the largest single
// cost, to show what the engine and the store carry on their own.
func BenchmarkSubmitIntent(b *testing.B) {
	for _, signed := range []bool{true, false} {
		name := "ed25519"
		if !signed {
			name = "unsigned"
		}
		b.Run(name, func(b *testing.B) {
			e, store, pid := benchEngine(b, b.TempDir(), func(c *Config) { c.Verify.AllowUnsigned = !signed })
			defer store.Close()
			defer e.Close()
			intents := presign(b, b.N, pid)
			if !signed {
				for i := range intents {
					intents[i].auth = crypto.Authorship{}
				}
			}
			var next atomic.Int64
			b.SetParallelism(32) // 64 submitters on 2 cores
			b.ResetTimer()
			start, cpu := time.Now(), benchcpu.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					in := intents[next.Add(1)-1]
					if err := submitRaw(context.Background(), e, in.raw, in.auth); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "intents/s")
			// CPU time an intent costs the process, the engine's and the store's
			// background work included: a figure that a busy neighbour on a shared
			// host moves less than the rate.
			benchcpu.ReportMicros(b, cpu, "intent")
		})
	}
}

// BenchmarkProposalToEvent measures, with an instant extractor, the time from a
// proposal's acceptance to its event reaching a subscriber, one proposal at a time, and
// reports the median and the 99th percentile.
func BenchmarkProposalToEvent(b *testing.B) {
	e, store, pid := benchEngine(b, b.TempDir(), nil)
	defer store.Close()
	defer e.Close()
	intents := presign(b, b.N, pid)
	ids := make([]string, b.N)
	for i, in := range intents {
		if err := submitRaw(context.Background(), e, in.raw, in.auth); err != nil {
			b.Fatal(err)
		}
		d, _ := intentd.DecodeIntent(in.raw)
		ids[i] = d.ID
	}
	sub, err := e.Subscribe(context.Background(), 0, intentd.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i, id := range ids {
		if err := e.Propose(context.Background(), id, intentd.Proposal{Solution: "M-cheap"}, nil); err != nil {
			b.Fatal(err)
		}
		accepted := time.Now()
		if _, err := sub.Next(context.Background()); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(accepted)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkOpenIntents fills a store with INTENTD_BENCH_OPEN open intents (default
// 100,000; the reported figure uses 1,000,000), passivates every actor, and reports the
// heap and resident memory, then the time to re-open the store and serve a status. It
// runs once whatever b.N is; it is slow, so it runs only when asked for by name.
func BenchmarkOpenIntents(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("INTENTD_BENCH_OPEN")); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	// Unsigned: what is measured is the memory and the re-open, not the verification.
	unsigned := crypto.VerifyOptions{AllowUnsigned: true}
	e, store, pid := benchEngine(b, dir, func(c *Config) { c.PassivateAfter = 200 * time.Millisecond; c.Verify = unsigned })
	b.ResetTimer()
	var wg sync.WaitGroup
	var fail atomic.Value
	work := make(chan int)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				raw := fmt.Appendf(nil, `{"id":"%08x-0000-4000-8000-000000000000","policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":2500}}}}`, i, pid)
				if err := submitRaw(context.Background(), e, raw, crypto.Authorship{}); err != nil {
					fail.Store(err)
				}
			}
		}()
	}
	fillStart := time.Now()
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	fill := time.Since(fillStart)
	if err := fail.Load(); err != nil {
		b.Fatal(err)
	}
	for e.registry.live() > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(n)/fill.Seconds(), "fill-intents/s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(rssMiB(), "rss-MiB")

	e.Close()
	store.Close()
	reopen := time.Now()
	e, store, _ = benchEngine(b, dir, func(c *Config) { c.Verify = unsigned })
	id := "00000000-0000-4000-8000-000000000000"
	s, err := e.Status(context.Background(), id)
	if err != nil || s.State != intentd.StateOpen {
		b.Fatalf("status after reopen = %+v, %v", s, err)
	}
	b.ReportMetric(float64(time.Since(reopen).Milliseconds()), "reopen-ms")
	start := time.Now()
	const probes = 1000
	for i := range probes {
		if _, err := e.Status(context.Background(), fmt.Sprintf("%08x-0000-4000-8000-000000000000", i*(n/probes))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/probes, "status-µs")
	e.Close()
	store.Close()
}

// rssMiB reads the resident set size from /proc; 0 where there is none.
func rssMiB() float64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, rss int64
	fmt.Sscan(string(data), &size, &rss)
	return float64(rss*int64(os.Getpagesize())) / (1 << 20)
}

// BenchmarkDecodeIntent measures the strict decoding every submitted intent goes through.
func BenchmarkDecodeIntent(b *testing.B) {
	raw := []byte(`{"id":"0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f","policy_id":"4qWzWsKJqJ3sZfTzK1ZLrKkhTxH8Q8VQ6mJX7hQvYb5P","attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":2500}}}}`)
	if _, err := intentd.DecodeIntent(raw); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := intentd.DecodeIntent(raw); err != nil {
			b.Fatal(err)
		}
	}
}
