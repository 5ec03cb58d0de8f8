package persistence

import (
	"fmt"
	"time"

	"github.com/intentd/intentd"
)

// A full disk is the one write failure Pebble does not survive: a write-ahead log write
// that fails ends the process (Pebble's logger is fatal), and every client, readers and
// event streams included, is cut off. So the store watches the free space of its folder
// and refuses writes, with intentd.ErrStorageFull, while less than a margin is left: the
// margin is for what Pebble writes on its own (a flushed memtable, a compaction) and for
// the writes in flight when the space ran out. Reads go on, and writes resume on their
// own once space returns. A disk filled faster than the store looks is met by the
// reserve (reserve.go), whatever the margin.

// DefaultMinFreeBytes is the margin of free space below which writes are refused.
// Pebble flushes a memtable of at most 32 MiB (memTableSize) at a time, two when writes
// outran a flush, and a compaction of the lower levels writes some tens of megabytes
// before it deletes what it merged.
const DefaultMinFreeBytes = 128 << 20

// diskCheckInterval is how often the free space is read. At 10,000 intents a second,
// about 4 MB reach the disk between two reads, well inside the margin.
const diskCheckInterval = 100 * time.Millisecond

// diskLoop reads the free space until the store closes.
func (s *Store) diskLoop(free func() (uint64, error)) {
	defer close(s.diskDone)
	t := time.NewTicker(diskCheckInterval)
	defer t.Stop()
	for {
		s.checkDisk(free)
		select {
		case <-t.C:
		case <-s.closing:
			return
		}
	}
}

// checkDisk reads the free space once and sets whether writes are refused, logging each
// change. A failed read leaves the state as it was: it says nothing about the space.
func (s *Store) checkDisk(free func() (uint64, error)) {
	n, err := free()
	if err != nil {
		s.log.Warn("read the free space of the data folder", "dir", s.dir, "err", err)
		return
	}
	s.freeBytes.Store(n)
	if s.reserve.short.Load() && n >= s.minFree+uint64(s.reserve.size) {
		if err := s.reserve.hold(); err != nil {
			s.log.Warn("allocate the data folder's reserve", "err", err)
		} else if !s.reserve.short.Load() {
			s.log.Info("the data folder's disk has room for its reserve again: writes resume unless below the margin", "dir", s.dir)
		}
	}
	full := n < s.minFree
	if s.full.Swap(full) == full {
		return
	}
	if full {
		s.log.Error("the data folder's disk is nearly full: writes are refused until space is freed; reads go on",
			"dir", s.dir, "free_bytes", n, "min_free_bytes", s.minFree)
	} else {
		s.log.Info("the data folder's disk has space again: writes resume", "dir", s.dir, "free_bytes", n)
	}
}

// Writable reports why the store refuses writes, or nil when it takes them: for a
// readiness check, which should say why.
func (s *Store) Writable() error {
	if s.full.Load() {
		return fmt.Errorf("%w: %d bytes free in %s, below the margin of %d", intentd.ErrStorageFull, s.freeBytes.Load(), s.dir, s.minFree)
	}
	if s.reserve.short.Load() {
		return fmt.Errorf("%w: the disk of %s ran out of space; writes resume once %d bytes are free (the margin of %d and the reserve of %d)",
			intentd.ErrStorageFull, s.dir, s.minFree+uint64(s.reserve.size), s.minFree, s.reserve.size)
	}
	return nil
}

// refusing reports whether writes are refused for want of space.
func (s *Store) refusing() bool {
	return s.full.Load() || s.reserve.short.Load()
}
