package client_test

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/proof"
)

// delegate stores examples/delegated.policy, whose intents name in their agents
// parameter the agents that may propose, and submits an intent of it for the demo
// catalog's navy t-shirt in M that delegates to the agents of keys; it returns the
// intent's id.
func (f *clientFixture) delegate(t *testing.T, keys ...ed25519.PublicKey) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "examples", "delegated.policy"))
	if err != nil {
		t.Fatal(err)
	}
	policyID, err := f.c.PutPolicy(t.Context(), string(src))
	if err != nil {
		t.Fatal(err)
	}
	agents := []string{}
	for _, k := range keys {
		agents = append(agents, crypto.EncodeBase58(k))
	}
	list, _ := json.Marshal(agents)
	id := uuid.NewString()
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000},"agents":{"Set":{"String":%s}}}}}`,
		id, policyID, list)
	auth, err := crypto.SignEd25519(f.author, intent)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.SubmitIntent(t.Context(), intent, auth); err != nil {
		t.Fatalf("SubmitIntent: %v", err)
	}
	return id
}

// as is a client of the fixture's server that signs its proposals with key (none when
// nil), tag and window.
func (f *clientFixture) as(key ed25519.PrivateKey, tag string, window time.Duration) *client.Client {
	c := *f.c
	c.AgentKey, c.AgentTag, c.AgentWindow = key, tag, window
	return &c
}

// TestClientAgent proposes for an intent that delegates to one agent with clients that
// sign in each way the server refuses, each refusal an *APIError of the code
// docs/agents.md gives, that intentd.ErrorCode reads, after which the intent is still
// open; then the delegated agent's client proposes, and the status, the outcome event
// and the proof name it.
func TestClientAgent(t *testing.T) {
	f := newClientFixture(t)
	ctx := t.Context()
	_, agent, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	agentPub := crypto.EncodeBase58(agent.Public().(ed25519.PublicKey))
	id := f.delegate(t, agent.Public().(ed25519.PublicKey))

	for _, tt := range []struct {
		name   string
		c      *client.Client
		status int
		code   string
		says   string
	}{
		{"no agent key", f.c, 401, intentd.CodeAgentSignatureRequired, "sign the proposal"},
		{"an agent the intent does not list", f.as(other, "", 0), 403, intentd.CodeAgentNotDelegated, "does not delegate to agent"},
		// The server takes a window of 8 minutes at most: the field is the caller's,
		// and the client does not cut it.
		{"a window past the server's", f.as(agent, "", 9*time.Minute), 401, intentd.CodeAgentSignatureInvalid, "480"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Propose(ctx, id, navyM)
			var ae *client.APIError
			if !errors.As(err, &ae) || ae.Status != tt.status || ae.Code != tt.code || !strings.Contains(ae.Message, tt.says) {
				t.Fatalf("Propose: %v, want an *APIError %d %s saying %q", err, tt.status, tt.code, tt.says)
			}
			if got := intentd.ErrorCode(err); got != tt.code {
				t.Errorf("intentd.ErrorCode = %q, want %q", got, tt.code)
			}
			if st, err := f.c.Status(ctx, id); err != nil || st.State != intentd.StateOpen {
				t.Fatalf("after the refusal: %+v, %v; want the intent open", st, err)
			}
		})
	}

	events, err := f.c.Events(ctx, client.StreamOptions{IntentIDs: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	if err := f.as(agent, "agent-payer-auth", 0).Propose(ctx, id, navyM); err != nil {
		t.Fatalf("the delegated agent's proposal: %v", err)
	}
	st := f.decided(t, id)
	want := intentd.Agent{Key: agentPub, Tag: "agent-payer-auth"}
	if st.State != intentd.StateSuccess || st.Agent == nil || *st.Agent != want {
		t.Fatalf("Status = %+v (agent %+v), want success by %+v", st, st.Agent, want)
	}
	ev, err := events.Next()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ev.Outcome(); err != nil || out.Agent == nil || *out.Agent != want {
		t.Fatalf("the outcome event %s: %+v, %v; want the agent %+v", ev.Data, out, err, want)
	}
	bundle, err := f.c.Proof(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := proof.Verify(bundle, f.key.PublicKey())
	if err != nil || rep.Agent == nil || rep.Agent.Key != agentPub || !rep.Agent.Delegated {
		t.Fatalf("proof.Verify: %+v, %v; want the delegated agent %s", rep, err, agentPub)
	}

	// An intent that delegates to nobody takes an unsigned proposal, whose status
	// names no agent.
	plain := f.submit(t, 2500)
	if err := f.c.Propose(ctx, plain, navyM); err != nil {
		t.Fatal(err)
	}
	if st := f.decided(t, plain); st.Agent != nil {
		t.Fatalf("an unsigned proposal's status names the agent %+v", st.Agent)
	}
}
