package natsstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// BenchmarkEventsPage reads a page of 256 events, as a resuming subscriber does, through
// a consumer and by direct gets.
func BenchmarkEventsPage(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for i := range 256 {
		id := fmt.Sprint(i)
		if err := s.CreateIntent(ctx, id, "P", nil, time.Now()); err != nil {
			b.Fatal(err)
		}
		if _, err := storetest.BeginAndFinish(ctx, s, id, "P", nil, time.Now(), storetest.Event(id)); err != nil {
			b.Fatal(err)
		}
	}
	count := func(want int) func(intentd.Event) error {
		n := 0
		return func(intentd.Event) error {
			if n++; n > want {
				b.Fatal("too many")
			}
			return nil
		}
	}
	b.Run("consumer", func(b *testing.B) {
		for b.Loop() {
			if err := s.Events(ctx, 0, 256, count(256)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			for after := uint64(0); ; {
				n := 0
				s.Events(ctx, after, pageByConsumer-1, func(e intentd.Event) error { n++; after = e.ID; return nil })
				if n == 0 {
					break
				}
			}
		}
	})
}
