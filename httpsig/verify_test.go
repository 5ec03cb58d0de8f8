package httpsig_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/httpsig"
)

// TestRoundTrip signs a proposal with Sign and verifies it with Verify, and checks
// what Verify says of it.
func TestRoundTrip(t *testing.T) {
	k := key("agent")
	r := request(proposal)
	err := httpsig.Sign(r, proposal, k, httpsig.Params{Created: now, Expires: now.Add(300 * time.Second), Tag: "agent-payer-auth"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := httpsig.Verify(r, proposal, now, httpsig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Label != "sig1" || v.KeyID != keyID(k) || !v.Key.Equal(k.Public()) || v.Tag != "agent-payer-auth" ||
		len(v.Nonce) != 43 || !v.Created.Equal(now) || !v.Expires.Equal(now.Add(300*time.Second)) || len(v.Signature) != 64 {
		t.Fatalf("Verified = %+v", v)
	}
	if !httpsig.VerifyBase(v.Key, v.Base, v.Signature) {
		t.Fatal("VerifyBase refuses what Verify accepted")
	}
	comps, params, err := httpsig.BaseComponents(v.Base)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"@method": "POST", "@authority": "intentd.example", "@path": "/intents/7Yh3kq/proposal",
		"content-digest": httpsig.ContentDigest(proposal)}
	if fmt.Sprint(comps) != fmt.Sprint(want) {
		t.Fatalf("components %v, want %v", comps, want)
	}
	if got := strings.TrimPrefix(r.Header.Get("Signature-Input"), "sig1="); params != got {
		t.Fatalf("@signature-params %q, Signature-Input has %q", params, got)
	}
	wantParams := fmt.Sprintf(`("@method" "@authority" "@path" "content-digest");created=%d;expires=%d;nonce="%s";alg="ed25519";keyid="%s";tag="agent-payer-auth"`,
		now.Unix(), now.Unix()+300, v.Nonce, keyID(k))
	if params != wantParams {
		t.Fatalf("@signature-params %q, want %q", params, wantParams)
	}
}

// TestVerifyRefuses names, for each reason Verify refuses, a request that earns it,
// and what the refusal says.
func TestVerifyRefuses(t *testing.T) {
	k, other := key("agent"), key("other")
	ts := func(s int64) int64 { return now.Unix() + s } // now, plus s seconds
	cases := []struct {
		name   string
		req    func(t *testing.T) *http.Request
		body   []byte        // what the server read; proposal when nil
		at     time.Duration // the verifier's clock, from now
		opts   httpsig.Options
		reason httpsig.Reason
		says   string // a part of the message
	}{
		{name: "unsigned", reason: httpsig.Missing, says: "not signed",
			req: func(t *testing.T) *http.Request { return request(proposal) }},
		{name: "no Signature", reason: httpsig.Missing, says: "no Signature",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Del("Signature")
				return r
			}},
		{name: "no Signature-Input", reason: httpsig.Missing, says: "no Signature-Input",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Del("Signature-Input")
				return r
			}},
		{name: "malformed Signature-Input", reason: httpsig.Malformed, says: "not an RFC 8941 dictionary",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Set("Signature-Input", `sig1=("@method" "@path"`)
				return r
			}},
		{name: "Signature-Input member not a list", reason: httpsig.Malformed, says: "not an inner list",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Set("Signature-Input", `sig1="@method"`)
				return r
			}},
		{name: "malformed Signature", reason: httpsig.Malformed, says: "not a byte sequence",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Set("Signature", `sig1="AAAA"`)
				return r
			}},
		{name: "short signature", reason: httpsig.Malformed, says: "is 3 bytes",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Set("Signature", `sig1=:AAAA:`)
				return r
			}},
		{name: "Signature lacks the label", reason: httpsig.Missing, says: `no member "sig1"`,
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Set("Signature", strings.Replace(r.Header.Get("Signature"), "sig1=", "sig2=", 1))
				return r
			}},
		{name: "label twice", reason: httpsig.Malformed, says: "twice",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Add("Signature-Input", r.Header.Get("Signature-Input"))
				return r
			}},
		{name: "wrong alg", reason: httpsig.Unsupported, says: `alg "rsa-pss-sha512" is not supported`,
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, strings.Replace(params(k), "ed25519", "rsa-pss-sha512", 1))
				return r
			}},
		{name: "keyid not Base58", reason: httpsig.BadKey, says: `keyid "test-key-ed25519" is not a Base58 Ed25519 public key`,
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, strings.Replace(params(k), keyID(k), "test-key-ed25519", 1))
				return r
			}},
		{name: "keyid of 31 bytes", reason: httpsig.BadKey, says: "31 bytes",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, strings.Replace(params(k), keyID(k), keyID(k)[:len(keyID(k))-1], 1))
				return r
			}},
		{name: "no keyid", reason: httpsig.BadKey, says: "has no keyid",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, fmt.Sprintf(`;created=%d;expires=%d;nonce="n"`, ts(0), ts(300)))
				return r
			}},
		{name: "content-digest not covered", reason: httpsig.MissingComponent, says: `signature "sig1" does not cover "content-digest"`,
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all[:3], params(k))
				return r
			}},
		{name: "@path not covered", reason: httpsig.MissingComponent, says: `does not cover "@path"`,
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", []string{"@method", "@authority", "content-digest"}, params(k))
				return r
			}},
		{name: "covered header absent", reason: httpsig.MissingComponent, says: `covers "x-agent" but the request has no x-agent header`,
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", append([]string{"x-agent"}, all...), params(k))
				return r
			}},
		{name: "component with parameters", reason: httpsig.Unsupported, says: "parameters",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, params(k))
				r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), `("@method"`, `("content-type";sf "@method"`, 1))
				return r
			}},
		{name: "@query-param", reason: httpsig.Unsupported, says: "not supported",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", append([]string{"@query-param"}, all...), params(k))
				return r
			}},
		{name: "upper-case header name", reason: httpsig.Malformed, says: "lower-case",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", append([]string{"Content-Type"}, all...), params(k))
				return r
			}},
		{name: "component twice", reason: httpsig.Malformed, says: `covers "@path" twice`,
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", append([]string{"@path"}, all...), params(k))
				return r
			}},
		{name: "no nonce", reason: httpsig.NoNonce, says: "has no nonce",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, strings.Replace(params(k), `;nonce="n-1"`, "", 1))
				return r
			}},
		{name: "empty nonce", reason: httpsig.NoNonce, says: "empty nonce",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, strings.Replace(params(k), `"n-1"`, `""`, 1))
				return r
			}},
		{name: "nonce not a string", reason: httpsig.Malformed, says: "nonce is not a string",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, strings.Replace(params(k), `"n-1"`, `7`, 1))
				return r
			}},
		{name: "no created", reason: httpsig.NoCreated, says: "has no created",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, fmt.Sprintf(`;expires=%d;nonce="n";keyid="%s"`, ts(300), keyID(k)))
				return r
			}},
		{name: "no expires", reason: httpsig.NoExpires, says: "has no expires",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, fmt.Sprintf(`;created=%d;nonce="n";keyid="%s"`, ts(0), keyID(k)))
				return r
			}},
		{name: "created not an integer", reason: httpsig.Malformed, says: "created is not an integer",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, fmt.Sprintf(`;created="%d";expires=%d;nonce="n";keyid="%s"`, ts(0), ts(300), keyID(k)))
				return r
			}},
		{name: "expires before created", reason: httpsig.Malformed, says: "is not after created",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, fmt.Sprintf(`;created=%d;expires=%d;nonce="n";keyid="%s"`, ts(0), ts(0), keyID(k)))
				return r
			}},
		{name: "window too long", reason: httpsig.WindowTooLong, says: `signature "sig1": expires - created is 600 s, more than the 480 s allowed`,
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, fmt.Sprintf(`;created=%d;expires=%d;nonce="n";keyid="%s"`, ts(0), ts(600), keyID(k)))
				return r
			}},
		{name: "window longer than configured", reason: httpsig.WindowTooLong, says: "300 s, more than the 120 s allowed",
			opts: httpsig.Options{MaxWindow: 2 * time.Minute},
			req:  func(t *testing.T) *http.Request { return signed(t, k, proposal) }},
		{name: "expired", at: 361 * time.Second, reason: httpsig.Expired, says: "expired 61 s ago",
			req: func(t *testing.T) *http.Request { return signed(t, k, proposal) }},
		{name: "expired, smaller skew", at: 301 * time.Second, opts: httpsig.Options{Skew: time.Second}, reason: httpsig.Expired, says: "expired",
			req: func(t *testing.T) *http.Request { return signed(t, k, proposal) }},
		{name: "not yet valid", at: -61 * time.Second, reason: httpsig.NotYetValid, says: "created is 61 s in the future, more than the 60 s",
			req: func(t *testing.T) *http.Request { return signed(t, k, proposal) }},
		{name: "body changed", body: append(bytes.Clone(proposal), ' '), reason: httpsig.DigestMismatch, says: "the body's sha-256 is not the one Content-Digest states",
			req: func(t *testing.T) *http.Request { return signed(t, k, proposal) }},
		{name: "no Content-Digest", reason: httpsig.DigestMismatch, says: "no Content-Digest header",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Del("Content-Digest")
				return r
			}},
		{name: "Content-Digest without sha-256", reason: httpsig.DigestMismatch, says: "no sha-256 member",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				r.Header.Set("Content-Digest", "sha-512=:AAAA:")
				signRaw(t, r, proposal, k, "sig1", all, params(k))
				return r
			}},
		{name: "Content-Digest malformed", reason: httpsig.Malformed, says: "Content-Digest is not an RFC 8941 dictionary",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				r.Header.Set("Content-Digest", "sha-256=:AAAA")
				signRaw(t, r, proposal, k, "sig1", all, params(k))
				return r
			}},
		{name: "signed by another key", reason: httpsig.BadSignature, says: "does not verify with key " + keyID(k),
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, other, "sig1", all, params(k))
				return r
			}},
		{name: "path tampered", reason: httpsig.BadSignature, says: "does not verify",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.URL.Path = "/intents/other/proposal"
				return r
			}},
		{name: "method tampered", reason: httpsig.BadSignature, says: "does not verify",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Method = http.MethodPut
				return r
			}},
		{name: "authority tampered", reason: httpsig.BadSignature, says: "does not verify",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Host = "evil.example"
				return r
			}},
		{name: "params tampered", reason: httpsig.BadSignature, says: "does not verify",
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), fmt.Sprint(ts(300)), fmt.Sprint(ts(301)), 1))
				return r
			}},
		{name: "digest and body replaced", reason: httpsig.BadSignature, says: "does not verify", body: []byte(`{}`),
			req: func(t *testing.T) *http.Request {
				r := signed(t, k, proposal)
				r.Header.Set("Content-Digest", httpsig.ContentDigest([]byte(`{}`)))
				return r
			}},
		{name: "no usable label among several", reason: httpsig.Unsupported, says: `signature "a"`,
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "a", all, strings.Replace(params(k), "ed25519", "hmac-sha256", 1))
				signRaw(t, r, proposal, k, "b", all, strings.Replace(params(k), keyID(k), "kid-2", 1))
				return r
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body
			if body == nil {
				body = proposal
			}
			v, err := httpsig.Verify(c.req(t), body, now.Add(c.at), c.opts)
			var e *httpsig.Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify = %+v, %v; want a %s refusal", v, err, c.reason)
			}
			t.Log(e)
			if e.Reason != c.reason || !strings.Contains(e.Error(), c.says) {
				t.Fatalf("Verify refused with %s: %s\nwant %s, saying %q", e.Reason, e, c.reason, c.says)
			}
		})
	}
}

// TestVerifyAccepts names requests at the edges of the rules that verify.
func TestVerifyAccepts(t *testing.T) {
	k := key("agent")
	cases := []struct {
		name  string
		req   func(t *testing.T) *http.Request
		at    time.Duration
		opts  httpsig.Options
		label string
	}{
		{name: "expired within the skew", at: 359 * time.Second,
			req: func(t *testing.T) *http.Request { return signed(t, k, proposal) }},
		{name: "created within the skew", at: -59 * time.Second,
			req: func(t *testing.T) *http.Request { return signed(t, k, proposal) }},
		{name: "window of 480 s",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, fmt.Sprintf(`;created=%d;expires=%d;nonce="n";keyid="%s"`, now.Unix(), now.Unix()+480, keyID(k)))
				return r
			}},
		{name: "no alg", label: "sig1",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, strings.Replace(params(k), `;alg="ed25519"`, "", 1))
				return r
			}},
		{name: "first usable label", label: "mine",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "rsa", all, strings.Replace(params(k), "ed25519", "rsa-pss-sha512", 1))
				signRaw(t, r, proposal, k, "jwk", all, strings.Replace(params(k), keyID(k), "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U", 1))
				signRaw(t, r, proposal, k, "mine", all, params(k))
				return r
			}},
		{name: "extra components and parameters", label: "sig1",
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", append([]string{"content-type"}, all...), params(k)+`;tag="web-bot-auth";x-other=?1`)
				return r
			}},
		{name: "nothing required", opts: httpsig.Options{Required: []string{}},
			req: func(t *testing.T) *http.Request {
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", []string{"@method"}, params(k))
				r.Header.Del("Content-Digest")
				return r
			}},
		{name: "server of the request", label: "sig1",
			req: func(t *testing.T) *http.Request {
				// A request signed for https://Intentd.Example:443/... verifies as received
				// over TLS with that Host.
				r := request(proposal)
				signRaw(t, r, proposal, k, "sig1", all, params(k))
				r.Host = "Intentd.Example:443"
				r.URL.Scheme = "https"
				return r
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := httpsig.Verify(c.req(t), proposal, now.Add(c.at), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.label != "" && v.Label != c.label {
				t.Fatalf("verified label %q, want %q", v.Label, c.label)
			}
		})
	}
}

// TestRawSignatureParams shows why the "@signature-params" line is the sender's own
// text: RFC 8941 allows spaces inside an inner list and after a ";", which a
// re-serialization drops, and a signer that signed its own spelling must verify.
func TestRawSignatureParams(t *testing.T) {
	k := key("agent")
	r := request(proposal)
	spaced := fmt.Sprintf(`;created=%d; expires=%d;  nonce="n";keyid="%s"`, now.Unix(), now.Unix()+300, keyID(k))
	signRaw(t, r, proposal, k, "sig1", all, spaced)
	r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), `("@method" "@authority"`, `( "@method"  "@authority"`, 1))
	// Signed again over the spaced text: what this signer writes is what it signs.
	sigInput := r.Header.Get("Signature-Input")
	r.Header.Del("Signature-Input")
	r.Header.Del("Signature")
	raw := strings.TrimPrefix(sigInput, "sig1=")
	base := fmt.Sprintf("\"@method\": POST\n\"@authority\": intentd.example\n\"@path\": /intents/7Yh3kq/proposal\n\"content-digest\": %s\n\"@signature-params\": %s",
		httpsig.ContentDigest(proposal), raw)
	r.Header.Set("Signature-Input", sigInput)
	r.Header.Set("Signature", "sig1=:"+b64(sign(k, base))+":")

	v, err := httpsig.Verify(r, proposal, now, httpsig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(v.Base) != base {
		t.Fatalf("base\n%s\nwant\n%s", v.Base, base)
	}
	_, params, err := httpsig.BaseComponents(v.Base)
	if err != nil || params != raw {
		t.Fatalf("BaseComponents: %q, %v; want %q", params, err, raw)
	}
	if canon := canonical(t, raw); canon == raw {
		t.Fatalf("httpsfv serializes %q as it is; the test needs a spelling it changes", raw)
	}
}
