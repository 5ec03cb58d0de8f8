package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/httpsig"
	"github.com/intentd/intentd/proof"
)

// delegatedPolicy is examples/delegated.policy: the demo policy with an agents part.
func delegatedPolicy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "delegated.policy"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mandatePolicy is docs/examples/mandate.policy: t-shirts for the demo catalog under a
// mandate, with an amount (price and shipping) and a week's period, delegated to agents.
func mandatePolicy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "mandate.policy"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// delegatedIntent is an intent of the delegated policy for the demo catalog, delegating
// to the agents of keys.
func delegatedIntent(policyID string, keys ...string) (string, []byte) {
	id := uuid.NewString()
	list, _ := json.Marshal(keys)
	return id, fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000},"agents":{"Set":{"String":%s}}}}}`,
		id, policyID, list)
}

// agentKey is an agent's key pair with its Base58 public key.
type agentKey struct {
	priv ed25519.PrivateKey
	pub  string
}

func newAgentKey(t *testing.T) agentKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return agentKey{priv: priv, pub: crypto.EncodeBase58(pub)}
}

// signedProposal is a proposal's request signed by an agent, ready to send (again).
type signedProposal struct {
	header http.Header
	body   []byte
}

// signProposal signs the proposal of solution for intent id with key, its window from
// created to expires.
func (s *testServer) signProposal(id, solution string, key agentKey, created, expires time.Time) signedProposal {
	s.t.Helper()
	body, _ := json.Marshal(map[string]string{"solution": solution})
	req, err := http.NewRequest("POST", s.url+"/intents/"+id+"/proposal", bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := httpsig.Sign(req, body, key.priv, httpsig.Params{Created: created, Expires: expires, Tag: "agent-payer-auth"}); err != nil {
		s.t.Fatal(err)
	}
	return signedProposal{header: req.Header, body: body}
}

// send posts a signed proposal as it is, or with another body.
func (s *testServer) send(id string, p signedProposal) response {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.url+"/intents/"+id+"/proposal", bytes.NewReader(p.body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header = p.header.Clone()
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestDelegatedAgents runs an intent that delegates to one agent through every refusal
// of docs/agents.md, checking after each that it is still open with its one proposal
// unspent; then the agent's signed proposal succeeds, and its status, its event and
// its proof name the agent, the proof verifying offline. On both stores (make test).
func TestDelegatedAgents(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.policy = s.putPolicy(delegatedPolicy(t))
	pub, _ := s.serviceKey()
	agent, other := newAgentKey(t), newAgentKey(t)
	id, intent := delegatedIntent(s.policy, agent.pub)
	if r := s.postIntent(authored(t, intent, s.signEd25519(intent))); r.status != http.StatusOK {
		t.Fatalf("POST /intents: %s", r)
	}
	now := time.Now()
	valid := func(key agentKey) signedProposal {
		return s.signProposal(id, solutionPasses, key, now, now.Add(4*time.Minute))
	}
	byOther := valid(other)
	changed := valid(agent)
	changed.body = []byte(`{"solution":"` + solutionOutOfStock + `"}`)
	for _, tc := range []struct {
		name       string
		send       func() response
		status     int
		code, says string
	}{
		{"unsigned", func() response { return s.propose(id, solutionPasses) }, 401, "agent_signature_required", "sign the proposal"},
		{"signed by another agent", func() response { return s.send(id, byOther) }, 403, "agent_not_delegated", "does not delegate to agent " + other.pub},
		{"the same request again", func() response { return s.send(id, byOther) }, 401, "agent_signature_replayed", "was used before"},
		{"expired", func() response {
			return s.send(id, s.signProposal(id, solutionPasses, agent, now.Add(-10*time.Minute), now.Add(-5*time.Minute)))
		}, 401, "agent_signature_invalid", "expired"},
		{"a window over 480 s", func() response {
			return s.send(id, s.signProposal(id, solutionPasses, agent, now, now.Add(9*time.Minute)))
		}, 401, "agent_signature_invalid", "480"},
		{"the body changed after signing", func() response { return s.send(id, changed) }, 401, "agent_signature_invalid", "Content-Digest"},
		{"signed for another intent", func() response {
			return s.send(id, s.signProposal(uuid.NewString(), solutionPasses, agent, now, now.Add(time.Minute)))
		}, 401, "agent_signature_invalid", "signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.send()
			code, msg := r.errorBody(t)
			if r.status != tc.status || code != tc.code || !bytes.Contains([]byte(msg), []byte(tc.says)) {
				t.Errorf("%s: %s, want %d %s saying %q", tc.name, r, tc.status, tc.code, tc.says)
			}
			if st := s.status(id); st["status"] != "open" {
				t.Errorf("after %s the intent is %v, want open", tc.name, st)
			}
		})
	}

	sp := valid(agent)
	if r := s.send(id, sp); r.status != http.StatusOK {
		t.Fatalf("the delegated agent's proposal: %s", r)
	}
	st := s.waitStatus(id, "success")
	if a, _ := st["agent"].(map[string]any); a["key"] != agent.pub || a["tag"] != "agent-payer-auth" {
		t.Errorf("status agent = %v, want key %s and tag agent-payer-auth", st["agent"], agent.pub)
	}
	if r := s.send(id, sp); r.status != 401 {
		t.Errorf("the accepted request sent again: %s, want 401 agent_signature_replayed", r)
	}
	ctx := t.Context()
	stream := s.openStream(ctx, "?intent_id="+id)
	defer stream.close()
	ev, err := stream.next()
	if err != nil {
		t.Fatal(err)
	}
	var event struct {
		Agent struct{ Key string } `json:"agent"`
	}
	if err := json.Unmarshal([]byte(ev.data), &event); err != nil || event.Agent.Key != agent.pub {
		t.Errorf("outcome event %s: want the agent %s (%v)", ev.data, agent.pub, err)
	}

	r := s.do("GET", "/intents/"+id+"/proof", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET proof: %s", r)
	}
	report, err := proof.Verify(r.body, pub)
	if err != nil {
		t.Fatalf("the proof does not verify: %v", err)
	}
	if report.Agent == nil || report.Agent.Key != agent.pub || !report.Agent.Delegated {
		t.Errorf("the proof's agent report %+v, want the delegated agent %s", report.Agent, agent.pub)
	}
}

// TestUndelegatedSignedProposal: an intent of a policy without an agents part takes an
// unsigned proposal as before, and a signed one too, recording its agent; a signature
// that does not verify is refused all the same.
func TestUndelegatedSignedProposal(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	agent := newAgentKey(t)
	id := s.submit()
	now := time.Now()
	bad := s.signProposal(id, solutionPasses, agent, now, now.Add(time.Minute))
	bad.body = []byte(`{"solution":"` + solutionBlackL + `"}`)
	if r := s.send(id, bad); r.status != 401 {
		t.Errorf("an undelegated intent's proposal with a signature that does not verify: %s, want 401", r)
	}
	if r := s.send(id, s.signProposal(id, solutionPasses, agent, now, now.Add(time.Minute))); r.status != http.StatusOK {
		t.Fatalf("a signed proposal of an undelegated intent: %s", r)
	}
	st := s.waitStatus(id, "success")
	if a, _ := st["agent"].(map[string]any); a["key"] != agent.pub {
		t.Errorf("status agent = %v, want %s", st["agent"], agent.pub)
	}
	plain := s.submit()
	if r := s.propose(plain, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("an unsigned proposal of an undelegated intent: %s", r)
	}
	if st := s.waitStatus(plain, "success"); st["agent"] != nil {
		t.Errorf("an unsigned proposal's status names an agent: %v", st)
	}
}

// TestDelegationOfNoKey: an intent whose agents parameter lists something that is not
// an Ed25519 public key delegates to nobody, and is refused when it is submitted.
func TestDelegationOfNoKey(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.policy = s.putPolicy(delegatedPolicy(t))
	_, intent := delegatedIntent(s.policy, "not-a-key")
	r := s.postIntent(authored(t, intent, s.signEd25519(intent)))
	if code, _ := r.errorBody(t); r.status != 422 || code != "attrs_mismatch" {
		t.Errorf("an intent delegating to %q: %s, want 422 attrs_mismatch", "not-a-key", r)
	}
}

// TestMandatePolicyAlone: a policy that reads a mandate's values is stored, and an
// intent of it alone is refused, since no mandate keeps its totals.
func TestMandatePolicyAlone(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.policy = s.putPolicy(mandatePolicy(t))
	agent := newAgentKey(t)
	id := uuid.NewString()
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy"]}},"max_price_cents":{"Int":3000},"budget_cents":{"Int":5000},"max_purchases":{"Int":3},"per_week":{"Int":1},"agents":{"Set":{"String":[%q]}}}}}`,
		id, s.policy, agent.pub)
	r := s.postIntent(authored(t, intent, s.signEd25519(intent)))
	if code, msg := r.errorBody(t); r.status != 422 || code != "invalid_intent" || !strings.Contains(msg, "mandate.spent") {
		t.Errorf("an intent of a mandate's policy alone: %s, want 422 invalid_intent naming mandate.spent", r)
	}
}
