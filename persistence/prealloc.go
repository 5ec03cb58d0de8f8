package persistence

import (
	"sync"

	"github.com/cockroachdb/pebble/vfs"
)

// logCushionFS is the store's file system, with its own reservation of space for the
// write-ahead logs in place of Pebble's.
//
// Pebble reserves 110 % of the largest memtable (35 MiB with memTableSize) as soon as a
// log is first written, whatever the memtable it serves: while a store's first memtables
// (256 KiB, doubling) fill, it keeps five or six logs that hold a few megabytes between
// them and 180 MiB of the disk. On a disk of a few hundred megabytes that reservation
// alone took the margin of free space (DefaultMinFreeBytes): writes were refused, and as
// nothing was written no log was released, so the space stayed taken until a restart.
//
// A reservation is still worth something: a log write that finds the disk full ends the
// process (diskspace.go), and the free space is read only every diskCheckInterval, so a
// disk filled at once by another program meets the log's next write before the store
// refuses writes. A log here keeps logCushion reserved ahead of what it has written,
// renewed as it grows: its write lands in space it holds, and the store refuses the next
// ones first. Only the logs reserve space (Pebble asks only of them), and each holds at
// most logCushion more than it has written.
//
// The reservation renewed as a log grows costs more than Pebble's one at its start:
// about 2 CPU-µs an intent in BenchmarkCreateIntentParallel (docs/benchmarks.md), for
// space that follows what the store holds.
type logCushionFS struct{ vfs.FS }

// logCushion is the space a log keeps reserved ahead of its writes: the writes of more
// than a diskCheckInterval at 10,000 intents a second.
const logCushion = 4 << 20

// Create creates a file that reserves space the way logCushionFS says.
func (fs logCushionFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &cushionFile{File: f}, nil
}

// ReuseForWrite renames a spent log for reuse, as Pebble recycles them; its blocks stay
// allocated, so writes within its old size need no reservation.
func (fs logCushionFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	if err != nil {
		return nil, err
	}
	return &cushionFile{File: f}, nil
}

// cushionFile is a file that, once asked to reserve space, keeps logCushion reserved
// ahead of its end. Pebble writes a log from one goroutine, and syncs and closes it from
// others; the lock keeps the reservation's bookkeeping whole across them.
type cushionFile struct {
	vfs.File

	mu       sync.Mutex
	log      bool  // Preallocate was asked for: the file is a write-ahead log
	written  int64 // bytes written
	reserved int64 // end of the space reserved
}

// Preallocate marks the file as one that keeps a cushion, instead of reserving the
// length asked for.
func (f *cushionFile) Preallocate(offset, length int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = true
	return f.reserve()
}

// Write writes p, after renewing the reservation when less than half of it is left.
func (f *cushionFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	if f.log {
		// As Pebble's own reservation, a failed one is left to the write: it fails the
		// same way, or finds the space after all.
		_ = f.reserve()
	}
	f.mu.Unlock()
	n, err := f.File.Write(p)
	f.mu.Lock()
	f.written += int64(n)
	f.mu.Unlock()
	return n, err
}

// reserve reserves logCushion past the end of the reservation when the writes have come
// within half of it; f.mu is held.
func (f *cushionFile) reserve() error {
	if f.reserved-f.written > logCushion/2 {
		return nil
	}
	from := max(f.reserved, f.written)
	if err := f.File.Preallocate(from, logCushion); err != nil {
		return err
	}
	f.reserved = from + logCushion
	return nil
}
