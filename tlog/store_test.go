package tlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

// memStore is an intentd.LogStore in memory, with the contract storetest checks of the
// real stores (persistence, natsstore), which this package may not import; the tests of
// cmd/intentd run the log over both.
type memStore struct {
	mu      sync.Mutex
	bundles map[uint64][]byte
}

func (m *memStore) PutLogBundle(_ context.Context, index uint64, bundle []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	stored := m.bundles[index]
	switch {
	case bytes.HasPrefix(stored, bundle):
	case !bytes.HasPrefix(bundle, stored):
		return fmt.Errorf("%w: entry bundle %d", intentd.ErrLogFork, index)
	default:
		m.bundles[index] = bytes.Clone(bundle)
	}
	return nil
}

func (m *memStore) LogBundle(_ context.Context, index uint64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.bundles[index]
	if !ok {
		return nil, intentd.ErrNotFound
	}
	return bytes.Clone(b), nil
}

// logStores are the stores a log keeps its entries in, each made empty for a test.
var logStores = []struct {
	name string
	open func(t testing.TB) intentd.LogStore
}{
	{"memory", func(testing.TB) intentd.LogStore { return &memStore{bundles: map[uint64][]byte{}} }},
}

func openShared(t *testing.T, dir string, key *crypto.SigningKey, store intentd.LogStore) *Log {
	t.Helper()
	l, err := Open(Options{Dir: dir, Key: key, Interval: 10 * time.Millisecond, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitShared waits until the store holds the log's first n leaves.
func waitShared(t *testing.T, store intentd.LogStore, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		last := uint64(n-1) / TileWidth
		b, err := store.LogBundle(context.Background(), last)
		if err == nil {
			if entries, err := ParseBundle(b); err == nil && uint64(len(entries)) == uint64(n)-last*TileWidth {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store does not hold %d leaves after 10s (bundle %d: %d bytes, %v)", n, last, len(b), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLogRebuildsFromStore checks that a log whose folder is lost after every event
// was pruned, and a new node's log, rebuild from the store the tree the first log
// built, checkpoint for checkpoint, and go on with the events that come after.
func TestLogRebuildsFromStore(t *testing.T) {
	for _, st := range logStores {
		t.Run(st.name, func(t *testing.T) {
			store := st.open(t)
			src := newFakeSource(t)
			evs := src.add(t, 2*TileWidth+88)
			n := uint64(len(evs))
			first := openShared(t, t.TempDir(), src.key, store)
			defer first.Close()
			run(t, first, src, n)
			waitShared(t, store, int(n))
			if _, err := first.publish(); err != nil {
				t.Fatal(err)
			}
			src.mu.Lock()
			src.pruned = evs[len(evs)-1].ID
			src.mu.Unlock()

			for _, tc := range []struct {
				name  string
				store intentd.LogStore
				err   error
			}{
				{"without the store", nil, ErrGap},
				{"from the store", store, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					l := openShared(t, t.TempDir(), src.key, tc.store)
					defer l.Close()
					if tc.err != nil {
						if err := l.Run(context.Background(), src); !errors.Is(err, tc.err) || l.Size() != 0 {
							t.Fatalf("Run: %v with %d leaves, want %v", err, l.Size(), tc.err)
						}
						return
					}
					run(t, l, src, n)
					if _, err := l.publish(); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(l.Checkpoint(), first.Checkpoint()) {
						t.Fatalf("rebuilt from the store, the log signs\n%s\nthe first signed\n%s", l.Checkpoint(), first.Checkpoint())
					}
					for _, i := range []int{0, 255, 256, len(evs) - 1} {
						inc, err := l.Inclusion(evs[i].IntentID)
						if err != nil || inc == nil || inc.LeafIndex != uint64(i) {
							t.Fatalf("inclusion of leaf %d after the rebuild: %+v, %v", i, inc, err)
						}
					}
				})
			}

			// Both go on alike with the events after the pruned ones.
			src.add(t, 10)
			again := openShared(t, t.TempDir(), src.key, store)
			defer again.Close()
			run(t, again, src, n+10)
			run(t, first, src, n+10)
			for _, l := range []*Log{first, again} {
				if _, err := l.publish(); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(again.Checkpoint(), first.Checkpoint()) {
				t.Fatalf("after new events the logs sign\n%s\nand\n%s", again.Checkpoint(), first.Checkpoint())
			}
			waitShared(t, store, int(n+10))
		})
	}
}

// TestLogFindsFork checks that a log whose entries differ from the ones the store keeps,
// or whose tree rebuilt differs from a checkpoint it signed, stops with ErrLogFork and
// writes nothing over the store's entries.
func TestLogFindsFork(t *testing.T) {
	for _, st := range logStores {
		t.Run(st.name, func(t *testing.T) {
			store := st.open(t)
			other := newFakeSource(t)
			other.add(t, 5)
			src := newFakeSource(t)
			src.key = other.key
			src.add(t, 5)
			// Another history's first bundle is in the store.
			theirs := openShared(t, t.TempDir(), other.key, store)
			run(t, theirs, other, 5)
			waitShared(t, store, 5)
			kept, err := store.LogBundle(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			theirs.Close()

			l := openShared(t, t.TempDir(), src.key, store)
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := l.Run(ctx, src); !errors.Is(err, intentd.ErrLogFork) {
				t.Fatalf("Run over a store of another history: %v, want ErrLogFork", err)
			}
			if got, err := store.LogBundle(context.Background(), 0); err != nil || !bytes.Equal(got, kept) {
				t.Fatalf("the store's bundle was changed: %v", err)
			}
		})
	}

	t.Run("a store behind the log is none", func(t *testing.T) {
		// The store holds the first 10 of the log's 20 leaves, and no event is
		// retained: the log has nothing to take, and stops at the gap, not at a fork.
		src := newFakeSource(t)
		evs := src.add(t, 20)
		ahead := &memStore{bundles: map[uint64][]byte{}}
		dir := t.TempDir()
		l := openShared(t, dir, src.key, ahead)
		run(t, l, src, 20)
		l.Close()
		full, err := ahead.LogBundle(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := ParseBundle(full)
		if err != nil || len(entries) != 20 {
			t.Fatalf("the store holds %d entries (%v), want 20", len(entries), err)
		}
		behind := &memStore{bundles: map[uint64][]byte{0: AppendBundle(nil, entries[:10]...)}}
		src.mu.Lock()
		src.pruned = evs[19].ID + 1
		src.mu.Unlock()
		l = openShared(t, dir, src.key, behind)
		defer l.Close()
		if err := l.Run(context.Background(), src); !errors.Is(err, ErrGap) {
			t.Fatalf("Run: %v, want ErrGap", err)
		}
	})

	t.Run("checkpoint", func(t *testing.T) {
		// A folder holding a checkpoint of 5 leaves of another history, and no leaves:
		// the tree rebuilt from the events is not the one signed.
		other := newFakeSource(t)
		other.add(t, 5)
		theirs := openLog(t, t.TempDir(), other.key)
		run(t, theirs, other, 5)
		if _, err := theirs.publish(); err != nil {
			t.Fatal(err)
		}
		signed := theirs.Checkpoint()
		theirs.Close()

		src := newFakeSource(t)
		src.key = other.key
		src.add(t, 8)
		dir := t.TempDir()
		l := openLog(t, dir, src.key)
		if err := l.db.Set([]byte(keyCP), signed, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		l.Close()
		l = openLog(t, dir, src.key)
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.Run(ctx, src); !errors.Is(err, intentd.ErrLogFork) {
			t.Fatalf("Run: %v, want ErrLogFork", err)
		}
		if !bytes.Equal(l.Checkpoint(), signed) || l.Size() != 0 {
			t.Fatalf("after the fork the log serves %d leaves and\n%s", l.Size(), l.Checkpoint())
		}
	})
}
