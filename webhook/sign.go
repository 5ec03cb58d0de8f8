package webhook

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// The prefixes of Standard Webhooks keys: an HMAC secret, an Ed25519 public key.
const (
	secretPrefix    = "whsec_"
	publicKeyPrefix = "whpk_"
)

// secretBytes is the size of a new endpoint's HMAC key: the spec asks for 24 to 64.
const secretBytes = 32

// newSecret makes an endpoint's HMAC secret, whsec_ and the Base64 of random bytes.
func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// secretKey is the HMAC key of a whsec_ secret.
func secretKey(secret string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("webhook secret is not whsec_ and Base64")
	}
	return b, nil
}

// PublicKey is the whpk_ form of an Ed25519 public key, as receivers configure it.
func PublicKey(pub ed25519.PublicKey) string {
	return publicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// signer signs one endpoint's deliveries.
type signer struct {
	mac  []byte             // the endpoint's HMAC key
	priv ed25519.PrivateKey // the service's Ed25519 key, nil for an endpoint without v1a
}

// signature is the webhook-signature header of a delivery: v1 (HMAC-SHA256), and v1a
// (Ed25519) when the endpoint asks for it, over "id.timestamp.body".
func (s signer) signature(msgID string, ts int64, body []byte) string {
	content := make([]byte, 0, len(msgID)+len(body)+24)
	content = append(content, msgID...)
	content = append(content, '.')
	content = strconv.AppendInt(content, ts, 10)
	content = append(content, '.')
	content = append(content, body...)
	h := hmac.New(sha256.New, s.mac)
	h.Write(content)
	var sig [sha256.Size]byte
	out := "v1," + base64.StdEncoding.EncodeToString(h.Sum(sig[:0]))
	if s.priv != nil {
		out += " v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(s.priv, content))
	}
	return out
}
