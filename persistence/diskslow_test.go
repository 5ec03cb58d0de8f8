package persistence

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/intentd/intentd/internal/pebbleevents"
	"github.com/intentd/intentd/internal/syncbuf"
)

// heldFS is an in-memory file system whose syncs of the write-ahead log wait while
// hold is set: a disk that has stopped answering.
type heldFS struct {
	vfs.FS
	mu   sync.Mutex
	held chan struct{} // nil: syncs return at once
}

func (fs *heldFS) hold() {
	fs.mu.Lock()
	fs.held = make(chan struct{})
	fs.mu.Unlock()
}

func (fs *heldFS) release() {
	fs.mu.Lock()
	close(fs.held)
	fs.held = nil
	fs.mu.Unlock()
}

func (fs *heldFS) wait() {
	fs.mu.Lock()
	held := fs.held
	fs.mu.Unlock()
	if held != nil {
		<-held
	}
}

func (fs *heldFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f), err
}

func (fs *heldFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(newname, f), err
}

func (fs *heldFS) wrap(name string, f vfs.File) vfs.File {
	if f == nil || !strings.HasSuffix(name, ".log") {
		return f
	}
	return heldFile{File: f, fs: fs}
}

type heldFile struct {
	vfs.File
	fs *heldFS
}

func (f heldFile) Sync() error     { f.fs.wait(); return f.File.Sync() }
func (f heldFile) SyncData() error { f.fs.wait(); return f.File.SyncData() }

// TestDiskSlowIsLogged holds the write-ahead log's fsync, as a disk that stopped
// answering would, and expects a warning naming the log file while the write waits,
// and the write to complete once the disk answers again.
func TestDiskSlowIsLogged(t *testing.T) {
	fs := &heldFS{FS: vfs.NewMem()}
	var log syncbuf.Buffer
	s, err := Open("db", Options{
		FS:            FS{fs: fs},
		Logger:        slog.New(slog.NewTextHandler(&log, nil)),
		diskSlowAfter: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	fs.hold()
	done := make(chan error, 1)
	go func() { _, err := s.PutPolicy(ctx, "P", []byte{1}, []byte("src")); done <- err }()

	// Pebble's watch looks every 2 s or so; the write waits meanwhile.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), pebbleevents.DiskSlowMsg) {
		if time.Now().After(deadline) {
			fs.release()
			t.Fatalf("no %q line after 10 s of a held fsync; the log:\n%s", pebbleevents.DiskSlowMsg, log.String())
		}
		select {
		case err := <-done:
			fs.release()
			t.Fatalf("the write returned (%v) while its fsync was held", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var line string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, pebbleevents.DiskSlowMsg) {
			line = l
			break
		}
	}
	for _, want := range []string{"level=WARN", "db=store", "op=sync", ".log", "running_for="} {
		if !strings.Contains(line, want) {
			t.Errorf("the slow-disk line %q lacks %q", line, want)
		}
	}
	fs.release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the write, once the disk answered: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not return after the disk answered")
	}
}
