package persistence

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/intentd/intentd"
)

// openFailed is the error of an Open that failed. A full disk is said in so many words,
// since its remedy is the operator's, and it is no damage: nothing is written before
// the first open completes, so the next start, with space, creates or opens the store.
func openFailed(dir string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("open store in %s: %w: its file system has no space left (%v); free some and start again", dir, intentd.ErrStorageFull, err)
	}
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		// Pebble's LOCK file is held: flock says only "resource temporarily unavailable".
		return fmt.Errorf("open store in %s: another process holds its LOCK file, most likely another intentd on the same --data; stop it, or give this one another folder (%w)", dir, err)
	}
	return fmt.Errorf("open store in %s: %w", dir, err)
}
