package persistence

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/syncbuf"
)

// TestStorageFull runs a store whose free space is told by the test: writes are refused
// with ErrStorageFull while it is below the margin, reads go on, and writes resume on
// their own when space returns.
func TestStorageFull(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 30)
	s, err := Open("db", Options{FS: NewMemFS(), MinFreeBytes: 64 << 20, FreeBytes: func() (uint64, error) { return free.Load(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{"P", "R"} {
		if _, err := s.PutPolicy(ctx, p, []byte{1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, s, "before", "P", "o")
	mustCreate(t, s, "proc", "P", "o")
	if err := s.BeginProcessing(ctx, "proc", "P", []byte("p"), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateMandate(ctx, "M", []byte("m")); err != nil {
		t.Fatal(err)
	}

	free.Store(10 << 20)
	waitFor(t, "writes refused", func() bool { return s.Writable() != nil })
	if err := s.Writable(); !errors.Is(err, intentd.ErrStorageFull) || !strings.Contains(err.Error(), "10485760 bytes free") {
		t.Fatalf("Writable = %v, want ErrStorageFull saying how much is free", err)
	}
	for name, write := range map[string]func() error{
		"create":   func() error { return s.CreateIntent(ctx, "during", "P", []byte("o"), t0) },
		"process":  func() error { return s.BeginProcessing(ctx, "before", "P", []byte("p"), t0) },
		"finish":   func() error { _, err := s.Finish(ctx, "proc", "P", []byte("d"), t0, event("proc")); return err },
		"policy":   func() error { _, err := s.PutPolicy(ctx, "Q", []byte{2}, nil); return err },
		"unpolicy": func() error { return s.DeletePolicy(ctx, "R") },
		"mandate":  func() error { return s.CreateMandate(ctx, "M2", []byte("m")) },
		"update":   func() error { _, err := s.UpdateMandate(ctx, "M", []byte("m2"), 1, true); return err },
	} {
		if err := write(); !errors.Is(err, intentd.ErrStorageFull) {
			t.Errorf("%s while full = %v, want ErrStorageFull", name, err)
		}
	}
	if got, err := s.Intent(ctx, "before"); err != nil || string(got) != "o" {
		t.Fatalf("read while full = %q, %v; want the stored intent", got, err)
	}
	if _, err := s.Intent(ctx, "during"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("a refused create was stored: %v", err)
	}
	if rec, rev, err := s.Mandate(ctx, "M"); err != nil || string(rec) != "m" || rev != 1 {
		t.Fatalf("mandate while full = %q at %d, %v; want the stored one at revision 1", rec, rev, err)
	}
	if _, _, err := s.Mandate(ctx, "M2"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("a refused mandate was stored: %v", err)
	}

	free.Store(1 << 30)
	waitFor(t, "writes resumed", func() bool { return s.Writable() == nil })
	mustCreate(t, s, "after", "P", "o")
}

// TestStorageFullOnDisk fills a real, small file system (a tmpfs the test mounts) to
// the margin: the store refuses writes before Pebble runs out of space, which would end
// the process, and takes them again once the filler is removed. It needs root to mount
// the tmpfs and skips, saying so, without.
func TestStorageFullOnDisk(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a full disk needs a small file system: mounting a tmpfs failed (%v: %s); run as root to test it", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	s, err := Open(filepath.Join(dir, "db"), Options{MinFreeBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	// Fill until less than the margin is left (tmpfs says "no space" at the end).
	chunk := make([]byte, 1<<20)
	for {
		free, err := statfsFree(dir)
		if err != nil {
			t.Fatal(err)
		}
		if free < 20<<20 {
			break
		}
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	// Writes race the watcher, as they would in service: they are refused before the
	// file system is out of space, or Pebble would end this process.
	snap := make([]byte, 4096)
	refused := false
	for i := 0; i < 100_000 && !refused; i++ {
		err := s.CreateIntent(ctx, fmt.Sprintf("i%06d", i), "P", snap, t0)
		switch {
		case errors.Is(err, intentd.ErrStorageFull):
			refused = true
		case err != nil:
			t.Fatalf("create %d on a filling disk: %v, want ErrStorageFull", i, err)
		}
	}
	if !refused {
		t.Fatal("no write was refused on a full disk")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "writes resumed", func() bool { return s.Writable() == nil })
	mustCreate(t, s, "after", "P", "o")
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fullDisk is an in-memory file system whose writes to the files named fail with
// ENOSPC while full is set: creating a file still works, as on a full disk.
type fullDisk struct {
	*errorfs.FS
	mem  vfs.FS
	full atomic.Bool
}

func newFullDisk(files ...string) *fullDisk {
	d := &fullDisk{mem: vfs.NewMem()}
	d.full.Store(true)
	d.FS = errorfs.Wrap(d.mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if !d.full.Load() || (op != errorfs.OpFileWrite && op != errorfs.OpFileWriteAt) || !slices.Contains(files, filepath.Base(path)) {
			return nil
		}
		return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}))
	return d
}

// TestFirstOpenOnFullDisk creates a store on a disk that is full at each write of its
// first open: the open fails with one line that names the folder and says the disk is
// full, never ending the process; and once space is back the store is created, with a
// warning when the first try left a manifest and no CURRENT, and it keeps what is
// written.
func TestFirstOpenOnFullDisk(t *testing.T) {
	tests := []struct {
		name     string
		file     string // the file whose writes fail
		leftOver bool   // the first try leaves a store never completely created
	}{
		{"the manifest", "MANIFEST-000001", true},
		{"CURRENT's temporary file", "temporary.000001.dbtmp", true},
		{"the options", "temporary.000003.dbtmp", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disk := newFullDisk(tt.file)
			var log syncbuf.Buffer
			opts := Options{FS: FS{fs: disk}, Logger: slog.New(slog.NewTextHandler(&log, nil))}
			_, err := Open("db", opts)
			if err == nil {
				t.Fatal("a store was created on a full disk")
			}
			msg := err.Error()
			if !errors.Is(err, intentd.ErrStorageFull) || !strings.Contains(msg, "open store in db") ||
				!strings.Contains(msg, "no space left") || strings.Contains(msg, "\n") {
				t.Fatalf("Open on a full disk = %v, want one line naming the folder and saying it has no space left", err)
			}
			names, _ := disk.mem.List("db")
			if left := slices.Contains(names, "MANIFEST-000001") && !slices.Contains(names, "CURRENT"); left != tt.leftOver {
				t.Fatalf("the failed open left %v: a manifest without CURRENT is %v, want %v", names, left, tt.leftOver)
			}

			disk.full.Store(false)
			s, err := Open("db", opts)
			if err != nil {
				t.Fatalf("Open once space is back: %v", err)
			}
			if warned := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "never completely created"); warned != tt.leftOver {
				t.Errorf("a warning that the store was created afresh: %v, want %v; the log:\n%s", warned, tt.leftOver, log.String())
			}
			if _, err := s.PutPolicy(ctx, "P", []byte{1}, []byte("src")); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open("db", opts)
			if err != nil {
				t.Fatalf("Open of the store created afresh: %v", err)
			}
			defer s.Close()
			if _, src, err := s.Policy(ctx, "P"); err != nil || string(src) != "src" {
				t.Fatalf("the policy written after the full disk = %q, %v", src, err)
			}
		})
	}
}

// TestOwnLogsLeaveRoom writes a store on a small file system (a tmpfs the test mounts)
// with nothing else on it: the space the store takes must follow what it holds. Pebble
// reserved 110 % of the largest memtable (35 MiB) for each new write-ahead log before
// anything was written to it, and kept up to five such logs while its first, small
// memtables filled, so that 8 MiB of intents held 180 MiB of the disk: on a disk of a
// few hundred megabytes the store's own reservations took the margin, writes were
// refused, and nothing freed the space but a restart. It needs root to mount the tmpfs
// and skips, saying so, without.
func TestOwnLogsLeaveRoom(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a small disk needs a small file system: mounting a tmpfs failed (%v: %s); run as root to test it", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	before, err := statfsFree(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "db"), Options{MinFreeBytes: DefaultMinFreeBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	// 16 MiB of snapshots: the first memtables (256 KiB, doubling) filled and flushed,
	// each with a log of its own.
	const n, size = 4096, 4096
	snap := make([]byte, size)
	for i := range n {
		if err := s.CreateIntent(ctx, fmt.Sprintf("i%06d", i), "P", snap, t0); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	after, err := statfsFree(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The log and the tables each hold the snapshots once; a few megabytes more for the
	// keys and the files' ends, each of the six logs a cushion ahead of its writes, and
	// the reserve.
	if used, most := before-after, uint64(2*n*size+8<<20+6*logCushion+reserveBytes); used > most {
		t.Fatalf("%d MiB of snapshots took %d MiB of the disk, want at most %d MiB", n*size>>20, used>>20, most>>20)
	}
	if err := s.Writable(); err != nil {
		t.Fatalf("after %d MiB of snapshots, %d MiB free on a disk of 256 MiB: %v", n*size>>20, after>>20, err)
	}
}

// TestFullDiskNeverEnds fills a small file system (a tmpfs the test mounts) at once,
// faster than the store reads its free space, under each margin an operator may set:
// the writes that meet the full disk complete in the reserve, later ones are refused,
// the process goes on, and every acknowledged write is there. Once the filler is gone
// the store holds its reserve again and takes writes. With a margin alone, Pebble met
// the full disk in a log write and ended the process. It needs root to mount the tmpfs
// and skips, saying so, without.
func TestFullDiskNeverEnds(t *testing.T) {
	for _, margin := range []int64{0, 1 << 20, 4 << 20} {
		t.Run(fmt.Sprintf("margin=%d", margin), func(t *testing.T) {
			dir := t.TempDir()
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", dir).CombinedOutput(); err != nil {
				t.Skipf("a full disk needs a small file system: mounting a tmpfs failed (%v: %s); run as root to test it", err, strings.TrimSpace(string(out)))
			}
			t.Cleanup(func() { exec.Command("umount", dir).Run() })
			s, err := Open(filepath.Join(dir, "db"), Options{MinFreeBytes: margin})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := os.Stat(filepath.Join(dir, "db", reserveName)); err != nil {
				t.Fatalf("the reserve: %v", err)
			}
			if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
				t.Fatal(err)
			}
			filler := filepath.Join(dir, "filler")
			fillDisk(t, filler)
			snap := make([]byte, 4096)
			var acked []string
			refused := false
			for i := 0; i < 100_000 && !refused; i++ {
				id := fmt.Sprintf("i%06d", i)
				err := s.CreateIntent(ctx, id, "P", snap, t0)
				switch {
				case err == nil:
					acked = append(acked, id)
				case errors.Is(err, intentd.ErrStorageFull):
					refused = true
				default:
					t.Fatalf("create %d on a full disk: %v, want ErrStorageFull", i, err)
				}
			}
			if !refused {
				t.Fatal("no write was refused on a full disk")
			}
			if err := s.Writable(); !errors.Is(err, intentd.ErrStorageFull) {
				t.Fatalf("Writable on a full disk = %v, want ErrStorageFull", err)
			}
			for _, id := range acked {
				if got, err := s.Intent(ctx, id); err != nil || len(got) != len(snap) {
					t.Fatalf("acknowledged intent %s: %d bytes, %v", id, len(got), err)
				}
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "writes resumed", func() bool { return s.Writable() == nil })
			if _, err := os.Stat(filepath.Join(dir, "db", reserveName)); err != nil {
				t.Fatalf("the reserve after space returned: %v", err)
			}
			mustCreate(t, s, "after", "P", "o")
		})
	}
}

// fillDisk writes path until its file system has no space left.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	small := make([]byte, 4096)
	for {
		if _, err := f.Write(small); err != nil {
			return
		}
	}
}
