package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
)

// TestLifecycle takes an intent through its whole life for each outcome: submitted,
// read back, proposed to (or left to expire), its final status polled and its event
// read from the stream.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		solution string // "" leaves the intent to expire
		check    func(t *testing.T, id string, st status)
	}{
		{"success", nil, solutionPasses, func(t *testing.T, id string, st status) {
			wantFields(t, st, "status", "intent_id", "proposal", "evidence")
			ev := st["evidence"].(map[string]any)
			if ev["price_cents"] != 1999.0 || ev["color"] != "navy" {
				t.Fatalf("evidence = %v", ev)
			}
		}},
		{"constraint failure", nil, solutionBlackL, func(t *testing.T, id string, st status) {
			wantFields(t, st, "status", "intent_id", "reason", "failure_kind", "proposal", "constraint_failures", "evidence")
			if st["failure_kind"] != "constraints" {
				t.Fatalf("failure_kind = %v", st["failure_kind"])
			}
			var idx []float64
			for _, f := range st["constraint_failures"].([]any) {
				cf := f.(map[string]any)
				if cf["pretty_expr"] == "" || cf["reason"] == "" {
					t.Fatalf("constraint failure %v lacks its expression or reason", cf)
				}
				idx = append(idx, cf["index"].(float64))
			}
			if len(idx) != 3 || idx[0] != 1 || idx[1] != 2 || idx[2] != 3 {
				t.Fatalf("failed constraints %v, want 1, 2 and 3 (size, colour, black)", idx)
			}
		}},
		{"extraction failure", nil, solutionUnknown, func(t *testing.T, id string, st status) {
			wantFields(t, st, "status", "intent_id", "reason", "failure_kind", "proposal", "constraint_failures")
			if st["failure_kind"] != "extraction" || !strings.Contains(st["reason"].(string), "not in the catalog") {
				t.Fatalf("failure = %v", st)
			}
			if cf := st["constraint_failures"].([]any); len(cf) != 0 {
				t.Fatalf("constraint_failures = %v, want []", cf)
			}
		}},
		{"expiry", []string{"--intent-ttl", "300ms"}, "", func(t *testing.T, id string, st status) {
			wantFields(t, st, "status", "intent_id")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, tt.args)
			id := s.submit()
			events := s.openStream(context.Background(), "?intent_id="+id)

			r := s.do("GET", "/intents/"+id, "", nil)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
				t.Fatalf("GET /intents/%s: %s", id, r)
			}
			var got struct {
				Intent     json.RawMessage   `json:"intent"`
				Authorship crypto.Authorship `json:"authorship"`
			}
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatalf("GET /intents answered %s: %v", r.body, err)
			}
			if err := crypto.Verify(got.Intent, got.Authorship, crypto.VerifyOptions{}); err != nil {
				t.Fatalf("the intent read back does not verify: %v", err)
			}
			if st := s.status(id); st["status"] != "open" || len(st) != 1 {
				t.Fatalf("new intent status = %v, want exactly {\"status\":\"open\"}", st)
			}

			want := "expired"
			if tt.solution != "" {
				if r := s.propose(id, tt.solution); r.status != http.StatusOK || len(r.body) != 0 {
					t.Fatalf("proposal: %s, want 200 with no body", r)
				}
				want = "success"
				if tt.name != "success" {
					want = "failure"
				}
			}
			st := s.waitStatus(id, want)
			if st["intent_id"] != id {
				t.Fatalf("status intent_id = %v, want %s", st["intent_id"], id)
			}
			if tt.solution != "" {
				if p, _ := st["proposal"].(map[string]any); p["solution"] != tt.solution {
					t.Fatalf("status proposal = %v", st["proposal"])
				}
			}
			tt.check(t, id, st)

			ev, err := events.next()
			if err != nil {
				t.Fatalf("reading the event: %v", err)
			}
			o := decodeOutcome(t, ev)
			if first := s.eventIDs(1)[0]; o.Type != want || o.IntentID != id || ev.id != first {
				t.Fatalf("event = %+v, want id %s, the first, of type %s for %s", ev, first, want, id)
			}
			var data status
			json.Unmarshal([]byte(ev.data), &data)
			delete(st, "status")
			delete(data, "type")
			if a, b := mustJSON(t, st), mustJSON(t, data); a != b {
				t.Fatalf("event data %s differs from the status %s beyond its discriminator", b, a)
			}
			if want == "expired" {
				r := s.propose(id, solutionPasses)
				if code, _ := r.errorBody(t); r.status != http.StatusConflict || code != "intent_expired" {
					t.Fatalf("proposal to an expired intent: %s, want 409 intent_expired", r)
				}
			}
		})
	}
}

func wantFields(t *testing.T, st status, fields ...string) {
	t.Helper()
	if len(st) != len(fields) {
		t.Fatalf("status %v has %d fields, want exactly %v", st, len(st), fields)
	}
	for _, f := range fields {
		if _, ok := st[f]; !ok {
			t.Fatalf("status %v lacks %s", st, f)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAuthorship submits intents under each form of authorship, with unsigned intents
// permitted and not.
func TestAuthorship(t *testing.T) {
	t.Parallel()
	passkey, err := crypto.GenerateSoftPasskey("shop.example", "https://shop.example")
	if err != nil {
		t.Fatal(err)
	}
	otherOrigin, _ := crypto.GenerateSoftPasskey("shop.example", "https://evil.example")
	_, k1, _ := ed25519.GenerateKey(nil)
	_, k2, _ := ed25519.GenerateKey(nil)
	_, k3, _ := ed25519.GenerateKey(nil)

	multisig := func(threshold uint64, signers []ed25519.PrivateKey, signing ...ed25519.PrivateKey) func(t *testing.T, intent []byte) crypto.Authorship {
		return func(t *testing.T, intent []byte) crypto.Authorship {
			m := &crypto.MultisigSignature{Threshold: threshold}
			for _, k := range signers {
				m.Signers = append(m.Signers, crypto.Signer{PubKey: k.Public().(ed25519.PublicKey), Weight: 1})
			}
			m.Signers = append(m.Signers, crypto.Signer{PubKey: passkey.PublicKey(), Weight: 2})
			for _, k := range signing {
				a, err := crypto.SignEd25519(k, intent)
				if err != nil {
					t.Fatal(err)
				}
				m.Signatures = append(m.Signatures, *a.Signature)
			}
			return crypto.Authorship{Signature: &crypto.Signature{Multisig: m}}
		}
	}
	withPasskey := func(inner func(*testing.T, []byte) crypto.Authorship) func(*testing.T, []byte) crypto.Authorship {
		return func(t *testing.T, intent []byte) crypto.Authorship {
			a := inner(t, intent)
			p, err := passkey.Sign(intent)
			if err != nil {
				t.Fatal(err)
			}
			a.Signature.Multisig.Signatures = append(a.Signature.Multisig.Signatures, *p.Signature)
			return a
		}
	}
	signers := []ed25519.PrivateKey{k1, k2, k3}
	// verifiedPasskey signs as an authenticator that verified its user (flags UP and UV).
	verifiedPasskey := func(t *testing.T, intent []byte) crypto.Authorship {
		challenge, err := crypto.PasskeyChallenge(intent)
		if err != nil {
			t.Fatal(err)
		}
		s, err := passkey.AssertRaw(passkey.AuthenticatorData(0x05), passkey.ClientData("webauthn.get", challenge))
		if err != nil {
			t.Fatal(err)
		}
		return crypto.Authorship{Signature: &crypto.Signature{Passkey: s}}
	}

	tests := []struct {
		name     string
		args     []string
		sign     func(t *testing.T, intent []byte) crypto.Authorship
		wantCode string // "" for 200
	}{
		{"Ed25519", nil, func(t *testing.T, in []byte) crypto.Authorship { a, _ := crypto.SignEd25519(k1, in); return a }, ""},
		{"Ed25519 over another intent", nil, func(t *testing.T, in []byte) crypto.Authorship {
			a, _ := crypto.SignEd25519(k1, []byte(strings.Replace(string(in), `"M"`, `"L"`, 1)))
			return a
		}, "authorship_invalid"},
		{"passkey", []string{"--passkey-origin", "https://shop.example", "--passkey-rp-id", "shop.example"},
			func(t *testing.T, in []byte) crypto.Authorship { a, _ := passkey.Sign(in); return a }, ""},
		{"passkey from another origin", []string{"--passkey-origin", "https://shop.example"},
			func(t *testing.T, in []byte) crypto.Authorship { a, _ := otherOrigin.Sign(in); return a }, "authorship_invalid"},
		{"passkey without user verification, not required", nil,
			func(t *testing.T, in []byte) crypto.Authorship { a, _ := passkey.Sign(in); return a }, ""},
		{"passkey without user verification, required", []string{"--passkey-require-uv"},
			func(t *testing.T, in []byte) crypto.Authorship { a, _ := passkey.Sign(in); return a }, "authorship_invalid"},
		{"passkey with user verification, required", []string{"--passkey-require-uv"}, verifiedPasskey, ""},
		{"multisig with a passkey without user verification, required", []string{"--passkey-require-uv"}, withPasskey(multisig(3, signers, k2)), "authorship_invalid"},
		{"multisig two of three", nil, multisig(2, signers, k1, k3), ""},
		{"multisig with a passkey", nil, withPasskey(multisig(3, signers, k2)), ""},
		{"multisig under its threshold", nil, multisig(3, signers, k1, k2), "authorship_invalid"},
		{"multisig with a stranger", nil, multisig(1, signers[:2], k3), "authorship_invalid"},
		{"unsigned refused by default", nil, func(*testing.T, []byte) crypto.Authorship { return crypto.Authorship{} }, "unsigned_not_permitted"},
		{"unsigned permitted", []string{"--allow-unsigned"}, func(*testing.T, []byte) crypto.Authorship { return crypto.Authorship{} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, tt.args)
			id := uuid.NewString()
			intent := s.intentJSON(id)
			r := s.postIntent(authored(t, intent, tt.sign(t, intent)))
			if tt.wantCode != "" {
				code, msg := r.errorBody(t)
				if r.status != http.StatusBadRequest || code != tt.wantCode {
					t.Fatalf("POST /intents: %s, want 400 %s", r, tt.wantCode)
				}
				if r := s.do("GET", "/intents/"+id, "", nil); r.status != http.StatusNotFound {
					t.Fatalf("a refused intent was stored (%s): %s", msg, r)
				}
				return
			}
			if r.status != http.StatusOK {
				t.Fatalf("POST /intents: %s", r)
			}
			if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
				t.Fatalf("proposal: %s", r)
			}
			s.waitStatus(id, "success")
		})
	}
}
