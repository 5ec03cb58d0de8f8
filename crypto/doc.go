// Package crypto verifies who authored an intent: the Authorship and Signature wire
// types with strict decoding, Ed25519, WebAuthn passkey (ES256) and weighted multisig
// verification over the JCS (RFC 8785) bytes of the intent, and the Base58 encoding
// the wire uses for keys and signatures.
//
// The package is a leaf: it imports nothing else of the project.
//
// Two kinds of failure are kept apart because the HTTP layer answers them
// differently. Decoding (Authorship.UnmarshalJSON, DecodeAuthorship) fails with a
// *FieldError naming the field: the body does not have the schema's shape (422).
// Verify fails with ErrUnsignedNotPermitted, or with an error wrapping
// ErrAuthorshipInvalid: the shape is right but the signature does not authorize the
// intent (400). Checks that depend on values rather than shape (a threshold of 0, a
// weight of 0, a point not on the curve, the number of signers, nesting a multisig)
// belong to Verify, which also re-checks every length, so that values built in Go
// rather than decoded are safe to pass it.
//
// An intent is signed as received: Verify canonicalizes the raw `intent` JSON, so
// the order of keys and the spacing a client used do not matter, while every value
// does. Intents holding numbers beyond ±(2^53-1) cannot be signed, since JCS would
// round them and two intents would share one signature.
//
// SignEd25519 and SoftPasskey produce signatures the way clients do. SoftPasskey is a
// software authenticator for tests and demos, not a place to keep a real key.
package crypto
