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
//
// The other half of the package is what the service itself signs. SigningKey is the
// service's Ed25519 key: LoadSigningKey reads the file intentd's --signing-key names,
// LoadOrCreateSigningKey keeps one in the data folder, and both refuse a file others
// may read, since a key that is not the service's alone makes every receipt worth less.
// A key's String never shows its private half. A Receipt is what the service attests
// about one decided proposal: the outcome and failed constraints, bound to the authored
// intent, the proposal and the evidence by their Digest, and to the policy by its id.
// SignReceipt signs the JCS bytes of a receipt; VerifyReceipt checks a SignedReceipt
// under a public key, which must come from somewhere the verifier trusts (the key the
// receipt carries shows only that it is whole); KeyID is the id receipts name a key by.
// docs/proofs.md describes the format.
package crypto
