package httpsig

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"github.com/dunglas/httpsfv"
)

// ContentDigest returns the Content-Digest header value for body: "sha-256=:BASE64:"
// (RFC 9530). SHA-256 is the one algorithm Verify checks, so it is the one a signer
// needs to send.
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// checkDigest checks that h's Content-Digest states body's SHA-256. Other algorithms
// in the header are ignored: a sender may add sha-512 for other readers, and
// checking one strong digest is enough to bind the body to the signature.
func checkDigest(h http.Header, body []byte) *Error {
	values := h.Values("Content-Digest")
	if len(values) == 0 {
		return refuse(DigestMismatch, "the request has no Content-Digest header; send Content-Digest: %s, the sha-256 of the body (RFC 9530), and cover it with the signature", ContentDigest(body))
	}
	if stated, ok := readBytesMember(values, "sha-256"); ok {
		return compareDigest(stated, body)
	}
	dict, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return refuse(Malformed, "Content-Digest is not an RFC 8941 dictionary (%v); send Content-Digest: %s", err, ContentDigest(body))
	}
	m, ok := dict.Get("sha-256")
	if !ok {
		return refuse(DigestMismatch, "Content-Digest has no sha-256 member; sha-256 is the algorithm checked here: send Content-Digest: %s", ContentDigest(body))
	}
	item, ok := m.(httpsfv.Item)
	stated, isBytes := item.Value.([]byte)
	if !ok || !isBytes {
		return refuse(Malformed, "the sha-256 member of Content-Digest is not a byte sequence; write it between colons in base64: %s", ContentDigest(body))
	}
	return compareDigest(stated, body)
}

// compareDigest checks that stated is body's SHA-256.
func compareDigest(stated, body []byte) *Error {
	sum := sha256.Sum256(body)
	if !bytes.Equal(stated, sum[:]) {
		return refuse(DigestMismatch, "the body's sha-256 is not the one Content-Digest states: the body was changed after signing, or the digest was computed over other bytes (the body's is %s)", ContentDigest(body))
	}
	return nil
}
