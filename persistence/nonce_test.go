package persistence

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/intentd/intentd"
)

// TestNonceDurableWithItsProposal crashes a store (its unsynced writes lost) after a
// nonce was spent and the proposal it came with written: the nonce is still spent
// after the restart, although its spend wrote nothing of its own.
func TestNonceDurableWithItsProposal(t *testing.T) {
	ctx := context.Background()
	mem := crashableFS(t)
	opts := Options{FS: FS{fs: mem}}
	s, err := Open("data", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Hour)
	if err := s.CreateIntent(ctx, "i", "P", []byte("open"), deadline); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(5 * time.Minute)
	if err := s.SpendNonce(ctx, "K", "n1", until); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginProcessing(ctx, "i", "P", []byte("processing"), deadline); err != nil {
		t.Fatal(err)
	}
	s = crash(t, s, mem, opts)
	defer s.Close()
	if err := s.SpendNonce(ctx, "K", "n1", until); !errors.Is(err, intentd.ErrNonceSpent) {
		t.Errorf("after the crash, the nonce of the proposal written: %v, want ErrNonceSpent", err)
	}
	if got, err := s.Intent(ctx, "i"); err != nil || string(got) != "processing" {
		t.Errorf("after the crash, the intent is %q (%v), want processing", got, err)
	}
}

// TestNonceFlushedAlone: a nonce no other write takes along is written within
// flushAfter by a write of its own, and survives a crash after that.
func TestNonceFlushedAlone(t *testing.T) {
	ctx := context.Background()
	mem := crashableFS(t)
	opts := Options{FS: FS{fs: mem}}
	s, err := Open("data", opts)
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(5 * time.Minute)
	if err := s.SpendNonce(ctx, "K", "alone", until); err != nil {
		t.Fatal(err)
	}
	time.Sleep(flushAfter + 500*time.Millisecond)
	s = crash(t, s, mem, opts)
	defer s.Close()
	if err := s.SpendNonce(ctx, "K", "alone", until); !errors.Is(err, intentd.ErrNonceSpent) {
		t.Errorf("after the crash, a nonce flushed on its own: %v, want ErrNonceSpent", err)
	}
}

// crashableFS is an in-memory file system that loses what was not synced when told
// (ResetToSyncedState), with the data folder made and its parent synced: a folder
// whose making was not synced would be lost whole.
func crashableFS(t *testing.T) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewStrictMem()
	if err := mem.MkdirAll("data", 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := mem.OpenDir("")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	return mem
}

// crash stops s as a crash would, losing all it did not sync, and opens the store again.
func crash(t *testing.T, s *Store, mem *vfs.MemFS, opts Options) *Store {
	t.Helper()
	mem.SetIgnoreSyncs(true)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mem.ResetToSyncedState()
	mem.SetIgnoreSyncs(false)
	s, err := Open("data", opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
