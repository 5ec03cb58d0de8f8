package natsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/intentd/intentd"
)

var _ intentd.LogStore = (*Store)(nil)

// PutLogBundle stores bundle as entry bundle index unless the stored one begins with it;
// intentd.ErrLogFork when they disagree. Each write names the sequence of the bundle it
// extends (0 for the first), and rolls the subject up to itself: of nodes racing to
// write one bundle, one writes it and the others find it written and compare, so the
// stream holds one copy of each bundle, the longest.
func (s *Store) PutLogBundle(ctx context.Context, index uint64, bundle []byte) (err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	subject := s.logSubject(index)
	for {
		var after uint64
		m, err := s.last(ctx, subject)
		switch {
		case errors.Is(err, intentd.ErrNotFound):
		case err != nil:
			return err
		case bytes.HasPrefix(m.Data, bundle):
			return nil
		case !bytes.HasPrefix(bundle, m.Data):
			return fmt.Errorf("%w: entry bundle %d (stream sequence %d)", intentd.ErrLogFork, index, m.Sequence)
		default:
			after = m.Sequence
		}
		_, err = s.publish(ctx, bundleMsg(subject, after, bundle))
		if isWrongSeq(err) {
			continue // another writer was first: compare with what it wrote
		}
		return err
	}
}

// LogBundle returns the stored entry bundle index, or intentd.ErrNotFound.
func (s *Store) LogBundle(ctx context.Context, index uint64) (bundle []byte, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	m, err := s.last(ctx, s.logSubject(index))
	if err != nil {
		if errors.Is(err, intentd.ErrNotFound) {
			return nil, err
		}
		return nil, err
	}
	return m.Data, nil
}
