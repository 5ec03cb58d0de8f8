package pebbledir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// TestOpen opens folders damaged in the ways seen under a failing disk or a careless
// hand: each is an error with ErrDamaged in its chain, saying what is wrong, never a
// panic; a folder that is only busy is an error without it.
func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string) (undo func())
		damaged bool
		want    string
	}{
		{"whole", nil, false, ""},
		{"CURRENT missing", func(t *testing.T, dir string) func() {
			remove(t, filepath.Join(dir, "CURRENT"))
			return nil
		}, true, "the file CURRENT is missing, but the folder holds the database's other files (000002.log, MANIFEST-000001)"},
		{"CURRENT names no manifest", func(t *testing.T, dir string) func() {
			write(t, filepath.Join(dir, "CURRENT"), "MANIFEST-999999\n")
			return nil
		}, true, "MANIFEST-999999"},
		{"CURRENT malformed", func(t *testing.T, dir string) func() {
			write(t, filepath.Join(dir, "CURRENT"), "garbage")
			return nil
		}, true, "malformed"},
		{"manifest overwritten", func(t *testing.T, dir string) func() {
			write(t, filepath.Join(dir, "MANIFEST-000001"), strings.Repeat("garbage", 10))
			return nil
		}, true, "MANIFEST-000001"},
		{"open in another handle", func(t *testing.T, dir string) func() {
			db, err := Open(dir, options())
			if err != nil {
				t.Fatal(err)
			}
			return func() { db.Close() }
		}, false, "lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := Open(dir, options())
			if err != nil {
				t.Fatal(err)
			}
			// Not synced and not flushed: the write stays in the log, which the next
			// open replays.
			if err := db.Set([]byte("k"), []byte("v"), pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if tt.damage != nil {
				if undo := tt.damage(t, dir); undo != nil {
					defer undo()
				}
			}
			db, err = Open(dir, options())
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				db.Close()
				return
			}
			if err == nil {
				db.Close()
				t.Fatalf("Open succeeded, want an error saying %q", tt.want)
			}
			if errors.Is(err, ErrDamaged) != tt.damaged || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open = %v; want an error saying %q, damaged %v", err, tt.want, tt.damaged)
			}
		})
	}
	t.Run("a first open stopped half-way", func(t *testing.T) {
		// What a first open on a full disk leaves: the lock and an empty first
		// manifest, no CURRENT. It held no write, and is created afresh.
		dir := t.TempDir()
		write(t, filepath.Join(dir, "LOCK"), "")
		write(t, filepath.Join(dir, "MANIFEST-000001"), "")
		db, err := Open(dir, options())
		if err != nil {
			t.Fatalf("Open of a folder a first open left half-made: %v", err)
		}
		if err := db.Set([]byte("k"), []byte("v"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if db, err = Open(dir, options()); err != nil {
			t.Fatalf("Open of the database created over it: %v", err)
		}
		db.Close()
	})
	t.Run("no folder yet", func(t *testing.T) {
		db, err := Open(filepath.Join(t.TempDir(), "new"), options())
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	})
}

// TestFirstOpenOnFullDisk opens a new database on a disk whose writes of the first
// manifest fail as a full disk's do: the open is an error with syscall.ENOSPC in its
// chain, not the end of the process, and once space is back the folder it left opens as
// a new database.
func TestFirstOpenOnFullDisk(t *testing.T) {
	mem := vfs.NewMem()
	var full atomic.Bool
	full.Store(true)
	disk := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if full.Load() && (op == errorfs.OpFileWrite || op == errorfs.OpFileWriteAt) && filepath.Base(path) == "MANIFEST-000001" {
			return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
		}
		return nil
	}))
	opts := func() *pebble.Options { o := options(); o.FS = disk; return o }
	if db, err := Open("db", opts()); err == nil {
		db.Close()
		t.Fatal("a database was created on a full disk")
	} else if !errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Open on a full disk = %v, want one line with ENOSPC in its chain", err)
	}
	full.Store(false)
	db, err := Open("db", opts())
	if err != nil {
		t.Fatalf("Open once space is back: %v", err)
	}
	db.Close()
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// options keeps Pebble's lines about the logs it replays out of the test's output.
func options() *pebble.Options { return &pebble.Options{Logger: quiet{}} }

type quiet struct{}

func (quiet) Infof(string, ...any) {}

func (quiet) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
