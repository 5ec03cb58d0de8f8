package natsstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/intentd/intentd/storetest"
)

func benchStore(b *testing.B) *Store {
	s := open(b, embed(b).URL())
	b.Cleanup(func() { s.Close() })
	if _, err := s.PutPolicy(context.Background(), "P", []byte{1}, nil); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkCreateIntent measures one synced creation at a time: one message on one
// server that syncs every write, then the wait for this store's watcher to pass it.
func BenchmarkCreateIntent(b *testing.B) {
	s := benchStore(b)
	snap := make([]byte, 600)
	for i := 0; b.Loop(); i++ {
		if err := s.CreateIntent(context.Background(), fmt.Sprintf("%036d", i), "P", snap, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateIntentParallel measures creations from 64 writers, the write path of
// POST /intents under load.
func BenchmarkCreateIntentParallel(b *testing.B) {
	var n atomic.Int64
	createParallel(b, benchStore(b), &n, make([]byte, 600))
}

// createParallel creates intents from 32 writers per core, their ids numbered from n.
func createParallel(b *testing.B, s *Store, n *atomic.Int64, snap []byte) {
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.CreateIntent(context.Background(), fmt.Sprintf("%036d", n.Add(1)), "P", snap, time.Now()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkFinishParallel measures terminal writes (snapshot and event, one batch) from
// 64 writers.
func BenchmarkFinishParallel(b *testing.B) {
	finishParallel(b, benchStore(b), make([]byte, 800))
}

// finishParallel ends b.N processing intents, made before the timer starts, from 32
// writers per core.
func finishParallel(b *testing.B, s *Store, snap []byte) {
	ids := createProcessing(b, s, b.N, snap)
	var next atomic.Int64
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ids[next.Add(1)-1]
			if _, err := s.Finish(context.Background(), id, "P", snap, time.Now(), storetest.Event(id)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// createProcessing creates n intents and begins processing them, from 32 writers,
// before the timer starts: an outcome is fenced on the intent's processing snapshot.
func createProcessing(b *testing.B, s *Store, n int, snap []byte) []string {
	b.StopTimer()
	defer b.StartTimer()
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				ids[i] = fmt.Sprintf("%036d", i) + nuid.Next()
				if err := s.CreateIntent(context.Background(), ids[i], "P", snap, time.Now()); err != nil {
					b.Error(err)
					return
				}
				if err := s.BeginProcessing(context.Background(), ids[i], "P", snap, time.Now()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return ids
}

// embedCluster starts a JetStream cluster of n servers on loopback, each from a
// configuration file as --nats-embed-config would give it, and returns their URLs.
func embedCluster(b testing.TB, n int) []string {
	return urlsOf(embedServers(b, n))
}

// urlsOf is the client URLs of srvs.
func urlsOf(srvs []*Embedded) []string {
	var urls []string
	for _, srv := range srvs {
		urls = append(urls, srv.URL())
	}
	return urls
}

// embedServers starts the servers of embedCluster and returns them, so that a test can
// stop one.
func embedServers(b testing.TB, n int) []*Embedded {
	srvs, err := EmbedCluster(b.TempDir(), n)
	if err != nil {
		b.Fatal(err)
	}
	for _, srv := range srvs {
		b.Cleanup(srv.Shutdown)
	}
	return srvs
}

// BenchmarkR3 measures creation and terminal writes on a three-server cluster on
// loopback, where a batch is staged in memory and replicated to a quorum.
func BenchmarkR3(b *testing.B) {
	urls := embedCluster(b, 3)
	s, err := Open(context.Background(), Options{URLs: urls, Replicas: 3})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.PutPolicy(context.Background(), "P", []byte{1}, nil); err != nil {
		b.Fatal(err)
	}
	snap := make([]byte, 600)
	var n atomic.Int64
	b.Run("CreateIntent", func(b *testing.B) {
		for b.Loop() {
			if err := s.CreateIntent(context.Background(), fmt.Sprintf("%036d", n.Add(1)), "P", snap, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CreateIntentParallel", func(b *testing.B) { createParallel(b, s, &n, snap) })
	b.Run("FinishParallel", func(b *testing.B) { finishParallel(b, s, snap) })
}

// BenchmarkCallStart measures what every call of the store spends before and after
// its request: the checks, the bounded context, and the watch on the connection that
// ends the call at once when the connection drops.
// Its cpu-ns/op is the process's CPU a call, the runtime's included: a goroutine the
// call would start runs beside the loop, outside its ns/op.
func BenchmarkCallStart(b *testing.B) {
	s := benchStore(b)
	b.ReportAllocs()
	n, start := 0, processCPU(b)
	for b.Loop() {
		_, end, err := s.begin(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		end()
		n++
	}
	b.ReportMetric(float64(processCPU(b)-start)/float64(n), "cpu-ns/op")
}

// processCPU is the CPU time this process has spent, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIntentRead measures the read of an intent's snapshot of 1.5 KB that a
// member which did not take the intent's create makes before it takes a proposal.
func BenchmarkIntentRead(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	if err := s.CreateIntent(ctx, "a", "P", make([]byte, 1500), time.Now().Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Intent(ctx, "a"); err != nil {
			b.Fatal(err)
		}
	}
}
