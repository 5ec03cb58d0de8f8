package client_test

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/client"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/webhook"
)

// withWebhooks gives the fixture's server the real webhook deliveries over its store,
// delivering to loopback addresses, running until the test ends.
func withWebhooks(t *testing.T, e *actors.Engine, store *persistence.Store, o *intenthttp.Options) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := webhook.New(webhook.Options{Store: store, Source: e, Log: store, Key: priv, Exclusive: true, AllowPrivate: true,
		Schedule: []time.Duration{0, 50 * time.Millisecond, 50 * time.Millisecond}, Timeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	o.Webhooks = svc
	o.Info.WebhookPublicKey = svc.PublicKey()
}

// receiver is a webhook endpoint that counts the deliveries of each event id it takes
// and answers status (200 unless set).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	taken  map[string]int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{status: http.StatusOK, taken: map[string]int{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		status := rc.status
		if status < 300 {
			rc.taken[r.Header.Get("webhook-id")]++
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) answer(status int) {
	rc.mu.Lock()
	rc.status = status
	rc.mu.Unlock()
}

// deliveries is how many times the receiver took some event, whatever its id.
func (rc *receiver) deliveries() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, c := range rc.taken {
		n += c
	}
	return n
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s in vain for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClientWebhooks runs every webhook call against the real handler and deliveries:
// an endpoint made, listed and read without its secret, an event delivered by itself
// and sent by hand, the endpoint disabled, enabled, moved back and deleted.
func TestClientWebhooks(t *testing.T) {
	f := newClientFixture(t, withWebhooks)
	ctx := t.Context()
	rc := newReceiver(t)

	wh, err := f.c.CreateWebhook(ctx, intentd.WebhookSpec{URL: rc.URL, Types: []intentd.State{intentd.StateSuccess}, Asymmetric: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(wh.Secret, "whsec_") || wh.Status != intentd.WebhookActive || wh.MaxInFlight != 1 || !wh.Asymmetric ||
		len(wh.Types) != 1 || wh.Types[0] != intentd.StateSuccess || wh.URL != rc.URL {
		t.Fatalf("CreateWebhook = %+v, want the endpoint asked for, active, with a whsec_ secret", wh)
	}
	list, err := f.c.Webhooks(ctx)
	if err != nil || len(list.Webhooks) != 1 || list.Webhooks[0].ID != wh.ID || list.Webhooks[0].Secret != "" || !strings.HasPrefix(list.PublicKey, "whpk_") {
		t.Fatalf("Webhooks = %+v, %v; want the one endpoint, no secret, and the whpk_ key", list, err)
	}

	id := f.submit(t, 2500)
	if err := f.c.Propose(ctx, id, navyM); err != nil {
		t.Fatal(err)
	}
	f.decided(t, id)
	waitFor(t, "the success delivered", func() bool {
		got, err := f.c.Webhook(ctx, wh.ID)
		return err == nil && got.Delivered == 1 && len(got.Attempts) == 1 && rc.deliveries() == 1
	})
	got, err := f.c.Webhook(ctx, wh.ID)
	if err != nil || got.Secret != "" || got.Attempts[0].EventID != 1 || got.Attempts[0].Status != http.StatusOK {
		t.Fatalf("Webhook = %+v, %v; want event 1 taken, no secret", got, err)
	}

	for _, tc := range []struct {
		name   string
		answer int
		ok     bool
	}{{"taken", http.StatusOK, true}, {"refused", http.StatusServiceUnavailable, false}} {
		t.Run("send "+tc.name, func(t *testing.T) {
			rc.answer(tc.answer)
			a, err := f.c.SendWebhookEvent(ctx, wh.ID, 1)
			if err != nil {
				t.Fatalf("SendWebhookEvent: %v; a receiver's answer is no error of the call", err)
			}
			if a.EventID != 1 || a.Status != tc.answer || (a.Error == "") != tc.ok || a.At.IsZero() {
				t.Fatalf("SendWebhookEvent = %+v, want event 1 answered %d", a, tc.answer)
			}
		})
	}
	rc.answer(http.StatusOK)

	if got, err := f.c.DisableWebhook(ctx, wh.ID); err != nil || got.Status != intentd.WebhookDisabled || got.DisabledReason == "" {
		t.Fatalf("DisableWebhook = %+v, %v; want disabled, with the reason", got, err)
	}
	if got, err := f.c.EnableWebhook(ctx, wh.ID); err != nil || got.Status != intentd.WebhookActive || got.DisabledReason != "" {
		t.Fatalf("EnableWebhook = %+v, %v; want active", got, err)
	}
	before := rc.deliveries()
	if got, err := f.c.RedeliverWebhook(ctx, wh.ID, 1); err != nil || got.Delivered != 0 {
		t.Fatalf("RedeliverWebhook = %+v, %v; want delivered through 0", got, err)
	}
	waitFor(t, "event 1 delivered again", func() bool { return rc.deliveries() > before })

	if err := f.c.DeleteWebhook(ctx, wh.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Webhook(ctx, wh.ID); intentd.ErrorCode(err) != intentd.CodeWebhookNotFound {
		t.Fatalf("Webhook after the delete: %v, want %s", err, intentd.CodeWebhookNotFound)
	}
}

// TestClientWebhookRefusals checks that each refusal of the webhook routes comes back
// as an *APIError with the server's status and code.
func TestClientWebhookRefusals(t *testing.T) {
	f := newClientFixture(t, withWebhooks)
	ctx := t.Context()
	rc := newReceiver(t)
	wh, err := f.c.CreateWebhook(ctx, intentd.WebhookSpec{URL: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	const missing = "0b6f8f0e-8f59-4b5e-9a51-1b2b8a3c4d5e"
	webhookCall := func(call func(ctx context.Context, id string) (*intentd.Webhook, error), id string) func() error {
		return func() error { _, err := call(ctx, id); return err }
	}
	tests := []struct {
		name   string
		call   func() error
		status int
		code   string
		msg    string // in the message
	}{
		{"create ftp", func() error {
			_, err := f.c.CreateWebhook(ctx, intentd.WebhookSpec{URL: "ftp://example.com/hook"})
			return err
		}, http.StatusUnprocessableEntity, intentd.CodeInvalidWebhook, "url"},
		{"create unknown type", func() error {
			_, err := f.c.CreateWebhook(ctx, intentd.WebhookSpec{URL: rc.URL, Types: []intentd.State{intentd.StateOpen}})
			return err
		}, http.StatusUnprocessableEntity, intentd.CodeInvalidWebhook, "types"},
		{"create max in flight", func() error {
			_, err := f.c.CreateWebhook(ctx, intentd.WebhookSpec{URL: rc.URL, MaxInFlight: 33})
			return err
		}, http.StatusUnprocessableEntity, intentd.CodeInvalidWebhook, "max_in_flight"},
		{"get missing", webhookCall(f.c.Webhook, missing), http.StatusNotFound, intentd.CodeWebhookNotFound, missing},
		{"enable missing", webhookCall(f.c.EnableWebhook, missing), http.StatusNotFound, intentd.CodeWebhookNotFound, missing},
		{"disable missing", webhookCall(f.c.DisableWebhook, missing), http.StatusNotFound, intentd.CodeWebhookNotFound, missing},
		{"delete missing", func() error { return f.c.DeleteWebhook(ctx, missing) }, http.StatusNotFound, intentd.CodeWebhookNotFound, missing},
		{"redeliver from 0", func() error {
			_, err := f.c.RedeliverWebhook(ctx, wh.ID, 0)
			return err
		}, http.StatusUnprocessableEntity, intentd.CodeInvalidWebhook, "from_event_id"},
		{"redeliver past the log", func() error {
			_, err := f.c.RedeliverWebhook(ctx, wh.ID, 99)
			return err
		}, http.StatusUnprocessableEntity, intentd.CodeInvalidWebhook, "past the last event"},
		{"send an event not in the log", func() error {
			_, err := f.c.SendWebhookEvent(ctx, wh.ID, 99)
			return err
		}, http.StatusUnprocessableEntity, intentd.CodeInvalidWebhook, "no event 99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkAPIError(t, tt.call(), tt.status, tt.code, tt.msg)
		})
	}

	t.Run("server without webhooks", func(t *testing.T) {
		plain := newClientFixture(t)
		_, err := plain.c.Webhooks(ctx)
		checkAPIError(t, err, http.StatusServiceUnavailable, intentd.CodeWebhooksUnavailable, "no webhooks")
	})
}

func checkAPIError(t *testing.T, err error, status int, code, msg string) {
	t.Helper()
	ae, ok := err.(*client.APIError)
	if !ok {
		t.Fatalf("error %v (%T), want an *client.APIError", err, err)
	}
	if ae.Status != status || ae.Code != code || !strings.Contains(ae.Message, msg) {
		t.Fatalf("error %v, want %d %s naming %q", ae, status, code, msg)
	}
}
