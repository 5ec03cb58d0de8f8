package crypto

import (
	"errors"

	"github.com/oasisprotocol/curve25519-voi/curve"
	"github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// verifyRules are the verification rules of Go's crypto/ed25519 (canonical S, R compared
// as encoded, no cofactor) but for the public key A, which must be canonically encoded
// and not of small order. Under a small-order A (the identity and the other torsion
// points) anyone can make a signature that verifies for every message; and with two
// encodings of one point allowed, one signer could be listed twice in a multisig. A
// signature crypto/ed25519 accepts is accepted exactly when its key passes those two
// checks.
var verifyRules = &ed25519.Options{Verify: &ed25519.VerifyOptions{
	AllowSmallOrderA:   false,
	AllowNonCanonicalA: false,
	AllowSmallOrderR:   true,
	CofactorlessVerify: true,
}}

// verifyEd25519 reports whether sig is pub's Ed25519 signature of msg; pub and sig must
// have their lengths. It verifies with curve25519-voi, which on the service's machine
// takes a third less time than crypto/ed25519 (about 85 µs against 130), and every
// submitted intent is verified. TestVerifyEd25519AgreesWithStdLib and
// FuzzVerifyEd25519 hold it to crypto/ed25519's answers, but for the keys
// checkEd25519Key refuses.
func verifyEd25519(pub, msg, sig []byte) bool {
	return ed25519.VerifyWithOptions(ed25519.PublicKey(pub), msg, sig, verifyRules)
}

// checkEd25519Key says why an Ed25519 public key of the right length is refused as an
// author's key, or nil: an encoding that is not canonical (y not reduced, or the sign
// bit set on x = 0), a string that is no point, or a point of small order.
func checkEd25519Key(pub []byte) error {
	c, err := curve.NewCompressedEdwardsYFromBytes(pub)
	if err != nil {
		return errors.New("is not 32 bytes")
	}
	if !c.IsCanonicalVartime() {
		return errors.New("is not the canonical encoding of a point (each key has exactly one)")
	}
	var p curve.EdwardsPoint
	if _, err := p.SetCompressedY(c); err != nil {
		return errors.New("is not a point on Ed25519")
	}
	if p.IsSmallOrder() {
		return errors.New("is a point of small order, under which anyone can sign anything")
	}
	return nil
}
