package httpsig

import (
	"crypto/ed25519"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// stdlibRules are the verification rules of Go's crypto/ed25519: a signature is
// accepted here exactly when crypto/ed25519.Verify accepts it, so that an agent, a
// verifier of proofs and this package never part on what an agent signed.
var stdlibRules = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// verifyEd25519 reports whether sig is key's Ed25519 signature of msg; key and sig
// must have their lengths. It verifies with curve25519-voi under crypto/ed25519's
// rules because every signed proposal is verified, and on the service's machine voi
// takes 31 µs where crypto/ed25519 takes 44 (docs/benchmarks.md, "Signed proposals").
// TestVerifyEd25519AgreesWithStdLib and FuzzVerifyEd25519 hold it to crypto/ed25519's
// answers.
func verifyEd25519(key ed25519.PublicKey, msg, sig []byte) bool {
	return voi.VerifyWithOptions(voi.PublicKey(key), msg, sig, stdlibRules)
}
