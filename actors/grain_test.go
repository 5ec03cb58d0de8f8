package actors

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/intentd/intentd"
	"github.com/intentd/intentd/cluster/clusterpb"
	"github.com/intentd/intentd/crypto"
)

// forgedCreate is the create of an intent whose signature is 64 random bytes, as no
// member sends: only an outsider could.
func forgedCreate(t *testing.T, h *harness, id string) *clusterpb.CreateIntent {
	t.Helper()
	raw := h.intentJSON(id, "M", 2500)
	forged := make([]byte, ed25519.SignatureSize)
	if _, err := rand.Read(forged); err != nil {
		t.Fatal(err)
	}
	auth := crypto.Authorship{Signature: &crypto.Signature{Ed25519: &crypto.Ed25519Signature{
		PubKey: h.key.Public().(ed25519.PublicKey), Signature: forged}}}
	canon, err := crypto.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	snap := &snapshot{V: snapshotVersion, ID: id, PolicyID: h.policy, State: intentd.StateOpen, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := snap.setAuthored(canon, auth); err != nil {
		t.Fatal(err)
	}
	cmd, err := command(id, create{snap: snap})
	if err != nil {
		t.Fatal(err)
	}
	return cmd.(*clusterpb.CreateIntent)
}

// TestGrainChecksCreate gives the owner's check every kind of create no member sends.
func TestGrainChecksCreate(t *testing.T) {
	h := newHarness(t, nil)
	id := uuid.NewString()
	valid := func() *snapshot { return signedCreate(t, h.key, h.intentJSON(id, "M", 2500)) }
	if err := h.e.checkCreate(id, valid()); err != nil {
		t.Fatalf("a valid create: %v", err)
	}
	forged := forgedCreate(t, h, id)
	forgedSnap, err := decodeSnapshot(forged.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	other := uuid.NewString()
	for _, tt := range []struct {
		name   string
		id     string
		change func(*snapshot) *snapshot
		want   string
	}{
		{"for another grain", other, func(s *snapshot) *snapshot { return s }, intentd.CodeInternal},
		{"naming another intent", id, func(s *snapshot) *snapshot { s.ID = other; return s }, intentd.CodeInternal},
		{"already a success", id, func(s *snapshot) *snapshot { s.State = intentd.StateSuccess; return s }, intentd.CodeInternal},
		{"open with evidence", id, func(s *snapshot) *snapshot { s.Evidence = []byte(`{"price_cents":1}`); return s }, intentd.CodeInternal},
		{"of another policy", id, func(s *snapshot) *snapshot { s.PolicyID = "11111111111111111111111111111111"; return s }, intentd.CodeInternal},
		{"expired when made", id, func(s *snapshot) *snapshot { s.ExpiresAt = s.CreatedAt; return s }, intentd.CodeInternal},
		{"with a forged signature", id, func(*snapshot) *snapshot { return forgedSnap }, intentd.CodeAuthorshipInvalid},
		{"expiring past --intent-ttl", id, func(s *snapshot) *snapshot { s.ExpiresAt = s.CreatedAt.Add(100 * 365 * 24 * time.Hour); return s }, intentd.CodeInternal},
		{"made an hour ago", id, func(s *snapshot) *snapshot {
			s.CreatedAt, s.ExpiresAt = s.CreatedAt.Add(-time.Hour), s.ExpiresAt.Add(-time.Hour)
			return s
		}, intentd.CodeInternal},
		{"naming a policy not stored", id, func(*snapshot) *snapshot {
			return signedCreate(t, h.key, fmt.Appendf(nil, `{"id":%q,"policy_id":%q}`, id, crypto.EncodeBase58(make([]byte, 32))))
		}, intentd.CodePolicyNotFound},
		{"with attrs its policy does not take", id, func(*snapshot) *snapshot {
			return signedCreate(t, h.key, fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"Int":3}}}}`, id, h.policy))
		}, intentd.CodeAttrsMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := h.e.checkCreate(tt.id, tt.change(valid())); intentd.ErrorCode(err) != tt.want {
				t.Fatalf("checkCreate = %v, want %s", err, tt.want)
			}
		})
	}
}

// signedCreate is the snapshot SubmitIntent makes of an intent signed by key.
func signedCreate(t testing.TB, key ed25519.PrivateKey, raw []byte) *snapshot {
	t.Helper()
	in, err := intentd.DecodeIntent(raw)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := crypto.SignEd25519(key, raw)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := crypto.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := &snapshot{V: snapshotVersion, ID: in.ID, PolicyID: in.PolicyID, State: intentd.StateOpen, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.setAuthored(canon, auth); err != nil {
		t.Fatal(err)
	}
	return s
}

// BenchmarkCheckCreate is what an owner spends checking a create that came over
// remoting: the snapshot's fields, the intent decoded, and the Ed25519 verification of
// its authorship, which is most of it.
func BenchmarkCheckCreate(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(nil)
	id := uuid.NewString()
	policyID := crypto.EncodeBase58(make([]byte, 32))
	raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":2500}}}}`, id, policyID)
	snap := signedCreate(b, key, raw)
	e := &Engine{}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.checkCreate(id, snap); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGrainChecksProposal gives the owner's check a proposal no member sends.
func TestGrainChecksProposal(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxSolutionBytes = 8 })
	id := uuid.NewString()
	g := &grain{e: h.e, id: id}
	for _, tt := range []struct {
		name, solution, want string
	}{
		{"empty", "", intentd.CodeInvalidProposal},
		{"over this owner's limit", "123456789", intentd.CodeInvalidProposal},
		{"within it", "M-cheap", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := &clusterpb.Propose{RequestId: uuid.NewString(), IntentId: id, Solution: tt.solution}
			msg, err := message(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.check(cmd, msg); intentd.ErrorCode(err) != tt.want && (tt.want != "" || err != nil) {
				t.Fatalf("check = %v, want %q", err, tt.want)
			}
		})
	}
}
