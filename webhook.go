package intentd

import (
	"context"
	"time"
)

// Webhook is an endpoint outcomes are pushed to, in the Standard Webhooks format
// (docs/webhooks.md): the JSON of GET /webhooks/{id}. Its configuration is fixed at
// creation; its delivery state moves as events are delivered.
type Webhook struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Types, PolicyIDs and MandateIDs select the events delivered; an empty one
	// selects all. An event is delivered when every non-empty one selects it.
	Types      []State  `json:"types,omitempty"`
	PolicyIDs  []string `json:"policy_ids,omitempty"`
	MandateIDs []string `json:"mandate_ids,omitempty"`
	// Asymmetric adds an Ed25519 signature (v1a) beside the HMAC one (v1), verified
	// with the service's webhook public key (GET /info webhook_public_key).
	Asymmetric bool `json:"asymmetric"`
	// MaxInFlight bounds the deliveries under way at once. At 1, the default, each
	// event is sent only once the one before it was taken: strict order.
	MaxInFlight int       `json:"max_in_flight"`
	CreatedAt   time.Time `json:"created_at"`
	// Secret is the whsec_ HMAC key; only the answer of the creation carries it.
	Secret string `json:"secret,omitempty"`

	WebhookState
}

// WebhookState is where an endpoint's deliveries stand.
type WebhookState struct {
	// Status is active, failing (an event is being retried) or disabled (an event
	// failed for the whole retry schedule, or an admin disabled it).
	Status WebhookStatus `json:"status"`
	// DisabledReason says why a disabled endpoint is.
	DisabledReason string `json:"disabled_reason,omitempty"`
	// Delivered is the id of the last event delivered, or passed over by the
	// filters, with every event before it: deliveries resume after it.
	Delivered uint64 `json:"delivered_through"`
	// FailingSince is when the event being retried first failed; Attempt is how many
	// attempts it has had.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	Attempt      int        `json:"attempt,omitempty"`
	// NextAttempt is when it is tried next.
	NextAttempt *time.Time `json:"next_attempt,omitempty"`
	// Skipped counts the events the endpoint missed because the event log no longer
	// held them when it came to them (docs/webhooks.md, "Retention").
	Skipped uint64 `json:"skipped,omitempty"`
	// Deliverer names the member delivering the endpoint, in a cluster.
	Deliverer string `json:"deliverer,omitempty"`
	// Attempts are the newest attempts, newest first.
	Attempts []WebhookAttempt `json:"recent_attempts"`
}

// WebhookStatus is an endpoint's health.
type WebhookStatus string

// The statuses of an endpoint.
const (
	WebhookActive   WebhookStatus = "active"
	WebhookFailing  WebhookStatus = "failing"
	WebhookDisabled WebhookStatus = "disabled"
)

// WebhookAttempt is one delivery attempt of an event.
type WebhookAttempt struct {
	EventID uint64    `json:"event_id"`
	At      time.Time `json:"at"`
	// Status is the receiver's HTTP status, 0 when none came.
	Status    int     `json:"status"`
	LatencyMS float64 `json:"latency_ms"`
	// Error says why the attempt failed, empty for a success.
	Error string `json:"error,omitempty"`
}

// WebhookSpec is what POST /webhooks asks for.
type WebhookSpec struct {
	URL         string
	Types       []State
	PolicyIDs   []string
	MandateIDs  []string
	Asymmetric  bool
	MaxInFlight int
}

// WebhookManager keeps the webhook endpoints and their deliveries: what the routes of
// /webhooks call (docs/webhooks.md).
type WebhookManager interface {
	// CreateWebhook registers an endpoint and answers it with its secret. KindInvalid
	// (CodeInvalidWebhook) for a URL the service will not call; KindConflict
	// (CodeWebhookLimit) past the endpoints a server keeps.
	CreateWebhook(ctx context.Context, spec WebhookSpec) (Webhook, error)
	// Webhooks lists the endpoints, without their secrets, by id.
	Webhooks(ctx context.Context) ([]Webhook, error)
	// Webhook returns one endpoint, without its secret: KindNotFound
	// (CodeWebhookNotFound).
	Webhook(ctx context.Context, id string) (Webhook, error)
	// DeleteWebhook removes an endpoint; its deliveries stop. KindNotFound.
	DeleteWebhook(ctx context.Context, id string) error
	// SetWebhookEnabled disables an endpoint, or enables it again: an enabled one
	// starts afresh on the event it was at, its retry schedule from the start.
	SetWebhookEnabled(ctx context.Context, id string, enabled bool) (Webhook, error)
	// Redeliver delivers the events from eventID on again, in order, through the
	// endpoint's deliveries. KindInvalid when eventID is past the last event.
	Redeliver(ctx context.Context, id string, eventID uint64) (Webhook, error)
	// SendEvent delivers one event once, now, outside the endpoint's order (a test
	// of the endpoint, or one event it lost), and answers the attempt.
	SendEvent(ctx context.Context, id string, eventID uint64) (WebhookAttempt, error)
	// PublicKey is the whpk_ key v1a signatures verify with.
	PublicKey() string
}

// WebhookStore is what a Store that keeps webhook endpoints has besides Store. An
// endpoint is one record, opaque to the store, replaced whole by each write at a
// revision that fences the writes, as a mandate's: of two members that read one
// revision, exactly one writes the next, which is how one member at a time delivers an
// endpoint. Every write is durable when it returns.
type WebhookStore interface {
	// CreateWebhook stores a new endpoint's record: ErrExists for a taken id.
	CreateWebhook(ctx context.Context, id string, record []byte) error
	// Webhook returns an endpoint's record and revision, or ErrNotFound.
	Webhook(ctx context.Context, id string) (record []byte, rev uint64, err error)
	// Webhooks calls fn for every endpoint, by id.
	Webhooks(ctx context.Context, fn func(id string, record []byte, rev uint64) error) error
	// UpdateWebhook replaces the record of revision rev and returns the new revision:
	// ErrStale, nothing written, when the record is at another revision or gone.
	UpdateWebhook(ctx context.Context, id string, record []byte, rev uint64) (uint64, error)
	// DeleteWebhook removes an endpoint's record: ErrNotFound when none is stored.
	DeleteWebhook(ctx context.Context, id string) error
}

// Error codes of webhooks.
const (
	// CodeWebhookNotFound: no endpoint of that id (404).
	CodeWebhookNotFound = "webhook_not_found"
	// CodeInvalidWebhook: the endpoint's request does not match its schema, or names
	// a URL the service will not call (422).
	CodeInvalidWebhook = "invalid_webhook"
	// CodeWebhookLimit: the server keeps as many endpoints as it may (409).
	CodeWebhookLimit = "webhook_limit"
	// CodeWebhooksUnavailable: the server's store keeps no endpoints (503).
	CodeWebhooksUnavailable = "webhooks_unavailable"
)
