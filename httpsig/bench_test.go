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

// BenchmarkEd25519Verify is the bare ed25519.Verify of the same signature over the same
// base: the floor under BenchmarkVerify.
func BenchmarkEd25519Verify(b *testing.B) {
	v, err := httpsig.Verify(signed(b, key("agent"), proposal), proposal, now, httpsig.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(v.Key, v.Base, v.Signature) {
			b.Fatal("does not verify")
		}
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
