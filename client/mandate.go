package client

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

// CreateMandate calls POST /mandates with the mandate's JSON and its authorship, which
// signs the mandate's JCS form as an intent's does. The mandate's bytes are sent as
// given.
func (c *Client) CreateMandate(ctx context.Context, mandate json.RawMessage, auth crypto.Authorship) error {
	body, err := authoredJSON("mandate", mandate, auth)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/mandates", "application/json", body, nil)
}

// Mandate calls GET /mandates/{id}: the mandate as stored, in its JCS form, with its
// authorship.
func (c *Client) Mandate(ctx context.Context, id string) (*intentd.AuthoredMandate, error) {
	var am intentd.AuthoredMandate
	if err := c.getJSON(ctx, "/mandates/"+url.PathEscape(id), &am); err != nil {
		return nil, err
	}
	return &am, nil
}

// MandateStatus calls GET /mandates/{id}/status: its state, its totals and the
// purchases it took.
func (c *Client) MandateStatus(ctx context.Context, id string) (*intentd.MandateStatus, error) {
	var st intentd.MandateStatus
	if err := c.getJSON(ctx, "/mandates/"+url.PathEscape(id)+"/status", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Purchase calls POST /mandates/{id}/purchases: the intent intentID is created under
// the mandate and solution proposed for it, signed with the client's agent key when it
// has one. The outcome follows on the intent's status. Sent again with the same
// intentID after an answer that was lost, it is answered as the first time.
func (c *Client) Purchase(ctx context.Context, mandateID, intentID, solution string) error {
	body, err := json.Marshal(intentd.Purchase{IntentID: intentID, Solution: solution})
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/mandates/"+url.PathEscape(mandateID)+"/purchases", "application/json", body, nil, c.signAgent)
}

// RevocationJSON is the revocation object of a mandate, the bytes its author signs:
// {"mandate_id": id}.
func RevocationJSON(mandateID string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{"mandate_id": mandateID})
	return raw
}

// RevokeMandate calls POST /mandates/{id}/revocation with the revocation (from
// RevocationJSON) and its authorship, which must be the mandate author's.
func (c *Client) RevokeMandate(ctx context.Context, mandateID string, revocation json.RawMessage, auth crypto.Authorship) error {
	body, err := authoredJSON("revocation", revocation, auth)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/mandates/"+url.PathEscape(mandateID)+"/revocation", "application/json", body, nil)
}
