package persistence

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/vfs"
)

// The margin of free space (diskspace.go) works only if the store sees the disk fill:
// it reads the free space every diskCheckInterval, and another program that fills the
// disk at once (a log file gone wild, a copy) leaves the store writing into nothing.
// Pebble ends the process on a write-ahead log or MANIFEST write that fails, whatever
// the margin, so a margin alone cannot keep a full disk from ending the process: with
// a margin of 4 MiB, a disk filled by another file ended it after a dozen writes.
//
// So the store holds a reserve: a file of reserveBytes, allocated on the disk, that it
// gives back the moment a write meets a full disk. Pebble's vfs.OnDiskFull calls
// release with every write held, and retries the write that met the full disk once,
// into the space the reserve gave back; the store refuses writes from then on, as it
// does below the margin, until there is room again for the margin and the reserve
// both, when it allocates the reserve again. Reads go on throughout.

// reserveBytes is the size of the reserve: what the store may still write after a
// write met the full disk and before its refusal holds. That is the log writes of the
// commits in flight (at most a cushion each, prealloc.go), the MANIFEST's records, and a
// memtable being flushed, whose table would otherwise take the space the logs need.
const reserveBytes = memTableSize + 2*logCushion

// reserveName is the reserve's file in the store's folder; Pebble ignores files whose
// names are not its own.
const reserveName = "intentd-reserve"

// reserve is the file of space held back for the store's last writes.
type reserve struct {
	fs   vfs.FS // the file system under the wrapper that calls release
	path string
	size int64
	log  *slog.Logger
	held atomic.Bool
	// short is set while the store wants a reserve and has none: writes are refused.
	short atomic.Bool
}

func newReserve(fs vfs.FS, dir string, log *slog.Logger) *reserve {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &reserve{fs: fs, path: filepath.Join(dir, reserveName), size: reserveBytes, log: log}
}

// hold allocates the reserve, unless it is held. A disk without room for it is not an
// error: the store refuses writes until there is (diskspace.go).
func (r *reserve) hold() error {
	if r.held.Load() {
		return nil
	}
	f, err := r.fs.Create(r.path)
	if err != nil {
		return fmt.Errorf("create the reserve %s: %w", r.path, err)
	}
	err = f.Preallocate(0, r.size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.fs.Remove(r.path)
		if isNoSpace(err) {
			r.short.Store(true)
			return nil
		}
		return fmt.Errorf("allocate the reserve %s: %w", r.path, err)
	}
	r.held.Store(true)
	r.short.Store(false)
	return nil
}

// release gives the reserve's space back. vfs.OnDiskFull calls it, with every write of
// the store held, when a write meets a full disk.
func (r *reserve) release() {
	if !r.held.Swap(false) {
		return
	}
	r.short.Store(true)
	if err := r.fs.Remove(r.path); err != nil {
		r.log.Error("the data folder's disk is full and its reserve cannot be removed", "path", r.path, "err", err)
		return
	}
	r.log.Error("the data folder's disk is full: the store's reserve was given back so that the writes in flight complete; writes are refused until space is freed; reads go on",
		"path", r.path, "reserve_bytes", r.size)
}

// isNoSpace reports whether err says the file system is out of space.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC)
}
