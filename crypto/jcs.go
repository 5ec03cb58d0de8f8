package crypto

import (
	"crypto/sha256"
	"encoding/base64"

	"github.com/gowebpki/jcs"
)

// Canonicalize returns the RFC 8785 (JCS) serialization of a JSON text: object members
// sorted by their UTF-16 code units, no insignificant whitespace, numbers and strings in
// their one canonical form. Signatures are over these bytes, so that the order of keys
// or the spacing a client happened to send does not change what was signed. Duplicate
// object keys are an error, since no canonical form exists for them.
func Canonicalize(jsonBytes []byte) ([]byte, error) {
	return jcs.Transform(jsonBytes)
}

// PasskeyChallenge returns the WebAuthn challenge a passkey must sign for an intent:
// base64url without padding of SHA-256(JCS(intent)). intentJSON is the raw JSON of the
// `intent` object.
func PasskeyChallenge(intentJSON []byte) (string, error) {
	canon, err := Canonicalize(intentJSON)
	if err != nil {
		return "", err
	}
	return challengeOf(canon), nil
}

func challengeOf(canon []byte) string {
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
