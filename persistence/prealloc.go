package persistence

import "github.com/cockroachdb/pebble/vfs"

// noPreallocFS is a file system whose files ignore requests to reserve space ahead of
// their writes. Pebble asks for it only for its write-ahead logs, and asks for 110 % of
// the largest memtable (35 MiB with memTableSize) as soon as a log is first written,
// whatever the memtable it serves: while a store's first memtables (256 KiB, doubling)
// fill, it keeps five or six logs that hold a few megabytes between them and 180 MiB of
// the disk. On a disk of a few hundred megabytes that reservation alone took the margin
// of free space (DefaultMinFreeBytes): writes were refused, and as nothing was written
// no log was released, so the space stayed taken until a restart. Without it the logs
// take what they hold. What the reservation saves, the file system's allocation of
// blocks as a log grows, did not show in the store's benchmark: 30.9 CPU-µs an intent
// without it, 31.1 with it (BenchmarkCreateIntentParallel, four alternated pairs).
type noPreallocFS struct{ vfs.FS }

// Create creates a file that does not reserve space.
func (fs noPreallocFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return noPreallocFile{f}, nil
}

// ReuseForWrite renames a spent log for reuse, as Pebble recycles them; the file it
// gives back does not reserve space either.
func (fs noPreallocFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	if err != nil {
		return nil, err
	}
	return noPreallocFile{f}, nil
}

// noPreallocFile is a file whose Preallocate reserves nothing.
type noPreallocFile struct{ vfs.File }

// Preallocate does nothing: see noPreallocFS.
func (noPreallocFile) Preallocate(offset, length int64) error { return nil }
