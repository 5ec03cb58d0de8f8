package mcpserver_test

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/mcpserver"
)

// delegated stores examples/delegated.policy and submits an intent of it for the demo
// catalog's navy t-shirt in M that delegates to the agent of key; it returns the
// intent's id.
func (f *fixture) delegated(t *testing.T, key ed25519.PublicKey) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "examples", "delegated.policy"))
	if err != nil {
		t.Fatal(err)
	}
	policyID, err := f.api.PutPolicy(t.Context(), string(src))
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","blue"]}},`+
		`"max_price_cents":{"Int":3000},"agents":{"Set":{"String":[%q]}}}}}`, id, policyID, crypto.EncodeBase58(key))
	auth, err := crypto.SignEd25519(f.author, intent)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.api.SubmitIntent(t.Context(), intent, auth); err != nil {
		t.Fatalf("SubmitIntent: %v", err)
	}
	return id
}

// asAgent connects to the tools over the fixture's HTTP API with a client that signs
// its proposals with key, as intentctl mcp --agent-key serves them.
func (f *fixture) asAgent(key ed25519.PrivateKey) func(*testing.T) *mcp.ClientSession {
	return func(t *testing.T) *mcp.ClientSession {
		t.Helper()
		api := *f.api
		api.AgentKey, api.AgentTag = key, "agent-payer-auth"
		srv := mcpserver.New(mcpserver.Remote(&api), mcpserver.Options{})
		return connect(t, srv, mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil))
	}
}

// TestDelegatedProposals has each way of serving the tools propose for an intent that
// delegates to one agent. Those that hold no agent key (the engine's, intentd's /mcp,
// and the remote tools without a key) are refused with agent_signature_required and a
// message that tells how an agent signs, and may still preview; the remote tools with
// another agent's key are refused as the server refuses it. The intent stays open
// after each; then the remote tools with the agent's key propose, and the outcome is
// the agent's.
func TestDelegatedProposals(t *testing.T) {
	f := newFixture(t, nil)
	_, agent, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	agentPub := agent.Public().(ed25519.PublicKey)
	id := f.delegated(t, agentPub)
	args := map[string]any{"intent_id": id, "solution": passing}

	for _, way := range []struct {
		name    string
		connect func(*testing.T) *mcp.ClientSession
		code    string
		says    []string
	}{
		{"in-process", f.inProcess, intentd.CodeAgentSignatureRequired, []string{"intent " + id + " delegates", "these tools hold no agent key", "`intentctl mcp --agent-key FILE`", "RFC 9421"}},
		{"remote without a key", f.remote, intentd.CodeAgentSignatureRequired, []string{"`intentctl mcp --agent-key FILE`"}},
		{"http", func(t *testing.T) *mcp.ClientSession { return f.overHTTP(t, agentToken) }, intentd.CodeAgentSignatureRequired, []string{"`intentctl mcp --agent-key FILE`"}},
		{"remote with another agent's key", f.asAgent(other), intentd.CodeAgentNotDelegated, []string{"does not delegate to agent " + crypto.EncodeBase58(other.Public().(ed25519.PublicKey))}},
	} {
		t.Run(way.name, func(t *testing.T) {
			cs := way.connect(t)
			// A preview is not signed: an agent without its key may still compare
			// candidates.
			if out := mustCall(t, cs, "preview_solution", args); out["status"] != "success" {
				t.Fatalf("preview_solution = %v", out)
			}
			te := wantRefusal(t, cs, "propose_solution", args, way.code)
			for _, s := range way.says {
				if !strings.Contains(te.Message, s) {
					t.Errorf("the refusal %q does not say %q", te.Message, s)
				}
			}
			if st, err := f.api.Status(t.Context(), id); err != nil || st.State != intentd.StateOpen {
				t.Fatalf("after the refusal the intent is %+v (%v), want open", st, err)
			}
		})
	}

	cs := f.asAgent(agent)(t)
	if out := mustCall(t, cs, "propose_solution", args); out["status"] != "processing" {
		t.Fatalf("propose_solution = %v", out)
	}
	if out := mustCall(t, cs, "await_outcome", map[string]any{"intent_id": id, "timeout_seconds": 10}); out["status"] != "success" || out["decided"] != true {
		t.Fatalf("await_outcome = %v", out)
	}
	if out := mustCall(t, cs, "get_proof", map[string]any{"intent_id": id}); out["verified"] != true {
		t.Fatalf("get_proof = %v", out)
	}
	st, err := f.api.Status(t.Context(), id)
	if err != nil || st.Agent == nil || st.Agent.Key != crypto.EncodeBase58(agentPub) || st.Agent.Tag != "agent-payer-auth" {
		t.Fatalf("status %+v (%v): want the agent's", st, err)
	}
}
