package httpsig_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/intentd/intentd/httpsig"
)

// BenchmarkVerify verifies a signed proposal of about 200 bytes, as intentd does for
// each POST /intents/{id}/proposal. Set beside BenchmarkEd25519Verify, it shows what
// the headers, the digest and the base cost above the signature itself.
func BenchmarkVerify(b *testing.B) {
	r := signed(b, key("agent"), proposal)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := httpsig.Verify(r, proposal, now, httpsig.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEd25519Verify is the bare Ed25519 check of the same signature over the same
// base: "voi" is VerifyBase, the check Verify makes (curve25519-voi under crypto/ed25519's
// rules), the floor under BenchmarkVerify; "stdlib" is crypto/ed25519.Verify, which it
// replaced.
func BenchmarkEd25519Verify(b *testing.B) {
	v, err := httpsig.Verify(signed(b, key("agent"), proposal), proposal, now, httpsig.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		verify func(ed25519.PublicKey, []byte, []byte) bool
	}{{"voi", httpsig.VerifyBase}, {"stdlib", ed25519.Verify}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !tc.verify(v.Key, v.Base, v.Signature) {
					b.Fatal("does not verify")
				}
			}
		})
	}
}

// BenchmarkSign signs a proposal of about 200 bytes, as an agent written in Go does.
func BenchmarkSign(b *testing.B) {
	k := key("agent")
	p := httpsig.Params{Created: now, Expires: now.Add(300 * time.Second)}
	b.ReportAllocs()
	for b.Loop() {
		r := request(proposal)
		if err := httpsig.Sign(r, proposal, k, p); err != nil {
			b.Fatal(err)
		}
	}
}
