package httpsig_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/httpsig"
)

// TestSign covers what Sign does beyond the round trip: defaults, a second
// signature beside a first, and the inputs it refuses.
func TestSign(t *testing.T) {
	k := key("agent")
	valid := httpsig.Params{Created: now, Expires: now.Add(time.Minute)}

	t.Run("nonces differ", func(t *testing.T) {
		a, b := signed(t, k, proposal), signed(t, k, proposal)
		if a.Header.Get("Signature-Input") == b.Header.Get("Signature-Input") {
			t.Fatal("two signatures have the same nonce")
		}
	})
	t.Run("second label", func(t *testing.T) {
		r := signed(t, key("other"), proposal)
		p := valid
		p.Label, p.Nonce = "agent", "fixed"
		if err := httpsig.Sign(r, proposal, k, p); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(r.Header.Get("Signature-Input"), "keyid="); n != 2 {
			t.Fatalf("Signature-Input %q", r.Header.Get("Signature-Input"))
		}
		// The first usable label is the one Verify uses.
		v, err := httpsig.Verify(r, proposal, now, httpsig.Options{})
		if err != nil || v.Label != "sig1" || v.KeyID != keyID(key("other")) {
			t.Fatalf("Verify = %+v, %v", v, err)
		}
	})
	for _, c := range []struct {
		name string
		key  []byte
		p    httpsig.Params
	}{
		{"short key", k[:32], valid},
		{"no created", k, httpsig.Params{Expires: now}},
		{"no expires", k, httpsig.Params{Created: now}},
		{"expires before created", k, httpsig.Params{Created: now, Expires: now.Add(-time.Second)}},
		{"label not a key", k, httpsig.Params{Label: "Sig 1", Created: now, Expires: now.Add(time.Minute)}},
		{"tag not printable", k, httpsig.Params{Created: now, Expires: now.Add(time.Minute), Tag: "a\nb"}},
		{"label taken", k, valid},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := request(proposal)
			if c.name == "label taken" {
				r = signed(t, k, proposal)
			}
			if err := httpsig.Sign(r, proposal, c.key, c.p); err == nil {
				t.Fatal("Sign accepted it")
			}
		})
	}
}

// TestPresent tells an unsigned request from a signed one.
func TestPresent(t *testing.T) {
	for _, c := range []struct {
		header http.Header
		want   bool
	}{
		{http.Header{}, false},
		{http.Header{"Content-Digest": {"sha-256=:AAAA:"}}, false},
		{http.Header{"Signature": {"x"}}, true},
		{http.Header{"Signature-Input": {""}}, true},
		{signed(t, key("agent"), proposal).Header, true},
	} {
		if got := httpsig.Present(c.header); got != c.want {
			t.Errorf("Present(%v) = %v", c.header, got)
		}
	}
}

// TestContentDigest checks the digest against the sha-256 that the examples of the
// HTTP signature drafts print for {"hello": "world"}.
func TestContentDigest(t *testing.T) {
	if got, want := httpsig.ContentDigest([]byte(`{"hello": "world"}`)), "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"; got != want {
		t.Fatalf("ContentDigest = %s, want %s", got, want)
	}
}
