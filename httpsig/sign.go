package httpsig

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/mr-tron/base58"
)

// signed are the components Sign covers, in this order: what a proposal means is
// its method, where it goes and its body (through Content-Digest).
var signed = []string{"@method", "@authority", "@path", "content-digest"}

// Params are what a signer chooses.
type Params struct {
	Label   string    // signature label; "" means "sig1"
	Created time.Time // required
	Expires time.Time // required, after Created
	Nonce   string    // "" means 32 random bytes, base64url without padding
	Tag     string    // optional, e.g. "agent-payer-auth"
}

// Sign sets Content-Digest (sha-256 of body), Signature-Input and Signature on r,
// covering "@method" "@authority" "@path" "content-digest" (in that order), with
// created, expires, nonce, alg="ed25519", keyid=<base58 public key>, and tag when
// set. A request that already carries signatures keeps them: Sign adds its own
// member to each header, under a label they do not use yet.
//
// It is what intentd's tests and Go agents use; the signature base it signs is the
// one Verify rebuilds, so that r, sent as it is, verifies.
func Sign(r *http.Request, body []byte, key ed25519.PrivateKey, p Params) error {
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("httpsig: the private key is %d bytes, not %d", len(key), ed25519.PrivateKeySize)
	}
	if p.Created.IsZero() || p.Expires.IsZero() {
		return errors.New("httpsig: Params.Created and Params.Expires must be set: Verify refuses a signature without them")
	}
	if !p.Expires.After(p.Created) {
		return errors.New("httpsig: Params.Expires is not after Params.Created")
	}
	label := p.Label
	if label == "" {
		label = "sig1"
	}
	nonce := p.Nonce
	if nonce == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("httpsig: a nonce: %w", err)
		}
		nonce = base64.RawURLEncoding.EncodeToString(b)
	}
	if r.Header == nil {
		r.Header = make(http.Header)
	}

	params := httpsfv.NewParams()
	params.Add("created", p.Created.Unix())
	params.Add("expires", p.Expires.Unix())
	params.Add("nonce", nonce)
	params.Add("alg", "ed25519")
	params.Add("keyid", base58.Encode(key.Public().(ed25519.PublicKey)))
	if p.Tag != "" {
		params.Add("tag", p.Tag)
	}
	il := httpsfv.InnerList{Params: params}
	for _, c := range signed {
		il.Items = append(il.Items, httpsfv.NewItem(c))
	}
	raw, err := httpsfv.Marshal(il)
	if err != nil {
		return fmt.Errorf("httpsig: the signature parameters: %w", err)
	}
	// The label goes through httpsfv too, which refuses one that is not an RFC 8941
	// key.
	input := httpsfv.NewDictionary()
	input.Add(label, il)
	inputMember, err := httpsfv.Marshal(input)
	if err != nil {
		return fmt.Errorf("httpsig: label %q: %w", label, err)
	}
	for _, name := range []string{"Signature-Input", "Signature"} {
		if vs := r.Header.Values(name); len(vs) > 0 {
			d, err := httpsfv.UnmarshalDictionary(vs)
			if err != nil {
				return fmt.Errorf("httpsig: the request's %s header: %w", name, err)
			}
			if _, taken := d.Get(label); taken {
				return fmt.Errorf("httpsig: the request already has a signature labelled %q", label)
			}
		}
	}

	r.Header.Set("Content-Digest", ContentDigest(body))
	base, berr := buildBase(r, label, signed, raw)
	if berr != nil {
		return fmt.Errorf("httpsig: %w", berr)
	}
	sig := ed25519.Sign(key, base)
	sigMember := label + "=:" + base64.StdEncoding.EncodeToString(sig) + ":"
	appendMember(r.Header, "Signature-Input", inputMember)
	appendMember(r.Header, "Signature", sigMember)
	return nil
}

// appendMember adds a dictionary member to header name, after the members already
// there.
func appendMember(h http.Header, name, m string) {
	if vs := h.Values(name); len(vs) > 0 {
		m = strings.Join(vs, ", ") + ", " + m
	}
	h.Set(name, m)
}
