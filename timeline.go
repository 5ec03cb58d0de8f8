package intentd

import (
	"context"
	"time"
)

// Timeline is when an intent's transitions happened, by the server's clock: what a
// person or an agent following one intent wants beside its status, which carries no
// time and whose body the spec fixes (part 2.10). It is served as an extension of the
// API, GET /intents/{id}/timeline. Times not reached yet are zero.
type Timeline struct {
	// CreatedAt is when the intent was stored.
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when an intent with no proposal expires: its deadline.
	ExpiresAt time.Time `json:"expires_at"`
	// ProposedAt is when its proposal was accepted.
	ProposedAt time.Time `json:"proposed_at,omitzero"`
	// FinishedAt is when it ended: success, failure or expired. An expiry is carried
	// out at or a little after ExpiresAt, so the two differ by that delay.
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// TimelineReader is an Engine that can tell an intent's Timeline. It is an interface
// of its own rather than a method of Engine, so that an engine without the times is
// still an Engine, and GET /intents/{id}/timeline answers not_found for it.
type TimelineReader interface {
	// Timeline returns the times of an intent: KindNotFound (CodeIntentNotFound).
	Timeline(ctx context.Context, id string) (Timeline, error)
}
