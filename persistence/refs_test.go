package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/intentd/intentd"
)

// wantDelete deletes policy and checks the answer: nil, or an error that is want.
func wantDelete(t *testing.T, s *Store, policy string, want error) {
	t.Helper()
	if err := s.DeletePolicy(ctx, policy); !errors.Is(err, want) || (want == nil && err != nil) {
		t.Fatalf("DeletePolicy(%s) = %v, want %v", policy, err, want)
	}
}

// mustFinish writes the outcome of open intent id over its processing record.
func mustFinish(t *testing.T, s *Store, id, policy string) {
	t.Helper()
	if _, err := finish(s, id, policy, []byte("done")); err != nil {
		t.Fatalf("Finish(%s): %v", id, err)
	}
}

// earlierLayout returns a closed store written in the earlier layout, with a key for
// each policy reference and empty index values: two intents of P (one open, one
// processing) and one of Q, and a policy R that none names.
func earlierLayout(t *testing.T) FS {
	t.Helper()
	fs := NewMemFS()
	s := openMem(t, fs)
	for _, p := range []string{"P", "Q", "R"} {
		if _, err := s.PutPolicy(ctx, p, []byte(p), nil); err != nil {
			t.Fatal(err)
		}
	}
	// The earlier layout, as its CreateIntent and BeginProcessing wrote it, without
	// the format record its versions did not write.
	b := s.db.NewBatch()
	b.Delete([]byte(keyFormat), nil)
	for _, in := range []struct{ id, policy string }{{"open-p", "P"}, {"proc-p", "P"}, {"open-q", "Q"}} {
		b.Set(key(prefixIntent, in.id), []byte("s"), nil)
		b.Set(key(prefixRef, in.policy, in.id), nil, nil)
		if strings.HasPrefix(in.id, "proc") {
			b.Set(key(prefixProcessing, in.id), nil, nil)
		} else {
			b.Set(expiryKey(t0, in.id), nil, nil)
		}
	}
	if err := s.commit(b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return fs
}

// wantNoRefKeys checks that no reference key of the earlier layout is left.
func wantNoRefKeys(t *testing.T, s *Store) {
	t.Helper()
	if err := s.scan([]byte{prefixRef}, func(k, _ []byte) error { return fmt.Errorf("reference key %q left", k) }); err != nil {
		t.Error(err)
	}
}

// TestRefsMigrated opens a store written in the earlier layout and finds every
// reference still holding its policy, in the new layout and none of the old keys left.
func TestRefsMigrated(t *testing.T) {
	fs := earlierLayout(t)
	var logged bytes.Buffer
	s, err := Open("db", Options{FS: fs, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(logged.String(), "policy references moved") || !strings.Contains(logged.String(), "intents_named=3") {
		t.Errorf("the migration was not logged as moving 3 references:\n%s", logged.String())
	}
	wantNoRefKeys(t, s)
	for _, prefix := range []byte{prefixExpiry, prefixProcessing} {
		s.scan([]byte{prefix}, func(k, v []byte) error {
			if len(v) == 0 {
				t.Errorf("index key %q names no policy", k)
			}
			return nil
		})
	}
	wantDelete(t, s, "R", nil)
	wantDelete(t, s, "Q", intentd.ErrPolicyInUse)
	mustFinish(t, s, "open-q", "Q")
	wantDelete(t, s, "Q", nil)
	wantDelete(t, s, "P", intentd.ErrPolicyInUse)
	if _, err := s.Finish(ctx, "proc-p", "P", []byte("done"), t0, event("proc-p")); err != nil {
		t.Fatalf("Finish(proc-p): %v", err)
	}
	wantDelete(t, s, "P", intentd.ErrPolicyInUse)
	mustFinish(t, s, "open-p", "P")
	wantDelete(t, s, "P", nil)
}

// TestRefsMigrationOnFullDisk opens a store of the earlier layout on a disk below the
// free-space margin. Moving its references is a write, so the open fails saying the
// disk is full, and the earlier layout stays whole: the next open, with space, moves
// every reference.
func TestRefsMigrationOnFullDisk(t *testing.T) {
	fs := earlierLayout(t)
	var free atomic.Uint64
	free.Store(10 << 20)
	opts := Options{FS: fs, MinFreeBytes: 64 << 20, FreeBytes: func() (uint64, error) { return free.Load(), nil }}
	s, err := Open("db", opts)
	if err == nil {
		s.Close()
		t.Fatal("a store whose references must move opened on a full disk")
	}
	if !errors.Is(err, intentd.ErrStorageFull) || !strings.Contains(err.Error(), "10485760 bytes free") {
		t.Fatalf("Open on a full disk = %v, want ErrStorageFull saying how much is free", err)
	}

	free.Store(1 << 30)
	s, err = Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wantNoRefKeys(t, s)
	wantDelete(t, s, "R", nil)
	wantDelete(t, s, "Q", intentd.ErrPolicyInUse)
	wantDelete(t, s, "P", intentd.ErrPolicyInUse)
}

// TestRefsCountedBesideWrites reopens a store of many open intents and, while their
// references may still be being counted, finishes all of them and creates one: the
// counts of the scan and of the writes add up, so the policy stays in use for the new
// intent alone.
func TestRefsCountedBesideWrites(t *testing.T) {
	const n = 3000
	s := reopenedWith(t, n, "old-")
	defer s.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				mustFinish(t, s, fmt.Sprint("old-", i), "P")
			}
		})
	}
	mustCreate(t, s, "new", "P", "o")
	wg.Wait()
	wantDelete(t, s, "P", intentd.ErrPolicyInUse)
	mustFinish(t, s, "new", "P")
	wantDelete(t, s, "P", nil)
}

// TestRefsWaitForTheCount: a delete whose caller gives up before the count ends says
// so, and one after a count that failed is refused. (A delete that waits for the count
// and then goes on is TestRefsCountedBesideWrites's.)
func TestRefsWaitForTheCount(t *testing.T) {
	held := &Store{refsLoaded: make(chan struct{})}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := held.DeletePolicy(cancelled, "P"); !errors.Is(err, cancelled.Err()) {
		t.Fatalf("DeletePolicy with the count unfinished and the caller gone = %v, want %v", err, cancelled.Err())
	}
	held.refsErr = errors.New("disk read failed")
	close(held.refsLoaded)
	if err := held.DeletePolicy(ctx, "P"); err == nil || !strings.Contains(err.Error(), "references are not known") {
		t.Fatalf("DeletePolicy after a failed count = %v, want it refused", err)
	}
}

// reopenedWith stores policy P and n open intents naming it, with ids of prefix and
// their number, and opens the store again.
func reopenedWith(t *testing.T, n int, prefix string) *Store {
	t.Helper()
	fs := NewMemFS()
	s := openMem(t, fs)
	if _, err := s.PutPolicy(ctx, "P", []byte{7}, []byte("src")); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		mustCreate(t, s, fmt.Sprint(prefix, i), "P", "o")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return openMem(t, fs)
}
