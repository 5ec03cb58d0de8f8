package httpsig

import "net/http"

// DigestMatches reports whether a Content-Digest value, as a signature base records
// it, states body's SHA-256: what an offline verifier checks of a recorded base and
// the body it came with.
func DigestMatches(value string, body []byte) bool {
	return checkDigest(http.Header{"Content-Digest": {value}}, body) == nil
}
