package httpsig

import "encoding/base64"

// readBytesMember reads a dictionary header (Signature, Content-Digest) sent as one
// line of one member, key=:BASE64:, as agents send them, and returns key's byte
// sequence. It reports false for any other spelling (several lines or members,
// parameters, spaces, another key), which httpsfv then reads: what it accepts,
// httpsfv reads alike (FuzzReadBytesMember). It spares each signed proposal two of
// httpsfv's dictionaries, their maps and their copies.
func readBytesMember(values []string, key string) ([]byte, bool) {
	if len(values) != 1 || keyLen(key) != len(key) {
		return nil, false
	}
	v := values[0]
	if len(v) < len(key)+3 || v[:len(key)] != key || v[len(key)] != '=' || v[len(key)+1] != ':' || v[len(v)-1] != ':' {
		return nil, false
	}
	b64 := v[len(key)+2 : len(v)-1]
	for i := 0; i < len(b64); i++ {
		if c := b64[i]; !isAlpha(c) && !isDigit(c) && c != '+' && c != '/' && c != '=' {
			return nil, false
		}
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	return b, err == nil
}
