package client_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/proof"
)

const clientTestPolicy = `name tshirt
parameters {
  size: string
  max_price_cents: int
}
evidence {
  size: string
  price_cents: int
}
requires {
  evidence.size == parameters.size;
  evidence.price_cents <= parameters.max_price_cents;
}
`

// clientFixture is a client of the real handler over an in-memory engine that signs
// receipts, with a policy stored.
type clientFixture struct {
	c      *client.Client
	key    *crypto.SigningKey
	policy string
	author ed25519.PrivateKey
}

// fixtureSetup adds to a fixture's server options what a test needs (its webhooks),
// given the engine and the store they are over.
type fixtureSetup func(t *testing.T, e *actors.Engine, store *persistence.Store, o *intenthttp.Options)

func newClientFixture(t *testing.T, setups ...fixtureSetup) *clientFixture {
	t.Helper()
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Prover = store, evidence.DefaultCatalog(), actors.ReceiptProver{Key: key}
	e, err := actors.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-e.Ready()
	opts := intenthttp.Options{Info: intentd.Info{PublicKey: crypto.EncodeBase58(key.PublicKey()), KeyID: key.ID()}}
	t.Cleanup(func() { e.Close(); store.Close() })
	for _, setup := range setups {
		setup(t, e, store, &opts)
	}
	ts := httptest.NewServer(intenthttp.NewServer(e, opts))
	t.Cleanup(ts.Close)
	c, err := client.NewClient(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	f := &clientFixture{c: c, key: key}
	if f.policy, err = c.PutPolicy(t.Context(), clientTestPolicy); err != nil {
		t.Fatal(err)
	}
	_, f.author, _ = ed25519.GenerateKey(nil)
	return f
}

// submit stores a signed intent of size M with the given budget and returns its id.
func (f *clientFixture) submit(t *testing.T, budget int) string {
	t.Helper()
	id := uuid.NewString()
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":%d}}}}`, id, f.policy, budget)
	auth, err := crypto.SignEd25519(f.author, intent)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.SubmitIntent(t.Context(), intent, auth); err != nil {
		t.Fatalf("SubmitIntent: %v", err)
	}
	return id
}

func (f *clientFixture) decided(t *testing.T, id string) *client.IntentStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := f.c.Status(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State.Terminal() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("intent %s is still %s", id, st.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const navyM = "https://shop.example/products/tshirt-navy-m"

// TestClientCalls runs every call against the real handler and checks what it returns.
func TestClientCalls(t *testing.T) {
	f := newClientFixture(t)
	ctx := t.Context()

	info, err := f.c.Info(ctx)
	if err != nil || info.APIVersion != intenthttp.APIVersion || info.KeyID != f.key.ID() {
		t.Fatalf("Info = %+v, %v", info, err)
	}
	pub, err := f.c.PublicKey(ctx)
	if err != nil || !ed25519.PublicKey(pub).Equal(f.key.PublicKey()) {
		t.Fatalf("PublicKey = %x, %v; want the server's", pub, err)
	}
	pretty, err := f.c.Policy(ctx, f.policy)
	if err != nil || !strings.Contains(pretty, "name tshirt") {
		t.Fatalf("Policy = %q, %v", pretty, err)
	}

	id := f.submit(t, 2500)
	ai, err := f.c.Intent(ctx, id)
	if err != nil || ai.Authorship.Unsigned() || !strings.Contains(string(ai.Intent), id) {
		t.Fatalf("Intent = %+v, %v", ai, err)
	}
	if err := crypto.Verify(ai.Intent, ai.Authorship, crypto.VerifyOptions{}); err != nil {
		t.Fatalf("the intent read back does not verify: %v", err)
	}
	if st, err := f.c.Status(ctx, id); err != nil || st.State != intentd.StateOpen {
		t.Fatalf("Status = %+v, %v; want open", st, err)
	}
	if err := f.c.Propose(ctx, id, navyM); err != nil {
		t.Fatal(err)
	}
	st := f.decided(t, id)
	if st.State != intentd.StateSuccess || st.IntentID != id || st.Proposal == nil || st.Proposal.Solution != navyM || len(st.Evidence) == 0 {
		t.Fatalf("Status = %+v, want success with proposal and evidence", st)
	}
	bundle, err := f.c.Proof(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := proof.Verify(bundle, pub); err != nil || rep.IntentID != id {
		t.Fatalf("VerifyProof of the client's bundle: %+v, %v", rep, err)
	}

	// A policy no intent names any more can go; afterwards it is not found.
	other, err := f.c.PutPolicy(ctx, "name other\nrequires { true; }\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.DeletePolicy(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Policy(ctx, other); intentd.ErrorCode(err) != intentd.CodePolicyNotFound {
		t.Fatalf("Policy after delete: %v, want policy_not_found", err)
	}
}

// TestClientErrors checks that each error answer comes back with the server's status,
// code and message, and converts to the intentd.Error of the kind the status stands for.
func TestClientErrors(t *testing.T) {
	f := newClientFixture(t)
	open := f.submit(t, 2500)
	proposed := f.submit(t, 2500)
	if err := f.c.Propose(t.Context(), proposed, navyM); err != nil {
		t.Fatal(err)
	}
	unknown := uuid.NewString()
	intentJSON := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":1}}}}`, open, f.policy)
	signed, _ := crypto.SignEd25519(f.author, intentJSON)

	tests := []struct {
		name   string
		call   func(ctx context.Context) error
		status int
		code   string
		kind   intentd.Kind
	}{
		{"status of an unknown intent", func(ctx context.Context) error { _, err := f.c.Status(ctx, unknown); return err },
			404, intentd.CodeIntentNotFound, intentd.KindNotFound},
		{"intent that is not there", func(ctx context.Context) error { _, err := f.c.Intent(ctx, unknown); return err },
			404, intentd.CodeIntentNotFound, intentd.KindNotFound},
		{"a second intent of one id", func(ctx context.Context) error { return f.c.SubmitIntent(ctx, intentJSON, signed) },
			409, intentd.CodeIntentExists, intentd.KindConflict},
		{"unsigned where not permitted", func(ctx context.Context) error {
			return f.c.SubmitIntent(ctx, fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":1}}}}`, uuid.NewString(), f.policy), crypto.Authorship{})
		}, 400, intentd.CodeUnsignedNotPermitted, intentd.KindInvalid},
		{"intent that is not JSON", func(ctx context.Context) error { return f.c.SubmitIntent(ctx, []byte("{"), signed) },
			0, "", 0},
		{"a second proposal", func(ctx context.Context) error { return f.c.Propose(ctx, proposed, navyM) },
			409, intentd.CodeProposalExists, intentd.KindConflict},
		{"an empty solution", func(ctx context.Context) error { return f.c.Propose(ctx, open, "") },
			422, intentd.CodeInvalidProposal, intentd.KindUnprocessable},
		{"proof of an open intent", func(ctx context.Context) error { _, err := f.c.Proof(ctx, open); return err },
			404, intentd.CodeProofNotReady, intentd.KindNotFound},
		{"a policy that does not compile", func(ctx context.Context) error {
			_, err := f.c.PutPolicy(ctx, "name x\nrequires { 1 + ; }")
			return err
		},
			400, intentd.CodePolicyInvalid, intentd.KindInvalid},
		{"deleting a policy in use", func(ctx context.Context) error { return f.c.DeletePolicy(ctx, f.policy) },
			409, intentd.CodePolicyInUse, intentd.KindConflict},
		{"a policy that is not there", func(ctx context.Context) error {
			_, err := f.c.Policy(ctx, "11111111111111111111111111111111")
			return err
		}, 404, intentd.CodePolicyNotFound, intentd.KindNotFound},
		{"a stream filter that is not a UUID", func(ctx context.Context) error {
			_, err := f.c.Events(ctx, client.StreamOptions{IntentIDs: []string{"nope"}})
			return err
		}, 400, intentd.CodeInvalidFilter, intentd.KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(t.Context())
			if err == nil {
				t.Fatal("no error")
			}
			var ae *client.APIError
			if tt.status == 0 {
				if errors.As(err, &ae) {
					t.Fatalf("a local failure came back as a server answer: %v", err)
				}
				return
			}
			if !errors.As(err, &ae) || ae.Status != tt.status || ae.Code != tt.code || ae.Message == "" {
				t.Fatalf("err = %#v, want an *APIError %d %s with a message", err, tt.status, tt.code)
			}
			var ce *intentd.Error
			if !errors.As(err, &ce) || ce.Kind != tt.kind || ce.Code != tt.code || ce.Message != ae.Message {
				t.Fatalf("as *intentd.Error: %+v, want kind %s code %s", ce, tt.kind, tt.code)
			}
			if !strings.Contains(err.Error(), tt.code) {
				t.Fatalf("Error() = %q does not name the code", err)
			}
		})
	}
}

// TestEventStreamLive follows the real handler: an event made after the stream opened
// arrives, decoded.
func TestEventStreamLive(t *testing.T) {
	f := newClientFixture(t)
	ok, bad := f.submit(t, 2500), f.submit(t, 100)
	s, err := f.c.Events(t.Context(), client.StreamOptions{IntentIDs: []string{bad}, Types: []intentd.State{intentd.StateFailure}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{ok, bad} {
		if err := f.c.Propose(t.Context(), id, navyM); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ev.Outcome()
	if err != nil || out.IntentID != bad || out.State != intentd.StateFailure || out.FailureKind != intentd.FailureConstraints ||
		len(out.Failures) != 1 || out.Proposal == nil || out.Proposal.Solution != navyM {
		t.Fatalf("event %d %s: %+v, %v; want the failure of %s", ev.ID, ev.Type, out, err, bad)
	}
	if _, err := (client.Event{ID: 1, Type: "success", Data: []byte(`{"type":"failure"}`)}).Outcome(); err == nil {
		t.Fatal("an event whose data contradicts its type decodes")
	}
}

// TestKindOfEveryStatus writes an error of every kind with the server's own writer and
// reads it back with the client: the client's table of statuses must stay the inverse
// of the server's, which it cannot import.
func TestKindOfEveryStatus(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for k := intentd.Kind(0); !strings.HasPrefix(k.String(), "kind("); k++ {
		t.Run(k.String(), func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				intenthttp.Error(w, r, log, intentd.Errorf(k, "some_code", "some message"))
			}))
			defer ts.Close()
			c, err := client.NewClient(ts.URL)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Info(t.Context())
			var ae *client.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want an *APIError", err)
			}
			if ae.Kind() != k || intentd.ErrorKind(err) != k {
				t.Fatalf("status %d reads back as kind %s (ErrorKind %s), want %s", ae.Status, ae.Kind(), intentd.ErrorKind(err), k)
			}
		})
	}
}

// TestClientTimeline reads the times of intents from a real server listening on a port
// of its own: an open intent's deadline is the engine's TTL after its creation, a
// decided one has its proposal's and its end's times, and an unknown one is
// intent_not_found.
func TestClientTimeline(t *testing.T) {
	f := newClientFixture(t)
	ctx := t.Context()
	before := time.Now()
	open := f.submit(t, 2500)
	decided := f.submit(t, 2500)
	if err := f.c.Propose(ctx, decided, navyM); err != nil {
		t.Fatal(err)
	}
	f.decided(t, decided)
	after := time.Now()

	tests := []struct {
		name    string
		id      string
		code    string
		decided bool
	}{
		{"open", open, "", false},
		{"decided", decided, "", true},
		{"unknown", uuid.NewString(), intentd.CodeIntentNotFound, false},
		{"not a uuid", "not-an-id", intentd.CodeIntentNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := f.c.Timeline(ctx, tt.id)
			if tt.code != "" {
				var ae *client.APIError
				if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != tt.code || intentd.ErrorKind(err) != intentd.KindNotFound {
					t.Fatalf("Timeline(%s) = %+v, %v; want a 404 %s", tt.id, tl, err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tl.CreatedAt.Before(before.Add(-time.Second)) || tl.CreatedAt.After(after.Add(time.Second)) {
				t.Errorf("created_at %s, want between %s and %s", tl.CreatedAt, before, after)
			}
			if got := tl.ExpiresAt.Sub(tl.CreatedAt); got != actors.DefaultConfig().IntentTTL {
				t.Errorf("the deadline is %s after creation, want the TTL %s", got, actors.DefaultConfig().IntentTTL)
			}
			if done := !tl.ProposedAt.IsZero() && !tl.FinishedAt.IsZero(); done != tt.decided {
				t.Errorf("proposed_at %s, finished_at %s; decided %v", tl.ProposedAt, tl.FinishedAt, tt.decided)
			}
			if tt.decided && (tl.ProposedAt.Before(tl.CreatedAt) || tl.FinishedAt.Before(tl.ProposedAt)) {
				t.Errorf("timeline out of order: %+v", tl)
			}
		})
	}
}

// TestClientRequirements reads the requirements of an intent, open and decided (they
// depend on its parameters, not its state), and the 404s of an unknown intent and of
// one whose policy was deleted after its outcome.
func TestClientRequirements(t *testing.T) {
	f := newClientFixture(t)
	ctx := t.Context()
	open := f.submit(t, 2500)
	decided := f.submit(t, 900)
	if err := f.c.Propose(ctx, decided, navyM); err != nil {
		t.Fatal(err)
	}
	f.decided(t, decided)

	tests := []struct {
		name, id, code, budget string
	}{
		{"open", open, "", "evidence.price_cents <= 2500"},
		{"decided", decided, "", "evidence.price_cents <= 900"},
		{"unknown", uuid.NewString(), intentd.CodeIntentNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := f.c.Requirements(ctx, tt.id)
			if tt.code != "" {
				if intentd.ErrorCode(err) != tt.code || intentd.ErrorKind(err) != intentd.KindNotFound {
					t.Fatalf("Requirements(%s) = %+v, %v; want a 404 %s", tt.id, req, err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.IntentID != tt.id || req.PolicyID != f.policy || len(req.Constraints) != 2 || len(req.Schema) == 0 {
				t.Fatalf("Requirements = %+v", req)
			}
			for i, want := range []string{`evidence.size == "M"`, tt.budget} {
				if c := req.Constraints[i]; c.State != policy.ResidualOpen || c.Residual != want || !c.InSchema {
					t.Errorf("constraint %d = %+v, want open, %s, in the schema", i, c, want)
				}
			}
		})
	}
}
