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

// EventMarks places times in the event log: which events came before each. The event
// stream carries no time (spec part 6), and a reader who replays it, as the console
// does at its first connection, learns from these when each replayed outcome happened.
type EventMarks struct {
	// Before holds, for each time asked about, the id of the newest event stored before
	// it; an event with id n came before time i exactly when n <= Before[i].
	Before []uint64
	// Last is the id of the newest event when the marks were read: events after it are
	// newer than every mark.
	Last uint64
	// RetainedFrom is the time of the oldest retained event when older ones were
	// pruned, zero when none was: what happened before it is no longer known.
	RetainedFrom time.Time
}

// EventMarker is an Engine that can place times among its retained events: an
// interface of its own, as TimelineReader is, so that an engine without event times
// is still an Engine.
type EventMarker interface {
	// MarkEvents answers the EventMarks of times, which are in ascending order. Its
	// cost is a few reads of the event log per time, whatever the number of events.
	MarkEvents(ctx context.Context, times []time.Time) (EventMarks, error)
}
