package actors

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/internal/benchcpu"
)

// demoSolutions alternate a passing product of the demo catalog with one over budget,
// so that both outcomes are in the figures.
var demoSolutions = []string{"https://shop.example/products/tshirt-navy-m", "https://shop.example/products/premium-tee-navy-m"}

// demoIntents stores n open unsigned intents of the demo policy, outside the timer.
func demoIntents(b *testing.B, e *Engine, n int) []string {
	b.Helper()
	pid, err := e.PutPolicy(context.Background(), evidence.DemoPolicy)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
		raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},`+
			`"colors":{"Set":{"String":["navy","blue"]}},"max_price_cents":{"Int":3000}}}}`, ids[i], pid)
		if err := submitRaw(context.Background(), e, raw, crypto.Authorship{}); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// BenchmarkPreviewBesideProposal measures previews and proposals with the catalog
// extractor on the demo policy, from 32 concurrent callers, on a synced store:
// previews/s and the CPU time one costs the process, beside proposals/s (accepted,
// decided, receipt signed and the outcome written) and their CPU time. A preview
// writes nothing, so its cost is extraction and evaluation alone; docs/benchmarks.md
// has the figures.
func BenchmarkPreviewBesideProposal(b *testing.B) {
	open := func(b *testing.B) *Engine {
		key, err := crypto.GenerateSigningKey()
		if err != nil {
			b.Fatal(err)
		}
		e, store, _ := benchEngine(b, b.TempDir(), func(c *Config) {
			c.Extractor = evidence.DefaultCatalog()
			c.Prover = ReceiptProver{Key: key}
			c.Verify.AllowUnsigned = true
			c.MaxPreviewsPerIntent = 0
			c.MaxPreviewing = 32 // the callers' number: the figure is the work's, not the share's
		})
		b.Cleanup(func() { e.Close(); store.Close() })
		return e
	}
	b.Run("preview", func(b *testing.B) {
		e := open(b)
		ids := demoIntents(b, e, 64)
		var next atomic.Int64
		b.SetParallelism(16) // 32 callers on 2 cores
		b.ResetTimer()
		start, cpu := time.Now(), benchcpu.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1)
				_, err := e.Preview(context.Background(), ids[i%int64(len(ids))], intentd.Proposal{Solution: demoSolutions[i%2]})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "previews/s")
		benchcpu.ReportMicros(b, cpu, "preview")
	})
	b.Run("proposal", func(b *testing.B) {
		e := open(b)
		ids := demoIntents(b, e, b.N)
		sub, err := e.Subscribe(context.Background(), intentd.SubscribeLive, intentd.Filter{})
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		// The outcomes are read as they come, so that the subscription keeps up.
		decided := make(chan error, 1)
		go func() {
			for range b.N {
				if _, err := sub.Next(context.Background()); err != nil {
					decided <- err
					return
				}
			}
			decided <- nil
		}()
		var next atomic.Int64
		b.SetParallelism(16)
		b.ResetTimer()
		start, cpu := time.Now(), benchcpu.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1) - 1
				if err := e.Propose(context.Background(), ids[i], intentd.Proposal{Solution: demoSolutions[i%2]}, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
		if err := <-decided; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "proposals/s")
		benchcpu.ReportMicros(b, cpu, "proposal")
	})
}
