package crypto

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
)

// Limits on a multisig, so that one request cannot ask for unbounded verification work.
const (
	MaxMultisigSigners    = 64
	MaxMultisigSignatures = 64
	// MaxMultisigWeight bounds a signer's weight and the threshold: 2^53-1, the largest
	// integer every JSON reader holds exactly, as for every number the service reads.
	MaxMultisigWeight = 1<<53 - 1
)

// Authenticator data layout (WebAuthn §6.1): rpIdHash (32) || flags (1) || signCount (4).
const (
	authDataMinLen     = 37
	authDataFlagsIndex = 32
	flagUserPresent    = 0x01
	flagUserVerified   = 0x04
)

// VerifyOptions are the server's settings for Verify.
type VerifyOptions struct {
	// AllowUnsigned permits the Unsigned form; without it Verify returns
	// ErrUnsignedNotPermitted for it.
	AllowUnsigned bool
	// PasskeyOrigin, when not empty, is the only origin a passkey's client data may
	// name. Empty: the origin is not checked.
	PasskeyOrigin string
	// PasskeyRPID, when not empty, is the relying party id whose SHA-256 must open the
	// authenticator data. Empty: the RP id hash is not checked.
	PasskeyRPID string
	// PasskeyTopOrigins are the sites that may frame PasskeyOrigin's page when it asks
	// for a signature: client data with crossOrigin true is refused unless its
	// topOrigin is one of them. Checked only when PasskeyOrigin is set.
	PasskeyTopOrigins []string
	// PasskeyRequireUV refuses a passkey assertion whose authenticator data lacks the
	// user-verified flag. The user-present flag only shows that someone touched the
	// authenticator; user verification (a PIN, a fingerprint) shows it was its owner,
	// which a service may want before it acts on an intent. Off: presence is enough.
	PasskeyRequireUV bool
}

// Verify checks that a authorizes the intent whose raw JSON (the `intent` object as
// received) is intentJSON: every signature must be over JCS(intentJSON) as
// decisions.md "Authorship" lays down. An Unsigned authorship verifies when
// opts.AllowUnsigned is set and gives ErrUnsignedNotPermitted otherwise; every other
// failure wraps ErrAuthorshipInvalid, with a message that says what failed.
func Verify(intentJSON []byte, a Authorship, opts VerifyOptions) error {
	if a.Signature == nil {
		if !opts.AllowUnsigned {
			return ErrUnsignedNotPermitted
		}
		return nil
	}
	canon, err := canonicalIntent(intentJSON)
	if err != nil {
		return fmt.Errorf("%w: intent cannot be canonicalized: %v", ErrAuthorshipInvalid, err)
	}
	return verifyCanonical(canon, a, opts)
}

// VerifyCanonical is Verify for an intent already in its JCS form, as Canonicalize
// returns it. A caller that keeps the canonical bytes anyway saves the second
// canonicalization, which costs about half as much as an Ed25519 verification. Passing
// bytes that are not canonical makes every signature fail, never pass.
func VerifyCanonical(canon []byte, a Authorship, opts VerifyOptions) error {
	if a.Signature == nil {
		if !opts.AllowUnsigned {
			return ErrUnsignedNotPermitted
		}
		return nil
	}
	if err := checkNumbers(canon); err != nil {
		return fmt.Errorf("%w: intent cannot be canonicalized: %v", ErrAuthorshipInvalid, err)
	}
	return verifyCanonical(canon, a, opts)
}

func verifyCanonical(canon []byte, a Authorship, opts VerifyOptions) error {
	v := verifier{canon: canon, opts: opts}
	if err := v.signature(a.Signature, false); err != nil {
		return fmt.Errorf("%w: %v", ErrAuthorshipInvalid, err)
	}
	return nil
}

// verifier holds what every signature of one Verify call is checked against.
type verifier struct {
	canon     []byte
	challenge string // computed on first use: only passkeys need it
	opts      VerifyOptions
}

func (v *verifier) signature(s *Signature, inMultisig bool) error {
	if n := s.count(); n != 1 {
		return fmt.Errorf("signature has %d of Ed25519, Passkey, Multisig set, want exactly one", n)
	}
	switch {
	case s.Ed25519 != nil:
		return v.ed25519(s.Ed25519)
	case s.Passkey != nil:
		return v.passkey(s.Passkey)
	default:
		if inMultisig {
			return errors.New("multisig: nested multisig refused")
		}
		return v.multisig(s.Multisig)
	}
}

func (v *verifier) ed25519(s *Ed25519Signature) error {
	// Verification panics on a key of the wrong length, and values built in Go never
	// went through the decoder's length checks.
	if len(s.PubKey) != Ed25519PubKeyLen {
		return fmt.Errorf("ed25519: pub_key is %d bytes, want %d", len(s.PubKey), Ed25519PubKeyLen)
	}
	if len(s.Signature) != Ed25519SignatureLen {
		return fmt.Errorf("ed25519: signature is %d bytes, want %d", len(s.Signature), Ed25519SignatureLen)
	}
	if !verifyEd25519(s.PubKey, v.canon, s.Signature) {
		// The key is looked at only when the signature fails, so that every valid
		// intent is spared a second decoding of its key.
		if err := checkEd25519Key(s.PubKey); err != nil {
			return fmt.Errorf("ed25519: pub_key %v", err)
		}
		return errors.New("ed25519: signature does not verify")
	}
	return nil
}

// clientData is the part of the WebAuthn client data JSON the service checks.
type clientData struct {
	Type        string `json:"type"`
	Challenge   string `json:"challenge"`
	Origin      string `json:"origin"`
	CrossOrigin bool   `json:"crossOrigin"`
	TopOrigin   string `json:"topOrigin"`
}

func (v *verifier) passkey(s *PasskeySignature) error {
	pub, err := parseP256(s.PubKey)
	if err != nil {
		return fmt.Errorf("passkey: pub_key %v", err)
	}
	ad := s.AuthenticatorData
	if len(ad) < authDataMinLen {
		return fmt.Errorf("passkey: authenticator_data is %d bytes, want at least %d", len(ad), authDataMinLen)
	}
	if ad[authDataFlagsIndex]&flagUserPresent == 0 {
		return errors.New("passkey: authenticator_data does not have the user-present flag set")
	}
	if v.opts.PasskeyRequireUV && ad[authDataFlagsIndex]&flagUserVerified == 0 {
		return errors.New("passkey: authenticator_data does not have the user-verified flag set, " +
			"and this service requires user verification (a PIN or biometric on the authenticator)")
	}
	if v.opts.PasskeyRPID != "" {
		want := sha256.Sum256([]byte(v.opts.PasskeyRPID))
		if !bytes.Equal(ad[:32], want[:]) {
			return fmt.Errorf("passkey: authenticator_data RP id hash is not SHA-256 of RP id %q", v.opts.PasskeyRPID)
		}
	}
	var cd clientData
	if err := json.Unmarshal([]byte(s.ClientData), &cd); err != nil {
		return fmt.Errorf("passkey: client_data is not a JSON object of the WebAuthn client data: %v", err)
	}
	// encoding/json keeps the last of repeated keys where another reader may keep the
	// first, so client data that says "type" twice could mean two things: refused.
	if tree, err := parseTree([]byte(s.ClientData)); err != nil {
		return fmt.Errorf("passkey: client_data: %v", err)
	} else if err := noDuplicateKeys(tree, "client_data"); err != nil {
		return fmt.Errorf("passkey: %v", err)
	}
	if cd.Type != "webauthn.get" {
		return fmt.Errorf("passkey: client_data type is %q, want \"webauthn.get\"", cd.Type)
	}
	if v.challenge == "" {
		v.challenge = challengeOf(v.canon)
	}
	if cd.Challenge != v.challenge {
		return errors.New("passkey: challenge does not match the intent")
	}
	if v.opts.PasskeyOrigin != "" && cd.Origin != v.opts.PasskeyOrigin {
		return fmt.Errorf("passkey: client_data origin %q is not the allowed origin %q", cd.Origin, v.opts.PasskeyOrigin)
	}
	// A page of the allowed origin framed by another site signs with crossOrigin set:
	// the origin check alone would let any site that frames it ask for signatures.
	if v.opts.PasskeyOrigin != "" && cd.CrossOrigin && !slices.Contains(v.opts.PasskeyTopOrigins, cd.TopOrigin) {
		return fmt.Errorf("passkey: client_data says crossOrigin, framed by %q, which is not an allowed top origin", cd.TopOrigin)
	}
	cdHash := sha256.Sum256([]byte(s.ClientData))
	h := sha256.New()
	h.Write(ad)
	h.Write(cdHash[:])
	if !verifyP256(pub, h.Sum(nil), s.Signature) {
		return errors.New("passkey: signature does not verify")
	}
	return nil
}

// verifyP256 accepts an ASN.1 DER signature, as authenticators produce, or a raw r||s.
// A 64-byte value is tried as r||s first and then as DER, since a DER signature can
// happen to be 64 bytes long.
func verifyP256(pub *ecdsa.PublicKey, digest, sig []byte) bool {
	if len(sig) == P256RawSignatureLen {
		r := new(big.Int).SetBytes(sig[:32])
		s := new(big.Int).SetBytes(sig[32:])
		if ecdsa.Verify(pub, digest, r, s) {
			return true
		}
	}
	return ecdsa.VerifyASN1(pub, digest, sig)
}

// parseP256 reads a SEC1 P-256 point, compressed or uncompressed, and checks that it is
// on the curve.
func parseP256(b []byte) (*ecdsa.PublicKey, error) {
	switch len(b) {
	case P256UncompressedLen:
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), b)
		if err != nil {
			return nil, errors.New("is not a point on P-256")
		}
		return pub, nil
	case P256CompressedLen:
		x, y := elliptic.UnmarshalCompressed(elliptic.P256(), b)
		if x == nil {
			return nil, errors.New("is not a point on P-256")
		}
		u := make([]byte, P256UncompressedLen)
		u[0] = 4
		x.FillBytes(u[1:33])
		y.FillBytes(u[33:])
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), u)
		if err != nil {
			return nil, errors.New("is not a point on P-256")
		}
		return pub, nil
	default:
		return nil, fmt.Errorf("is %d bytes, want %d (compressed) or %d (uncompressed)", len(b), P256CompressedLen, P256UncompressedLen)
	}
}

// keyIdentity names the owner of a public key: the Ed25519 key bytes, or the
// uncompressed form of a P-256 point, so that a P-256 key written compressed in one
// place and uncompressed in another is recognised as the same signer.
func keyIdentity(pub []byte) (string, error) {
	switch len(pub) {
	case Ed25519PubKeyLen:
		// A point has one canonical encoding and only those are accepted, so the
		// bytes name the point: one signer cannot be listed twice in two spellings.
		if err := checkEd25519Key(pub); err != nil {
			return "", err
		}
		return "ed25519:" + string(pub), nil
	case P256CompressedLen, P256UncompressedLen:
		p, err := parseP256(pub)
		if err != nil {
			return "", err
		}
		u, err := p.Bytes()
		if err != nil {
			return "", errors.New("is not a point on P-256")
		}
		return "p256:" + string(u), nil
	default:
		return "", fmt.Errorf("is %d bytes, want %d (Ed25519), %d or %d (P-256)",
			len(pub), Ed25519PubKeyLen, P256CompressedLen, P256UncompressedLen)
	}
}

func (v *verifier) multisig(m *MultisigSignature) error {
	if m.Threshold < 1 {
		return errors.New("multisig: threshold must be at least 1")
	}
	if m.Threshold > MaxMultisigWeight {
		return fmt.Errorf("multisig: threshold %d is beyond 2^53-1", m.Threshold)
	}
	if len(m.Signers) == 0 {
		return errors.New("multisig: no signers")
	}
	if len(m.Signers) > MaxMultisigSigners {
		return fmt.Errorf("multisig: %d signers, at most %d allowed", len(m.Signers), MaxMultisigSigners)
	}
	if len(m.Signatures) > MaxMultisigSignatures {
		return fmt.Errorf("multisig: %d signatures, at most %d allowed", len(m.Signatures), MaxMultisigSignatures)
	}

	weights := make(map[string]uint64, len(m.Signers))
	for _, sg := range m.Signers {
		id, err := keyIdentity(sg.PubKey)
		if err != nil {
			return fmt.Errorf("multisig: signer %s %v", EncodeBase58(sg.PubKey), err)
		}
		if sg.Weight < 1 {
			return fmt.Errorf("multisig: signer %s has weight 0, want at least 1", EncodeBase58(sg.PubKey))
		}
		if sg.Weight > MaxMultisigWeight {
			return fmt.Errorf("multisig: signer %s has weight %d, beyond 2^53-1", EncodeBase58(sg.PubKey), sg.Weight)
		}
		if _, dup := weights[id]; dup {
			return fmt.Errorf("multisig: signer %s is listed twice", EncodeBase58(sg.PubKey))
		}
		weights[id] = sg.Weight
	}

	// Who signed, and the weight they add up to, are settled before any signature is
	// checked: they are cheap, and a set that cannot reach the threshold needs no
	// elliptic-curve work to be refused.
	signed := make(map[string]bool, len(m.Signatures))
	var total uint64
	for i := range m.Signatures {
		s := &m.Signatures[i]
		var pub []byte
		switch {
		case s.count() != 1:
			return fmt.Errorf("multisig: signatures[%d]: has %d of Ed25519, Passkey, Multisig set, want exactly one", i, s.count())
		case s.Multisig != nil:
			return fmt.Errorf("multisig: signatures[%d]: nested multisig refused", i)
		case s.Ed25519 != nil:
			pub = s.Ed25519.PubKey
		default:
			pub = s.Passkey.PubKey
		}
		id, err := keyIdentity(pub)
		if err != nil {
			return fmt.Errorf("multisig: signatures[%d]: pub_key %v", i, err)
		}
		w, listed := weights[id]
		if !listed {
			return fmt.Errorf("multisig: signatures[%d]: key %s is not a listed signer", i, EncodeBase58(pub))
		}
		if signed[id] {
			return fmt.Errorf("multisig: signatures[%d]: signer %s signed more than once", i, EncodeBase58(pub))
		}
		signed[id] = true
		// At most MaxMultisigSignatures weights of at most 2^53-1 each: the sum stays
		// far below 2^64 and cannot wrap.
		total += w
	}
	if total < m.Threshold {
		return fmt.Errorf("multisig: weight %d below threshold %d", total, m.Threshold)
	}
	for i := range m.Signatures {
		if err := v.signature(&m.Signatures[i], true); err != nil {
			return fmt.Errorf("multisig: signatures[%d]: %v", i, err)
		}
	}
	return nil
}
