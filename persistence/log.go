package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/intentd/intentd"
)

var _ intentd.LogStore = (*Store)(nil)

// PutLogBundle stores bundle as entry bundle index unless the stored one begins with it;
// intentd.ErrLogFork when they disagree. The read and the write are one step under logMu:
// a single node has no other writer to race, but its log and a test may.
func (s *Store) PutLogBundle(_ context.Context, index uint64, bundle []byte) error {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	k := logBundleKey(index)
	stored, err := s.get(k)
	switch {
	case errors.Is(err, intentd.ErrNotFound):
	case err != nil:
		return err
	case bytes.HasPrefix(stored, bundle):
		return nil
	case !bytes.HasPrefix(bundle, stored):
		return fmt.Errorf("%w: entry bundle %d", intentd.ErrLogFork, index)
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(k, bundle, nil)
	return s.commit(b)
}

// LogBundle returns the stored entry bundle index, or intentd.ErrNotFound.
func (s *Store) LogBundle(_ context.Context, index uint64) ([]byte, error) {
	return s.get(logBundleKey(index))
}
