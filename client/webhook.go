package client

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/intentd/intentd"
)

// The calls of webhook endpoints (routes under /webhooks, all of the admin role): an
// endpoint's URL says where the service's outcomes go, so only an admin sets it.

// webhookRequest is the body of POST /webhooks. The optional members are left out
// when unset, so that the server's defaults apply: it refuses a max_in_flight of 0.
type webhookRequest struct {
	URL         string          `json:"url"`
	Types       []intentd.State `json:"types,omitempty"`
	PolicyIDs   []string        `json:"policy_ids,omitempty"`
	MandateIDs  []string        `json:"mandate_ids,omitempty"`
	Asymmetric  bool            `json:"asymmetric,omitempty"`
	MaxInFlight int             `json:"max_in_flight,omitempty"`
}

// CreateWebhook calls POST /webhooks: it registers an endpoint and answers it with its
// whsec_ secret, which no later answer carries, so keep it where the receiver checks
// signatures. Codes of note: invalid_webhook (422) for a URL the server will not call
// or a filter it does not know, webhook_limit (409) past the endpoints it keeps,
// webhooks_unavailable (503) from a server that delivers none.
func (c *Client) CreateWebhook(ctx context.Context, spec intentd.WebhookSpec) (*intentd.Webhook, error) {
	body, err := json.Marshal(webhookRequest{
		URL: spec.URL, Types: spec.Types, PolicyIDs: spec.PolicyIDs, MandateIDs: spec.MandateIDs,
		Asymmetric: spec.Asymmetric, MaxInFlight: spec.MaxInFlight,
	})
	if err != nil {
		return nil, err
	}
	var wh intentd.Webhook
	if err := c.do(ctx, "POST", "/webhooks", "application/json", body, &wh); err != nil {
		return nil, err
	}
	return &wh, nil
}

// WebhookList is the answer of GET /webhooks.
type WebhookList struct {
	// Webhooks are the endpoints, by id, without their secrets.
	Webhooks []intentd.Webhook `json:"webhooks"`
	// PublicKey is the whpk_ key that v1a signatures verify with, as GET /info's
	// webhook_public_key; empty from a server without one.
	PublicKey string `json:"public_key,omitempty"`
}

// Webhooks calls GET /webhooks: every endpoint and where its deliveries stand.
func (c *Client) Webhooks(ctx context.Context) (*WebhookList, error) {
	var list WebhookList
	if err := c.getJSON(ctx, "/webhooks", &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// Webhook calls GET /webhooks/{id}: one endpoint, without its secret. Code
// webhook_not_found (404) for an id the server does not keep.
func (c *Client) Webhook(ctx context.Context, id string) (*intentd.Webhook, error) {
	var wh intentd.Webhook
	if err := c.getJSON(ctx, webhookPath(id, ""), &wh); err != nil {
		return nil, err
	}
	return &wh, nil
}

// DeleteWebhook calls DELETE /webhooks/{id}: the endpoint is removed and its
// deliveries stop.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", webhookPath(id, ""), "", nil, nil)
}

// EnableWebhook calls POST /webhooks/{id}/enable: a disabled endpoint starts again on
// the event it was at, its retry schedule from the start. It answers the endpoint as
// changed.
func (c *Client) EnableWebhook(ctx context.Context, id string) (*intentd.Webhook, error) {
	return c.webhookCall(ctx, id, "/enable", nil)
}

// DisableWebhook calls POST /webhooks/{id}/disable: its deliveries stop, keeping their
// place, until it is enabled again.
func (c *Client) DisableWebhook(ctx context.Context, id string) (*intentd.Webhook, error) {
	return c.webhookCall(ctx, id, "/disable", nil)
}

// RedeliverWebhook calls POST /webhooks/{id}/redeliver: the endpoint delivers the
// events from fromEventID on again, in order. invalid_webhook (422) when fromEventID
// is 0 or past the last event.
func (c *Client) RedeliverWebhook(ctx context.Context, id string, fromEventID uint64) (*intentd.Webhook, error) {
	body, err := json.Marshal(map[string]uint64{"from_event_id": fromEventID})
	if err != nil {
		return nil, err
	}
	return c.webhookCall(ctx, id, "/redeliver", body)
}

// SendWebhookEvent calls POST /webhooks/{id}/send: event eventID is delivered once,
// now, outside the endpoint's order, and the attempt is answered. A receiver that
// failed is no error here: the attempt says how it failed (Error, and Status when the
// receiver answered). invalid_webhook (422) for an event the log does not hold.
func (c *Client) SendWebhookEvent(ctx context.Context, id string, eventID uint64) (*intentd.WebhookAttempt, error) {
	body, err := json.Marshal(map[string]uint64{"event_id": eventID})
	if err != nil {
		return nil, err
	}
	var a intentd.WebhookAttempt
	if err := c.do(ctx, "POST", webhookPath(id, "/send"), "application/json", body, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// webhookCall is a POST to one of an endpoint's routes that answers the endpoint.
func (c *Client) webhookCall(ctx context.Context, id, route string, body []byte) (*intentd.Webhook, error) {
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	var wh intentd.Webhook
	if err := c.do(ctx, "POST", webhookPath(id, route), contentType, body, &wh); err != nil {
		return nil, err
	}
	return &wh, nil
}

func webhookPath(id, route string) string {
	return "/webhooks/" + url.PathEscape(id) + route
}
