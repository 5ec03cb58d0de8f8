package persistence

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// checkpointPrefix begins the name of the folders Checkpoint makes in the data folder.
// They are the store's own: Open removes those a crash left, since their hard links
// hold on to tables the store has compacted away.
const checkpointPrefix = ".checkpoint-"

// Checkpoint writes a consistent copy of the store to a new folder inside the data
// folder, for a backup, and returns its path; the caller removes it when done. Pebble's
// checkpoint holds every write acknowledged before the call (and perhaps some after):
// tables are hard links, so it is quick and takes little space, and the write-ahead log
// is copied. The mark (mark.go) is copied as it stood before the checkpoint, so that it
// names no write the copy lacks, and a start on the copy checks it as it would the
// store. On an error, a full disk among them, nothing is left behind.
func (s *Store) Checkpoint() (string, error) {
	if s.inMemory {
		return "", errors.New("checkpoint: the store is on an in-memory file system")
	}
	s.markMu.Lock()
	mark := s.marked
	s.markMu.Unlock()
	dest, err := os.MkdirTemp(s.dir, checkpointPrefix)
	if err != nil {
		return "", s.checkpointErr(err)
	}
	// Pebble makes the folder itself, and refuses one that exists.
	if err := os.Remove(dest); err != nil {
		return "", s.checkpointErr(err)
	}
	err = s.db.Checkpoint(dest, pebble.WithFlushedWAL())
	if err == nil && !s.noMark {
		err = writeMark(s.fs, dest, mark)
	}
	if err != nil {
		os.RemoveAll(dest)
		return "", s.checkpointErr(err)
	}
	return dest, nil
}

// checkpointErr makes a full disk the error of kind storage full the API answers 503 to.
func (s *Store) checkpointErr(err error) error {
	if isNoSpace(err) {
		return fmt.Errorf("checkpoint the store: %w", intentd.ErrStorageFull)
	}
	return fmt.Errorf("checkpoint the store: %w", err)
}

// removeCheckpoints removes the checkpoint folders a backup interrupted by a crash left
// in dir.
func removeCheckpoints(dir string, log *slog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), checkpointPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil && log != nil {
				log.Warn("remove the checkpoint an interrupted backup left", "dir", filepath.Join(dir, e.Name()), "err", err)
			}
		}
	}
}
