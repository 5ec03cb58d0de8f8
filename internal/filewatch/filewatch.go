// Package filewatch reads a set of files again when they change on disk, as the TLS
// certificates of the HTTP API and of a cluster's members are: each is stamped with its
// modification time and size, and a change is read once, whether it takes or not.
package filewatch

import (
	"context"
	"os"
	"slices"
	"time"
)

// Stamp is what tells that a file changed: its modification time and size.
type Stamp struct {
	mod  time.Time
	size int64
}

// Of stamps the file at path.
func Of(path string) (Stamp, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Stamp{}, err
	}
	return Stamp{info.ModTime(), info.Size()}, nil
}

// Watcher reads files again when their stamps change.
type Watcher struct {
	// Stamps stamps the files now; an error (a file missing for a moment, as during a
	// rotation that replaces the files one by one) counts as no change, and the files
	// are read once they are all back.
	Stamps func() ([]Stamp, error)
	// Current is the stamps of the reading in use.
	Current func() []Stamp
	// Reload reads the files again; on an error the reading in use stays.
	Reload func() error
	// Failed is told of a change that could not be used, once per change; Reloaded of
	// one that was.
	Failed   func(error)
	Reloaded func()
}

// Run looks at the files every interval until ctx ends.
func (w Watcher) Run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var failed []Stamp // the stamps of the last change that failed to load
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now, err := w.Stamps()
		if err != nil || slices.Equal(now, w.Current()) || slices.Equal(now, failed) {
			continue
		}
		if err := w.Reload(); err != nil {
			failed = now
			w.Failed(err)
			continue
		}
		failed = nil
		w.Reloaded()
	}
}
