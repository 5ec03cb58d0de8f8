package crypto

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// SignEd25519 signs JCS(intentJSON) with priv and returns the Signed authorship that
// Verify accepts for it. intentJSON is the raw JSON of the `intent` object.
func SignEd25519(priv ed25519.PrivateKey, intentJSON []byte) (Authorship, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return Authorship{}, fmt.Errorf("crypto: Ed25519 private key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	canon, err := canonicalIntent(intentJSON)
	if err != nil {
		return Authorship{}, fmt.Errorf("crypto: intent cannot be canonicalized: %v", err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	return Authorship{Signature: &Signature{Ed25519: &Ed25519Signature{
		PubKey:    append([]byte(nil), pub...),
		Signature: ed25519.Sign(priv, canon),
	}}}, nil
}

// SoftPasskey is a software WebAuthn authenticator holding a P-256 key. It is for tests
// and demos only: the key lives in memory, nothing asks the user, and the signature
// counter never moves. It produces the assertions a browser and a platform
// authenticator would, so that the passkey path can be exercised end to end without a
// device.
//
// The exported fields choose the form of what it produces; change them before use, not
// while other goroutines sign.
type SoftPasskey struct {
	key *ecdsa.PrivateKey

	// RPID is the relying party id whose SHA-256 opens the authenticator data.
	RPID string
	// Origin is the origin written into the client data.
	Origin string
	// Compressed makes PublicKey (and so pub_key) the 33-byte compressed point
	// instead of the 65-byte uncompressed one.
	Compressed bool
	// RawSignature makes signatures raw 64-byte r||s instead of ASN.1 DER.
	RawSignature bool
	// SignCount is written into the authenticator data.
	SignCount uint32
}

// NewSoftPasskey wraps an existing P-256 key, for tests that need a fixed key.
func NewSoftPasskey(key *ecdsa.PrivateKey, rpID, origin string) (*SoftPasskey, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return nil, errors.New("crypto: a soft passkey needs a P-256 key")
	}
	return &SoftPasskey{key: key, RPID: rpID, Origin: origin}, nil
}

// GenerateSoftPasskey makes a soft passkey with a fresh random P-256 key.
func GenerateSoftPasskey(rpID, origin string) (*SoftPasskey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), nil)
	if err != nil {
		return nil, err
	}
	return NewSoftPasskey(key, rpID, origin)
}

// PublicKey returns the SEC1 encoding of the public key, compressed when p.Compressed
// is set.
func (p *SoftPasskey) PublicKey() []byte {
	u, err := p.key.PublicKey.Bytes()
	if err != nil {
		// The key was checked to be P-256 when p was made, so it has an encoding.
		panic("crypto: soft passkey key has no SEC1 encoding: " + err.Error())
	}
	if !p.Compressed {
		return u
	}
	c := make([]byte, P256CompressedLen)
	c[0] = 2 | u[P256UncompressedLen-1]&1
	copy(c[1:], u[1:33])
	return c
}

// AuthenticatorData returns rpIdHash || flags || signCount for p's RP id and counter.
// Pass 0x01 (user present) for a normal assertion; tests pass other flags.
func (p *SoftPasskey) AuthenticatorData(flags byte) []byte {
	ad := make([]byte, authDataMinLen)
	h := sha256.Sum256([]byte(p.RPID))
	copy(ad, h[:])
	ad[authDataFlagsIndex] = flags
	binary.BigEndian.PutUint32(ad[33:], p.SignCount)
	return ad
}

// ClientData returns the client data JSON a browser would pass the authenticator for
// the given type ("webauthn.get" for an assertion) and challenge, with p's origin.
func (p *SoftPasskey) ClientData(typ, challenge string) string {
	b, _ := json.Marshal(struct {
		Type        string `json:"type"`
		Challenge   string `json:"challenge"`
		Origin      string `json:"origin"`
		CrossOrigin bool   `json:"crossOrigin"`
	}{typ, challenge, p.Origin, false}) // cannot fail: strings and a bool
	return string(b)
}

// Assert produces a well-formed assertion over the intent: challenge
// base64url(SHA-256(JCS(intent))), type webauthn.get, user-present flag set.
func (p *SoftPasskey) Assert(intentJSON []byte) (*PasskeySignature, error) {
	challenge, err := PasskeyChallenge(intentJSON)
	if err != nil {
		return nil, fmt.Errorf("crypto: intent cannot be canonicalized: %v", err)
	}
	return p.AssertRaw(p.AuthenticatorData(flagUserPresent), p.ClientData("webauthn.get", challenge))
}

// AssertRaw signs authenticatorData || SHA-256(clientData) as an authenticator does,
// whatever the two hold: tests use it to build assertions that are wrong in one way.
func (p *SoftPasskey) AssertRaw(authenticatorData []byte, clientData string) (*PasskeySignature, error) {
	cdHash := sha256.Sum256([]byte(clientData))
	h := sha256.New()
	h.Write(authenticatorData)
	h.Write(cdHash[:])
	// A nil random source selects deterministic RFC 6979 nonces: the same input
	// gives the same signature, which keeps demos and test output reproducible.
	der, err := p.key.Sign(nil, h.Sum(nil), crypto.SHA256)
	if err != nil {
		return nil, err
	}
	sig := der
	if p.RawSignature {
		var rs struct{ R, S *big.Int }
		if _, err := asn1.Unmarshal(der, &rs); err != nil {
			return nil, err
		}
		sig = make([]byte, P256RawSignatureLen)
		rs.R.FillBytes(sig[:32])
		rs.S.FillBytes(sig[32:])
	}
	return &PasskeySignature{
		PubKey:            p.PublicKey(),
		Signature:         sig,
		ClientData:        clientData,
		AuthenticatorData: append([]byte(nil), authenticatorData...),
	}, nil
}

// Sign returns the Signed authorship of a well-formed assertion over the intent.
func (p *SoftPasskey) Sign(intentJSON []byte) (Authorship, error) {
	s, err := p.Assert(intentJSON)
	if err != nil {
		return Authorship{}, err
	}
	return Authorship{Signature: &Signature{Passkey: s}}, nil
}
