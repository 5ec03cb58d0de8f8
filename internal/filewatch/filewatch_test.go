package filewatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestWatcher: a change is read once; one that cannot be used is told once, and the
// next change is read again; a missing file is no change.
func TestWatcher(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cert.pem")
	// Each write is whole (a temporary file renamed over the path), so that the
	// watcher never stamps a file half written: that would be a change of its own.
	write := func(s string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	var mu sync.Mutex
	stamps := func() ([]Stamp, error) {
		st, err := Of(path)
		return []Stamp{st}, err
	}
	cur, _ := stamps()
	var reloads, failures int
	bad := false
	w := Watcher{
		Stamps:  stamps,
		Current: func() []Stamp { mu.Lock(); defer mu.Unlock(); return cur },
		Reload: func() error {
			mu.Lock()
			defer mu.Unlock()
			if bad {
				return errors.New("bad")
			}
			cur, _ = stamps()
			reloads++
			return nil
		},
		Failed:   func(error) { mu.Lock(); failures++; mu.Unlock() },
		Reloaded: func() {},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx, time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			done := ok()
			mu.Unlock()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen in 5 s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	write("bb")
	wait("a change read", func() bool { return reloads == 1 })
	mu.Lock()
	bad = true
	mu.Unlock()
	write("ccc")
	wait("a bad change told", func() bool { return failures == 1 })
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	told := failures
	bad = false
	mu.Unlock()
	if told != 1 {
		t.Fatalf("a bad change told %d times, want once", told)
	}
	os.Remove(path)
	time.Sleep(20 * time.Millisecond)
	write("dddd")
	wait("the next change read", func() bool { return reloads == 2 })
}
