package proof_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/httpsig"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/proof"
)

// delegatedPolicy is testPolicy delegating to the agents its intents list.
var delegatedPolicy = strings.Replace(strings.Replace(testPolicy,
	"parameters { size: string  max_price_cents: int }", "parameters { size: string  max_price_cents: int  agents: set<string> }", 1),
	"name test_tshirt", "name test_tshirt\nagents parameters.agents", 1)

// agentKey is the agent the delegated intents list; strangerKey is another agent.
var agentKey, strangerKey = ed25519.NewKeyFromSeed(seed("agent")), ed25519.NewKeyFromSeed(seed("stranger"))

func agentPub(k ed25519.PrivateKey) string {
	return crypto.EncodeBase58(k.Public().(ed25519.PublicKey))
}

// agentBundle is a bundle whose proposal an agent signed: of the delegated policy when
// delegated, listing the agent keys listed; of testPolicy otherwise.
type agentBundle struct {
	*bundle
	base, body []byte
}

// newAgentBundle makes the bundle of a proposal signed by signer with the request sent
// to path, for an intent of the delegated policy listing listed (or of the undelegated
// one when listed is nil).
func newAgentBundle(t *testing.T, signer ed25519.PrivateKey, path string, listed ...string) *agentBundle {
	t.Helper()
	b := newBundle(t)
	src := testPolicy
	if listed != nil {
		src = delegatedPolicy
	}
	p, err := policy.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	b.bytecode = p.Bytecode()
	attrs := `"size":{"String":"M"},"max_price_cents":{"Int":2500}`
	if listed != nil {
		keys, _ := json.Marshal(listed)
		attrs += fmt.Sprintf(`,"agents":{"Set":{"String":%s}}`, keys)
	}
	b.setIntent(t, fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{%s}}}`, testIntentID, p.ID(), attrs), authorKey)
	b.receipt.PolicyID = p.ID()
	body := append([]byte(nil), b.proposal...)
	req, err := http.NewRequest("POST", "https://svc.example"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := httpsig.Sign(req, body, signer, httpsig.Params{Created: now, Expires: now.Add(time.Minute), Tag: "agent-payer-auth"}); err != nil {
		t.Fatal(err)
	}
	v, err := httpsig.Verify(req, body, now, httpsig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.receipt.Version = crypto.ReceiptVersionAgent
	b.receipt.Agent = crypto.NewReceiptAgent(v.KeyID, v.Tag, v.Base, v.Signature)
	b.redigest(t)
	ab := &agentBundle{bundle: b, base: v.Base, body: body}
	b.edit = func(parts map[string]json.RawMessage) {
		parts["agent"], _ = json.Marshal(intentd.ProofAgent{SignatureBase: string(ab.base), Body: ab.body})
	}
	return ab
}

var proposalPath = "/intents/" + testIntentID + "/proposal"

// TestVerifyAgent checks the proofs of signed proposals: a delegated agent's and an
// undelegated one's verify and say so; each change of what the agent signed, or of
// whom the intent delegates to, is found by the agent check.
func TestVerifyAgent(t *testing.T) {
	service := serviceKey.PublicKey()
	t.Run("delegated", func(t *testing.T) {
		b := newAgentBundle(t, agentKey, proposalPath, agentPub(agentKey))
		rep, err := proof.Verify(b.encode(t), service)
		if err != nil {
			t.Fatal(err)
		}
		if a := rep.Agent; a == nil || a.Key != agentPub(agentKey) || !a.Delegated || a.Tag != "agent-payer-auth" || a.Authority != "svc.example" {
			t.Errorf("agent report %+v, want the delegated agent %s", rep.Agent, agentPub(agentKey))
		}
	})
	t.Run("undelegated", func(t *testing.T) {
		b := newAgentBundle(t, agentKey, proposalPath, nil...)
		rep, err := proof.Verify(b.encode(t), service)
		if err != nil {
			t.Fatal(err)
		}
		if a := rep.Agent; a == nil || a.Delegated {
			t.Errorf("agent report %+v, want an agent the intent did not delegate to", rep.Agent)
		}
	})

	for _, tc := range []struct {
		name    string
		make    func(t *testing.T) *agentBundle
		check   string
		message string
	}{
		{"an agent the intent does not list", func(t *testing.T) *agentBundle {
			return newAgentBundle(t, strangerKey, proposalPath, agentPub(agentKey))
		}, proof.CheckAgent, "does not list the agent"},
		{"a request to another intent", func(t *testing.T) *agentBundle {
			return newAgentBundle(t, agentKey, "/intents/00000000-0000-4000-8000-000000000000/proposal", agentPub(agentKey))
		}, proof.CheckAgent, "not this intent's proposal"},
		{"a base changed", func(t *testing.T) *agentBundle {
			b := newAgentBundle(t, agentKey, proposalPath, agentPub(agentKey))
			b.base = bytes.Replace(b.base, []byte("svc.example"), []byte("evil.example"), 1)
			return b
		}, proof.CheckAgent, "signature base's digest"},
		{"a base changed and its digest bound again", func(t *testing.T) *agentBundle {
			b := newAgentBundle(t, agentKey, proposalPath, agentPub(agentKey))
			b.base = bytes.Replace(b.base, []byte("svc.example"), []byte("evil.example"), 1)
			b.receipt.Agent = crypto.NewReceiptAgent(b.receipt.Agent.Key, b.receipt.Agent.Tag, b.base, mustDecode(t, b.receipt.Agent.Signature))
			return b
		}, proof.CheckAgent, "does not verify"},
		{"a body that is not the one signed", func(t *testing.T) *agentBundle {
			b := newAgentBundle(t, agentKey, proposalPath, agentPub(agentKey))
			b.body = []byte(`{"solution":"https://shop.example/p/other"}`)
			return b
		}, proof.CheckAgent, "content-digest"},
		{"the agent's part left out", func(t *testing.T) *agentBundle {
			b := newAgentBundle(t, agentKey, proposalPath, agentPub(agentKey))
			b.edit = nil
			return b
		}, proof.CheckBundle, "agent is missing"},
		{"a delegated intent's receipt without an agent", func(t *testing.T) *agentBundle {
			b := newAgentBundle(t, agentKey, proposalPath, agentPub(agentKey))
			b.receipt.Version, b.receipt.Agent, b.edit = crypto.ReceiptVersion, nil, nil
			return b
		}, proof.CheckAgent, "names none"},
		{"an agent part beside a version 2 receipt", func(t *testing.T) *agentBundle {
			b := newAgentBundle(t, agentKey, proposalPath, agentPub(agentKey))
			b.receipt.Version, b.receipt.Agent = crypto.ReceiptVersion, nil
			return b
		}, proof.CheckBundle, "names no agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := proof.Verify(tc.make(t).encode(t), service)
			var ve *proof.VerifyError
			if !errors.As(err, &ve) || ve.Check != tc.check || !strings.Contains(ve.Message, tc.message) {
				t.Fatalf("Verify = %+v, %v; want check %s saying %q", rep, err, tc.check, tc.message)
			}
		})
	}
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := crypto.DecodeBase58(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
