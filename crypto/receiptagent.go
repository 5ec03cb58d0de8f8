package crypto

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
)

// ReceiptVersionAgent is the version of a receipt of a proposal an agent signed: a
// version 2 receipt with an agent member, which binds the agent's key and what it
// signed. A receipt of an unsigned proposal stays version 2, so that the receipts of
// every service that checks no agent read as before.
const ReceiptVersionAgent = 3

// ReceiptAgent is the agent of a version 3 receipt: its key, and its RFC 9421 signature
// of the proposal's request, bound by the digest of the signature base. The base itself
// (which names the request's method, authority, path and the body's digest) travels in
// the proof bundle; a verifier hashes it, checks the agent's signature over it, and
// checks that it covers the proposal the receipt names.
type ReceiptAgent struct {
	// Key is the agent's Ed25519 public key in Base58.
	Key string `json:"key"`
	// Tag is the signature's tag, when it had one.
	Tag string `json:"tag,omitempty"`
	// SignatureBaseDigest is the Base58 SHA-256 of the signature base's bytes.
	SignatureBaseDigest string `json:"signature_base_digest"`
	// Signature is the agent's Ed25519 signature over the base, in Base58.
	Signature string `json:"signature"`
}

// NewReceiptAgent is the agent member of a receipt for a signature over base.
func NewReceiptAgent(key, tag string, base, sig []byte) *ReceiptAgent {
	sum := sha256.Sum256(base)
	return &ReceiptAgent{Key: key, Tag: tag, SignatureBaseDigest: EncodeBase58(sum[:]), Signature: EncodeBase58(sig)}
}

// VerifyAgent checks that the receipt's agent signed base: its digest is the one the
// receipt binds, and the signature verifies under the agent's key. What the base
// covers is the caller's to check (proof.Verify does).
func (r *Receipt) VerifyAgent(base []byte) error {
	a := r.Agent
	if a == nil {
		return fmt.Errorf("the receipt names no agent")
	}
	sum := sha256.Sum256(base)
	if got := EncodeBase58(sum[:]); got != a.SignatureBaseDigest {
		return fmt.Errorf("the signature base's digest is %s, the receipt binds %s", got, a.SignatureBaseDigest)
	}
	key, err := decodeKey(a.Key, ed25519.PublicKeySize)
	if err != nil {
		return fmt.Errorf("agent key: %w", err)
	}
	sig, err := decodeKey(a.Signature, ed25519.SignatureSize)
	if err != nil {
		return fmt.Errorf("agent signature: %w", err)
	}
	if !verifyEd25519(key, base, sig) {
		return fmt.Errorf("the agent's signature does not verify under its key %s", a.Key)
	}
	return nil
}

// validateAgent holds the agent member to the version: present in version 3, optional
// in version 4 (a purchase under a mandate), absent in the others, and of the right
// form.
func (r *Receipt) validateAgent() error {
	a := r.Agent
	switch {
	case r.Version == ReceiptVersionMandate && a == nil:
		return nil // a purchase no agent signed
	case r.Version != ReceiptVersionAgent && r.Version != ReceiptVersionMandate:
		if a != nil {
			return &FieldError{Field: "agent", Reason: fmt.Sprintf("present, but a version %d receipt has none", r.Version)}
		}
		return nil
	case a == nil:
		return &FieldError{Field: "agent", Reason: "missing, want the agent of a version 3 receipt"}
	}
	if _, err := decodeKey(a.Key, ed25519.PublicKeySize); err != nil {
		return &FieldError{Field: "agent.key", Reason: err.Error()}
	}
	if err := checkDigest(a.SignatureBaseDigest); err != nil {
		return &FieldError{Field: "agent.signature_base_digest", Reason: err.Error()}
	}
	if _, err := decodeKey(a.Signature, ed25519.SignatureSize); err != nil {
		return &FieldError{Field: "agent.signature", Reason: err.Error()}
	}
	return nil
}
