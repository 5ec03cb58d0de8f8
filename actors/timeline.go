package actors

import (
	"context"

	"github.com/intentd/intentd"
)

// Timeline returns the times of an intent as its snapshot records them, in UTC: a
// snapshot read back from the store has its times in UTC, and a live actor's must read
// the same. An open intent past its deadline is expired first, as Status does, so that
// both agree.
func (e *Engine) Timeline(ctx context.Context, id string) (intentd.Timeline, error) {
	snap, err := e.current(ctx, id)
	if err != nil {
		return intentd.Timeline{}, err
	}
	return intentd.Timeline{
		CreatedAt:  snap.CreatedAt.UTC(),
		ExpiresAt:  snap.ExpiresAt.UTC(),
		ProposedAt: snap.ProposedAt.UTC(),
		FinishedAt: snap.FinishedAt.UTC(),
	}, nil
}
