package webhook

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/intentd/intentd"
)

// record is an endpoint as the store keeps it: the endpoint with its secret, the epoch
// that admin changes of its position or status advance, and the lease of the member
// delivering it.
type record struct {
	intentd.Webhook
	// Epoch advances with each change an admin makes to where deliveries stand
	// (enable, disable, redeliver): a deliverer whose write is refused finds it
	// changed and starts over from the record, rather than write its own state back.
	Epoch uint64 `json:"epoch"`
	// RedeliverEpoch is the epoch of the last redeliver, the one admin change that
	// moves the position: a deliverer meeting a newer epoch keeps the position it
	// reached unless a redeliver came since.
	RedeliverEpoch uint64 `json:"redeliver_epoch,omitempty"`
	Lease          *lease `json:"lease,omitempty"`
}

// lease names the member delivering an endpoint, until a time it renews.
type lease struct {
	Owner string    `json:"owner"`
	Until time.Time `json:"until"`
}

// maxAttempts is how many attempts an endpoint's record keeps, newest first.
const maxAttempts = 20

func decodeRecord(id string, b []byte) (record, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, fmt.Errorf("webhook record %s is corrupt: %w", id, err)
	}
	if r.ID != id {
		return record{}, fmt.Errorf("webhook record %s is corrupt: it names %q", id, r.ID)
	}
	return r, nil
}

func (r record) encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("webhook record %s: %v", r.ID, err)) // plain types only
	}
	return b
}

// public is the endpoint as the routes show it: without its secret, the lease's
// member named as its deliverer while the lease holds.
func (r record) public(now time.Time) intentd.Webhook {
	w := r.Webhook
	w.Secret = ""
	w.Deliverer = ""
	if r.Lease != nil && now.Before(r.Lease.Until) {
		w.Deliverer = r.Lease.Owner
	}
	if w.Attempts == nil {
		w.Attempts = []intentd.WebhookAttempt{}
	}
	return w
}

// held reports whether another member than me holds the lease at now.
func (r record) heldByOther(me string, now time.Time) bool {
	return r.Lease != nil && r.Lease.Owner != me && now.Before(r.Lease.Until)
}

// addAttempt puts a at the head of the record's attempts, dropping the oldest past
// maxAttempts.
func (r *record) addAttempt(a intentd.WebhookAttempt) {
	r.Attempts = append([]intentd.WebhookAttempt{a}, r.Attempts...)
	if len(r.Attempts) > maxAttempts {
		r.Attempts = r.Attempts[:maxAttempts]
	}
}
