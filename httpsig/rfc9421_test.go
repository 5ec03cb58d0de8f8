package httpsig

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

// sections reads a test-vector file: a free-text header, then sections, each from a
// "-- name --" line to the next, without its last line break.
func sections(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	name := ""
	var cur []string
	flush := func() {
		if name != "" {
			out[name] = strings.Join(cur, "\n")
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
			flush()
			name, cur = strings.TrimSuffix(strings.TrimPrefix(line, "-- "), " --"), nil
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// rfcVectors is RFC 9421's Appendix B.2.6: its request, with the Signature-Input and
// Signature of the example, and the key test-key-ed25519 of Appendix B.1.4.
type rfcVectors struct {
	request *http.Request
	body    []byte
	base    string
	sig     []byte
	priv    ed25519.PrivateKey
	pub     ed25519.PublicKey
}

func loadRFC(t *testing.T) rfcVectors {
	t.Helper()
	s := sections(t, "testdata/rfc9421-b26.txt")
	var v rfcVectors
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(s["request"] + "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if v.body, err = readAll(r); err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Signature-Input", s["signature-input"])
	r.Header.Set("Signature", s["signature"])
	v.request, v.base = r, s["base"]

	sig := strings.TrimSuffix(strings.TrimPrefix(s["signature"], "sig-b26=:"), ":")
	if v.sig, err = base64.StdEncoding.DecodeString(sig); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(s["private-key-pem"]))
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	v.priv = k.(ed25519.PrivateKey)
	block, _ = pem.Decode([]byte(s["public-key-pem"]))
	pk, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	v.pub = pk.(ed25519.PublicKey)

	// The appendix gives the key twice, as PEM and as JWK: both must be one key.
	x, _ := base64.RawURLEncoding.DecodeString(s["jwk-x"])
	d, _ := base64.RawURLEncoding.DecodeString(s["jwk-d"])
	if !bytes.Equal(x, v.pub) || !bytes.Equal(d, v.priv.Seed()) || !v.pub.Equal(v.priv.Public()) {
		t.Fatal("the PEM and JWK forms of test-key-ed25519 are not one key")
	}
	return v
}

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	return b.Bytes(), err
}

// TestRFC9421B26 checks the signature base of RFC 9421 Appendix B.2.6 byte for
// byte, and the RFC's signature against the RFC's key, both ways.
func TestRFC9421B26(t *testing.T) {
	v := loadRFC(t)

	t.Run("request", func(t *testing.T) {
		// The appendix's Content-Digest is the body's sha-512: the request read here
		// is the RFC's.
		sum := sha512.Sum512(v.body)
		want := "sha-512=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
		if got := v.request.Header.Get("Content-Digest"); got != want || string(v.body) != `{"hello": "world"}` {
			t.Fatalf("Content-Digest %q over body %q; want %q", got, v.body, want)
		}
	})

	t.Run("base", func(t *testing.T) {
		joined := v.request.Header.Get("Signature-Input")
		members, ok := splitDictionary(joined)
		if !ok || len(members) != 1 || members[0].key != "sig-b26" {
			t.Fatalf("splitDictionary(%q) = %v, %v", joined, members, ok)
		}
		one, err := httpsfv.UnmarshalDictionary([]string{joined})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := one.Get("sig-b26")
		var names []string
		for _, it := range m.(httpsfv.InnerList).Items {
			names = append(names, it.Value.(string))
		}
		base, berr := buildBase(v.request, "sig-b26", names, members[0].value)
		if berr != nil {
			t.Fatal(berr)
		}
		if string(base) != v.base {
			t.Fatalf("base:\n%s\nRFC 9421 B.2.6:\n%s", base, v.base)
		}
		// The raw member is also what httpsfv serializes here: the RFC's signer
		// wrote the canonical form.
		if canon, err := httpsfv.Marshal(m.(httpsfv.InnerList)); err != nil || canon != members[0].value {
			t.Fatalf("httpsfv serializes %q, the header has %q", canon, members[0].value)
		}
	})

	t.Run("verify", func(t *testing.T) {
		if !VerifyBase(v.pub, []byte(v.base), v.sig) {
			t.Fatal("the RFC's signature does not verify over the RFC's base with test-key-ed25519")
		}
		if VerifyBase(v.pub, []byte(v.base+" "), v.sig) {
			t.Fatal("the RFC's signature verifies over another base")
		}
	})

	t.Run("sign", func(t *testing.T) {
		// Ed25519 is deterministic: signing the base with the RFC's private key gives
		// the RFC's signature.
		if got := ed25519.Sign(v.priv, []byte(v.base)); !bytes.Equal(got, v.sig) {
			t.Fatalf("signature %s; RFC 9421 B.2.6 has %s", base64.StdEncoding.EncodeToString(got), base64.StdEncoding.EncodeToString(v.sig))
		}
	})

	t.Run("components", func(t *testing.T) {
		comps, params, err := BaseComponents([]byte(v.base))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"date": "Tue, 20 Apr 2021 02:07:55 GMT", "@method": "POST", "@path": "/foo",
			"@authority": "example.com", "content-type": "application/json", "content-length": "18"}
		if len(comps) != len(want) || params != strings.TrimPrefix(v.request.Header.Get("Signature-Input"), "sig-b26=") {
			t.Fatalf("BaseComponents = %v, %q", comps, params)
		}
		for k, w := range want {
			if comps[k] != w {
				t.Errorf("%s = %q, want %q", k, comps[k], w)
			}
		}
	})

	t.Run("Verify refuses its keyid", func(t *testing.T) {
		// The RFC names its key "test-key-ed25519", which is no Base58 key, and its
		// signature has no expires or nonce: intentd's rules refuse it at the first.
		_, err := Verify(v.request, v.body, time.Unix(1618884473, 0), Options{Required: []string{}})
		var e *Error
		if !errors.As(err, &e) || e.Reason != BadKey {
			t.Fatalf("Verify = %v, want a %s refusal", err, BadKey)
		}
	})
}
