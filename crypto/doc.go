// Package crypto verifies who authored an intent: the Authorship and Signature wire
// types with strict decoding, Ed25519, WebAuthn passkey (ES256) and weighted multisig
// verification over the JCS (RFC 8785) bytes of the intent, and the Base58 encoding
// the wire uses for keys and signatures.
//
// The package is a leaf: it imports nothing else of the project.
package crypto
