package crypto

import (
	"crypto/ed25519"
	"strings"
	"testing"
)

// agentReceipt is typicalReceipt of a proposal the agent of key signed, over base.
func agentReceipt(key ed25519.PrivateKey, base []byte) Receipt {
	r := typicalReceipt()
	r.Version = ReceiptVersionAgent
	r.Agent = NewReceiptAgent(EncodeBase58(key.Public().(ed25519.PublicKey)), "agent-payer-auth", base, ed25519.Sign(key, base))
	return r
}

// TestReceiptAgent checks a version 3 receipt: it signs, travels and verifies as the
// others do, and VerifyAgent holds its agent to the base it signed.
func TestReceiptAgent(t *testing.T) {
	key := testSigningKey(t, "service")
	agent := edKey("agent")
	base := []byte("\"@method\": POST\n\"@signature-params\": (\"@method\");created=1")
	signed, err := SignReceipt(key, agentReceipt(agent, base))
	if err != nil {
		t.Fatal(err)
	}
	wire, err := signed.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSignedReceipt(wire)
	if err != nil {
		t.Fatalf("decode a version 3 receipt: %v", err)
	}
	if err := VerifyReceipt(back, key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if err := back.Receipt.VerifyAgent(base); err != nil {
		t.Errorf("VerifyAgent of the base it signed: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		base       []byte
		change     func(r *Receipt)
	}{
		{"another base", "digest", []byte("\"@method\": GET"), nil},
		{"another agent's key", "does not verify", base, func(r *Receipt) {
			r.Agent.Key = EncodeBase58(edKey("stranger").Public().(ed25519.PublicKey))
		}},
		{"no agent", "names no agent", base, func(r *Receipt) { r.Agent = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := back.Receipt
			a := *r.Agent
			r.Agent = &a
			if tc.change != nil {
				tc.change(&r)
			}
			if err := r.VerifyAgent(tc.base); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("VerifyAgent = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	t.Run("an agent in a version 2 receipt", func(t *testing.T) {
		r := agentReceipt(agent, base)
		r.Version = ReceiptVersion
		if _, err := SignReceipt(key, r); err == nil || !strings.Contains(err.Error(), "agent") {
			t.Errorf("SignReceipt = %v, want a refusal of the agent", err)
		}
	})
}
