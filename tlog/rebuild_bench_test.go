package tlog_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/tlog"
)

// prunedSource is an event stream that retains nothing: every subscription starts
// truncated, so a log takes what it can from the store and then stops at the gap.
type prunedSource struct{}

func (prunedSource) Subscribe(context.Context, uint64, intentd.Filter) (intentd.Subscription, error) {
	return prunedSub{}, nil
}

func (prunedSource) Receipt(context.Context, string) (json.RawMessage, error) { return nil, nil }

type prunedSub struct{}

func (prunedSub) Next(ctx context.Context) (intentd.Event, error) {
	<-ctx.Done()
	return intentd.Event{}, ctx.Err()
}
func (prunedSub) Pending() bool            { return false }
func (prunedSub) Filling() <-chan struct{} { return nil }
func (prunedSub) Truncated() bool          { return true }
func (prunedSub) Close()                   {}

// BenchmarkRebuildFromStore measures how fast a log with no leaves rebuilds from each
// real store when no event is retained: 65,536 leaves (256 full bundles) a run, written
// to the store once, before the timer. docs/proofs.md quotes it.
func BenchmarkRebuildFromStore(b *testing.B) {
	const n = 256 * tlog.TileWidth
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range []struct {
		name string
		open func(b *testing.B) intentd.LogStore
	}{
		{"pebble", func(b *testing.B) intentd.LogStore {
			s, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"nats", func(b *testing.B) intentd.LogStore {
			srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Shutdown)
			s, err := natsstore.Open(context.Background(), natsstore.Options{URLs: []string{srv.URL()}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		b.Run(st.name, func(b *testing.B) {
			store := st.open(b)
			ctx := context.Background()
			var bundle []byte
			for i := range uint64(n) {
				sum := sha256.Sum256(binary.BigEndian.AppendUint64(nil, i))
				e := intentd.LogEntry{EventID: 2*i + 1, Type: intentd.StateSuccess, IntentID: uuid.NewString(),
					EventDigest: crypto.EncodeBase58(sum[:]), ReceiptDigest: crypto.EncodeBase58(sum[:])}
				bundle = tlog.AppendBundle(bundle, intentd.MarshalLogEntry(e))
				if (i+1)%tlog.TileWidth == 0 {
					if err := store.PutLogBundle(ctx, i/tlog.TileWidth, bundle); err != nil {
						b.Fatal(err)
					}
					bundle = bundle[:0]
				}
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				l, err := tlog.Open(tlog.Options{Dir: b.TempDir(), Key: key, Store: store})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := l.Run(ctx, prunedSource{}); !errors.Is(err, tlog.ErrGap) || l.Size() != n {
					b.Fatalf("Run: %v with %d leaves", err, l.Size())
				}
				b.StopTimer()
				l.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/leaf")
		})
	}
}
