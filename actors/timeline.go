package actors

import (
	"context"

	"github.com/intentd/intentd"
)

// Timeline returns the times of an intent as its snapshot records them. An open intent
// past its deadline is expired first, as Status does, so that both agree.
func (e *Engine) Timeline(ctx context.Context, id string) (intentd.Timeline, error) {
	snap, err := e.current(ctx, id)
	if err != nil {
		return intentd.Timeline{}, err
	}
	return intentd.Timeline{
		CreatedAt:  snap.CreatedAt,
		ExpiresAt:  snap.ExpiresAt,
		ProposedAt: snap.ProposedAt,
		FinishedAt: snap.FinishedAt,
	}, nil
}
