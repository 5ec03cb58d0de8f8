package httpsig

import "fmt"

// Reason says, in a word a program can switch on, why a signature was refused.
type Reason string

// The reasons Verify refuses a request. Each is a stable code: the HTTP layer maps
// them to a status, and an agent's developer looks them up.
const (
	// Missing: the request carries no Signature-Input or no Signature, or the
	// Signature has no member for the label chosen.
	Missing Reason = "missing"
	// Malformed: a header is not the structured field RFC 9421 requires, or a
	// parameter has the wrong type.
	Malformed Reason = "malformed"
	// Unsupported: the alg is not ed25519, or a covered component is one this
	// package does not derive (parameters, @query-param, @status, unknown names).
	Unsupported Reason = "unsupported"
	// BadKey: the keyid is not a Base58 Ed25519 public key.
	BadKey Reason = "bad_key"
	// MissingComponent: the signature does not cover a required component, or it
	// covers a header the request does not carry.
	MissingComponent Reason = "missing_component"
	// NoNonce: the signature has no nonce, or an empty one.
	NoNonce Reason = "no_nonce"
	// NoCreated: the signature has no created time.
	NoCreated Reason = "no_created"
	// NoExpires: the signature has no expires time.
	NoExpires Reason = "no_expires"
	// WindowTooLong: expires - created is more than the verifier allows.
	WindowTooLong Reason = "window_too_long"
	// NotYetValid: created is further in the future than the clock skew allows.
	NotYetValid Reason = "not_yet_valid"
	// Expired: expires has passed, clock skew included.
	Expired Reason = "expired"
	// DigestMismatch: Content-Digest is absent, has no sha-256, or is not the
	// body's.
	DigestMismatch Reason = "digest_mismatch"
	// BadSignature: the signature does not verify with the key over the base.
	BadSignature Reason = "bad_signature"
)

// Error is the one error type of the package: a Reason to switch on and a sentence
// that tells the sender what to fix.
type Error struct {
	Reason Reason
	Detail string
}

// Error returns the detail sentence, or for an Error built without one a sentence
// from the reason alone.
func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Detail
	}
	switch e.Reason {
	case Missing:
		return "the request is not signed"
	case BadSignature:
		return "the signature does not verify"
	}
	return "the signature is refused: " + string(e.Reason)
}

// refuse builds the Error Verify returns: a reason and a sentence saying what to fix.
func refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}
