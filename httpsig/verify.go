package httpsig

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// DefaultMaxWindow is the largest expires - created Verify accepts by default: long
// enough for an agent's request to cross a slow network, short enough that a copied
// request is soon useless.
const DefaultMaxWindow = 480 * time.Second

// DefaultSkew is the clock skew Verify allows by default on created and expires,
// since an agent's clock and the server's are never quite the same.
const DefaultSkew = 60 * time.Second

// DefaultRequired are the components a signature must cover when Options.Required
// is nil: what a proposal means is its method, its target and its body, so all three
// are signed.
var DefaultRequired = []string{"@method", "@authority", "@path", "content-digest"}

// Options are what a verifier requires.
type Options struct {
	MaxWindow time.Duration // largest expires-created; 0 means DefaultMaxWindow (480 s)
	Skew      time.Duration // clock skew allowed on created and expires; 0 means DefaultSkew (60 s)
	Required  []string      // components that must be covered; nil means DefaultRequired
}

// Verified is a signature that verified: who signed (the key), what (the base, which
// a caller keeps as evidence) and when.
type Verified struct {
	Label     string
	KeyID     string            // the Base58 key as sent
	Key       ed25519.PublicKey // the key KeyID names
	Tag       string            // "" when absent
	Nonce     string
	Created   time.Time
	Expires   time.Time
	Base      []byte // the signature base (RFC 9421 section 2.5), exactly what was signed
	Signature []byte // the 64-byte Ed25519 signature
}

// Present reports whether h carries a Signature or Signature-Input header, so that a
// caller can tell an unsigned request (which it may treat otherwise) from one whose
// signature is wrong (which it refuses).
func Present(h http.Header) bool {
	return len(h.Values("Signature")) > 0 || len(h.Values("Signature-Input")) > 0
}

// Verify checks r's signature over body at time now. With several labels, it uses
// the first one (in Signature-Input order) whose alg is ed25519 or absent and whose
// keyid is a Base58 Ed25519 key; other labels are ignored. body is the request's
// body, which the caller has read; Verify checks it against Content-Digest whenever
// the signature covers content-digest. A refusal is an *Error whose Reason says why
// and whose text says what the sender should fix.
//
// Verify keeps no state of requests: it does not remember nonces, so the same signed
// request verifies again until it expires. It remembers only keys that signed, up to
// a bound, in forms that are quicker to check with: what a keyid decodes to, and the
// key's expanded form (docs/benchmarks.md, "Signed proposals"). A caller that must refuse a replay within the
// window remembers Verified.Nonce per key until Verified.Expires (plus the skew).
func Verify(r *http.Request, body []byte, now time.Time, o Options) (*Verified, error) {
	v, err := verify(r, body, now, o)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// verify is Verify with the concrete error type, so that a nil *Error is never
// returned as a non-nil error.
func verify(r *http.Request, body []byte, now time.Time, o Options) (*Verified, *Error) {
	if r == nil || r.URL == nil {
		return nil, refuse(Malformed, "there is no request to verify")
	}
	inputs, sigs := r.Header.Values("Signature-Input"), r.Header.Values("Signature")
	switch {
	case len(inputs) == 0 && len(sigs) == 0:
		return nil, refuse(Missing, "the request is not signed: it has no Signature-Input or Signature header (RFC 9421)")
	case len(inputs) == 0:
		return nil, refuse(Missing, "the request has a Signature header but no Signature-Input saying what it covers")
	case len(sigs) == 0:
		return nil, refuse(Missing, "the request has a Signature-Input header but no Signature")
	}
	in, err := selectInput(inputs)
	if err != nil {
		return nil, err
	}
	sig, err := signatureOf(sigs, in.label)
	if err != nil {
		return nil, err
	}

	required := o.Required
	if required == nil {
		required = DefaultRequired
	}
	for _, c := range required {
		if !slices.Contains(in.components, c) {
			return nil, refuse(MissingComponent, "signature %q does not cover %q; cover %s", in.label, c, quoteAll(required))
		}
	}

	v := &Verified{Label: in.label, KeyID: in.keyID, Key: in.key, Signature: sig}
	created, err := unixParam(in, "created", NoCreated)
	if err != nil {
		return nil, err
	}
	expires, err := unixParam(in, "expires", NoExpires)
	if err != nil {
		return nil, err
	}
	nonce, ok := in.params.Get("nonce")
	if !ok {
		return nil, refuse(NoNonce, "signature %q has no nonce; add nonce=\"<random string>\", a new one for each request", in.label)
	}
	if v.Nonce, ok = nonce.(string); !ok {
		return nil, refuse(Malformed, "signature %q: nonce is not a string; write nonce=\"…\"", in.label)
	}
	if v.Nonce == "" {
		return nil, refuse(NoNonce, "signature %q has an empty nonce; send a new random one for each request", in.label)
	}
	if tag, ok := in.params.Get("tag"); ok {
		if v.Tag, ok = tag.(string); !ok {
			return nil, refuse(Malformed, "signature %q: tag is not a string; write tag=\"…\"", in.label)
		}
	}
	if err := checkTimes(in.label, created, expires, now, o); err != nil {
		return nil, err
	}
	v.Created, v.Expires = time.Unix(created, 0), time.Unix(expires, 0)

	if slices.Contains(in.components, "content-digest") {
		if err := checkDigest(r.Header, body); err != nil {
			return nil, err
		}
	}
	base, err := buildBase(r, in.label, in.components, in.raw)
	if err != nil {
		return nil, err
	}
	if !verifyEd25519(in.key, base, sig) {
		return nil, refuse(BadSignature, "signature %q does not verify with key %s: the request differs from what was signed (method, authority, path or a covered header), or another key signed it", in.label, in.keyID)
	}
	// The keyid named a key that signed: its decoding is kept for the agent's next
	// request (keyIDs), apart from v.Key, which is the caller's. Only a keyid
	// decodeKey accepted gets here.
	if _, kept := keyIDs.get(in.keyID); !kept {
		keyIDs.put(in.keyID, bytes.Clone(in.key))
	}
	v.Base = base
	return v, nil
}

// signatureOf is the Ed25519 signature that the Signature header holds for label.
func signatureOf(values []string, label string) ([]byte, *Error) {
	if sig, ok := readBytesMember(values, label); ok && len(sig) == ed25519.SignatureSize {
		return sig, nil
	}
	dict, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return nil, refuse(Malformed, "Signature is not an RFC 8941 dictionary (%v); write %s=:<base64 signature>:", err, label)
	}
	m, ok := dict.Get(label)
	if !ok {
		return nil, refuse(Missing, "the Signature header has no member %q, the label Signature-Input gives", label)
	}
	item, ok := m.(httpsfv.Item)
	sig, isBytes := item.Value.([]byte)
	if !ok || !isBytes {
		return nil, refuse(Malformed, "signature %q: the Signature member is not a byte sequence; write %s=:<base64 signature>:", label, label)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, refuse(Malformed, "signature %q is %d bytes; an Ed25519 signature is 64", label, len(sig))
	}
	return sig, nil
}

// unixParam reads the created or expires parameter: an integer of Unix seconds.
func unixParam(in *input, name string, absent Reason) (int64, *Error) {
	v, ok := in.params.Get(name)
	if !ok {
		return 0, refuse(absent, "signature %q has no %s; add %s=<Unix seconds>", in.label, name, name)
	}
	n, ok := v.(int64)
	if !ok {
		return 0, refuse(Malformed, "signature %q: %s is not an integer; write %s=<Unix seconds>", in.label, name, name)
	}
	return n, nil
}

// checkTimes applies the validity rules: expires after created, a window no longer
// than MaxWindow, created no further ahead than Skew, expires not passed by more
// than Skew. It counts in seconds, as the parameters do, so that no large value
// overflows a Duration.
func checkTimes(label string, created, expires int64, now time.Time, o Options) *Error {
	maxWindow, skew := o.MaxWindow, o.Skew
	if maxWindow <= 0 {
		maxWindow = DefaultMaxWindow
	}
	if skew <= 0 {
		skew = DefaultSkew
	}
	maxSec, skewSec := int64(maxWindow/time.Second), int64(skew/time.Second)
	if expires <= created {
		return refuse(Malformed, "signature %q: expires (%d) is not after created (%d); a signature is valid from created to expires", label, expires, created)
	}
	if expires-created > maxSec {
		return refuse(WindowTooLong, "signature %q: expires - created is %d s, more than the %d s allowed", label, expires-created, maxSec)
	}
	t := now.Unix()
	if created > t+skewSec {
		return refuse(NotYetValid, "signature %q: created is %d s in the future, more than the %d s of clock skew allowed; check the signer's clock", label, created-t, skewSec)
	}
	if expires <= t-skewSec {
		return refuse(Expired, "signature %q expired %d s ago; sign the request again", label, t-expires)
	}
	return nil
}

// VerifyBase checks sig over base with key: what an offline verifier does with a
// recorded base. It reports false for a key or signature of the wrong size rather
// than panicking.
func VerifyBase(key ed25519.PublicKey, base, sig []byte) bool {
	if len(key) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return false
	}
	return verifyEd25519(key, base, sig)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, " ")
}
