package natsstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkCreateIntent measures one synced creation at a time: an atomic batch of two
// messages on one server that syncs every write.
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
	s := benchStore(b)
	snap := make([]byte, 600)
	var n atomic.Int64
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
	s := benchStore(b)
	snap := make([]byte, 800)
	var n atomic.Int64
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("%036d", n.Add(1))
			if _, err := s.Finish(context.Background(), id, "P", snap, time.Now(), storetest.Event(id)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
