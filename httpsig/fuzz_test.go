package httpsig_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/intentd/intentd/httpsig"
)

// FuzzVerify feeds Verify arbitrary Signature-Input, Signature and Content-Digest
// values and bodies (an empty value is an absent header). Verify must not panic, must
// refuse with an *Error, and when it accepts, the key it names must have signed the
// base it returns, a base that reads back to the request's own components. The only
// key with valid signatures in the corpus is the seeds' key, so it must be that one.
func FuzzVerify(f *testing.F) {
	k := key("agent")
	add := func(input, sig, digest string, body []byte) { f.Add(input, sig, digest, body) }
	r := signed(f, k, proposal)
	add(r.Header.Get("Signature-Input"), r.Header.Get("Signature"), r.Header.Get("Content-Digest"), proposal)
	add(r.Header.Get("Signature-Input"), r.Header.Get("Signature"), r.Header.Get("Content-Digest"), []byte("{}"))
	add(r.Header.Get("Signature-Input")+`, b=("@method");alg="x"`, r.Header.Get("Signature")+", b=:AAAA:", "sha-512=:AAAA:, "+r.Header.Get("Content-Digest"), proposal)
	raw := request(proposal)
	signRaw(f, raw, proposal, k, "s", append([]string{"content-type"}, all...), params(k)+`;tag="t"`)
	add(raw.Header.Get("Signature-Input"), raw.Header.Get("Signature"), raw.Header.Get("Content-Digest"), proposal)
	add(`sig1=("@method" "@query-param";name="a" "x"  "@status");created=-1;expires=999999999999999;nonce="";keyid="1111"`, `sig1=:AAAA:`, `sha-256=:`, nil)
	add(`a=%"x,\"", b="x,\\\"y", c=?1;d=@12;e=1.5, f=(:AA==: *t)`, `f=x`, `x`, nil)
	add("", "", "", nil)

	pub := k.Public()
	f.Fuzz(func(t *testing.T, input, sig, digest string, body []byte) {
		r := request(body)
		for name, v := range map[string]string{"Signature-Input": input, "Signature": sig, "Content-Digest": digest} {
			if v != "" {
				r.Header.Set(name, v)
			}
		}
		v, err := httpsig.Verify(r, body, now, httpsig.Options{})
		if err != nil {
			var e *httpsig.Error
			if !errors.As(err, &e) || e.Reason == "" || e.Error() == "" {
				t.Fatalf("Verify refused with %T %v, not an *Error with a reason and a sentence", err, err)
			}
			return
		}
		if !v.Key.Equal(pub) || !httpsig.VerifyBase(v.Key, v.Base, v.Signature) {
			t.Fatalf("Verify accepted a base that key %s did not sign: %q", v.KeyID, v.Base)
		}
		comps, params, err := httpsig.BaseComponents(v.Base)
		if err != nil {
			t.Fatalf("BaseComponents of a verified base: %v\n%s", err, v.Base)
		}
		if comps["@path"] != r.URL.Path || comps["@method"] != r.Method || comps["@authority"] != r.Host ||
			comps["content-digest"] != strings.Trim(digest, " \t") || !strings.Contains(input, v.Label+"="+params) {
			t.Fatalf("the verified base does not hold the request: %v, %q", comps, params)
		}
	})
}

// FuzzBaseComponents feeds BaseComponents arbitrary bases: it must not panic, and what
// it reads must be what the base says, line for line.
func FuzzBaseComponents(f *testing.F) {
	v, err := httpsig.Verify(signed(f, key("agent"), proposal), proposal, now, httpsig.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v.Base)
	f.Add([]byte("\"date\": Tue, 20 Apr 2021 02:07:55 GMT\n\"@method\": POST\n\"@path\": /foo\n\"@authority\": example.com\n\"content-type\": application/json\n\"content-length\": 18\n\"@signature-params\": (\"date\" \"@method\" \"@path\" \"@authority\" \"content-type\" \"content-length\");created=1618884473;keyid=\"test-key-ed25519\""))
	f.Add([]byte(`"@signature-params": ();created=1`))
	f.Add([]byte("\"a\": 1\n\"a\": 2\n\"@signature-params\": (\"a\" \"a\")"))
	f.Add([]byte("\"a\\\"b\": 1\n\"@signature-params\": (\"a\\\"b\")"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, base []byte) {
		comps, params, err := httpsig.BaseComponents(base)
		if err != nil {
			return
		}
		lines := strings.Split(string(base), "\n")
		if len(lines) != len(comps)+1 || lines[len(lines)-1] != `"@signature-params": `+params {
			t.Fatalf("BaseComponents(%q) = %v, %q", base, comps, params)
		}
		for name, value := range comps {
			found := false
			for _, l := range lines[:len(lines)-1] {
				found = found || l == `"`+name+`": `+value
			}
			if !found {
				t.Fatalf("BaseComponents(%q) reads %q as %q, which no line says", base, name, value)
			}
		}
	})
}
