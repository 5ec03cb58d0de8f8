package httpsig_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/intentd/intentd/httpsig"
	"github.com/mr-tron/base58"
)

// now is the verifier's clock in these tests.
var now = time.Unix(1_800_000_000, 0)

// proposal is a proposal's body, about the size of a real one (~200 bytes).
var proposal = []byte(`{"solution":{"sku":"SKU-4821","color":"blue","quantity":2,"unit_price":{"amount":"19.90","currency":"EUR"}},"delivery":{"by":"2027-01-15","to":"DE-10115"},"note":"two blue ones, as asked"}`)

// key is a test key, the same for the same name.
func key(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte(name))
	return ed25519.NewKeyFromSeed(seed[:])
}

func keyID(k ed25519.PrivateKey) string { return base58.Encode(k.Public().(ed25519.PublicKey)) }

// request is a proposal as intentd's server sees it.
func request(body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/intents/7Yh3kq/proposal", bytes.NewReader(body))
	r.Host = "intentd.example"
	r.Header.Set("Content-Type", "application/json")
	return r
}

// signed is a proposal signed by Sign with k, created at now and valid for 300 s.
func signed(t testing.TB, k ed25519.PrivateKey, body []byte) *http.Request {
	t.Helper()
	r := request(body)
	if err := httpsig.Sign(r, body, k, httpsig.Params{Created: now, Expires: now.Add(300 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	return r
}

// signRaw signs r as a signer other than Sign would: covering components, with
// params, the text of the Signature-Input member's parameters (";created=…"), as
// written, signed by k. It builds the signature base itself, independently of the
// package, from RFC 9421 section 2.5.
func signRaw(t testing.TB, r *http.Request, body []byte, k ed25519.PrivateKey, label string, components []string, params string) {
	t.Helper()
	if r.Header.Get("Content-Digest") == "" {
		sum := sha256.Sum256(body)
		r.Header.Set("Content-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":")
	}
	quoted := make([]string, len(components))
	var base strings.Builder
	for i, c := range components {
		quoted[i] = `"` + c + `"`
		var v string
		switch c {
		case "@method":
			v = r.Method
		case "@authority":
			v = r.Host
		case "@path":
			v = r.URL.Path
		default:
			v = r.Header.Get(c)
		}
		fmt.Fprintf(&base, "%q: %s\n", c, v)
	}
	member := "(" + strings.Join(quoted, " ") + ")" + params
	base.WriteString(`"@signature-params": ` + member)
	sig := ed25519.Sign(k, []byte(base.String()))
	r.Header.Add("Signature-Input", label+"="+member)
	r.Header.Add("Signature", label+"=:"+base64.StdEncoding.EncodeToString(sig)+":")
}

// all are the components Sign covers.
var all = []string{"@method", "@authority", "@path", "content-digest"}

// params is a valid parameter text for k: created at now, valid 300 s.
func params(k ed25519.PrivateKey) string {
	return fmt.Sprintf(`;created=%d;expires=%d;nonce="n-1";alg="ed25519";keyid="%s"`, now.Unix(), now.Unix()+300, keyID(k))
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func sign(k ed25519.PrivateKey, base string) []byte { return ed25519.Sign(k, []byte(base)) }

// canonical is httpsfv's serialization of an inner list with parameters.
func canonical(t testing.TB, raw string) string {
	t.Helper()
	l, err := httpsfv.UnmarshalList([]string{raw})
	if err != nil || len(l) != 1 {
		t.Fatalf("%q: %v", raw, err)
	}
	s, err := httpsfv.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
