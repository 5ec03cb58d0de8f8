package crypto

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// typicalIntent is the shape of an intent as clients send it.
var typicalIntent = []byte(`{"id":"6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31","policy_id":"` +
	EncodeBase58(sha256Of("a policy")) +
	`","attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":2500},"colors":{"Set":{"String":["navy","blue"]}}}}}`)

// otherIntent differs from typicalIntent in one attribute value.
var otherIntent = []byte(strings.Replace(string(typicalIntent), `2500`, `2501`, 1))

func sha256Of(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// edKey derives a fixed Ed25519 key from a label, so tests need no randomness.
func edKey(label string) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(sha256Of("ed25519 " + label))
}

// softPasskey makes a soft passkey with a fixed P-256 key derived from a label.
func softPasskey(t testing.TB, label string) *SoftPasskey {
	t.Helper()
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), sha256Of("p256 "+label))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewSoftPasskey(key, "shop.example", "https://shop.example")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func signEd(t testing.TB, priv ed25519.PrivateKey, intent []byte) Signature {
	t.Helper()
	a, err := SignEd25519(priv, intent)
	if err != nil {
		t.Fatal(err)
	}
	return *a.Signature
}

func assertPasskey(t testing.TB, p *SoftPasskey, intent []byte) Signature {
	t.Helper()
	s, err := p.Assert(intent)
	if err != nil {
		t.Fatal(err)
	}
	return Signature{Passkey: s}
}

func signed(s Signature) Authorship { return Authorship{Signature: &s} }

// checkVerify asserts the outcome of Verify: nil when wantErr is empty, otherwise an
// error wrapping ErrAuthorshipInvalid whose message contains wantErr.
func checkVerify(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("Verify: %v, want success", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Verify succeeded, want an error containing %q", wantErr)
	}
	if !errors.Is(err, ErrAuthorshipInvalid) {
		t.Fatalf("Verify: %v, want it to wrap ErrAuthorshipInvalid", err)
	}
	if !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("Verify: %q, want it to contain %q", err, wantErr)
	}
}

func flipBit(b []byte, bit int) []byte {
	c := append([]byte(nil), b...)
	c[bit/8] ^= 1 << (bit % 8)
	return c
}
