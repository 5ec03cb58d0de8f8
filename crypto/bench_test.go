package crypto

import (
	"testing"
)

// BenchmarkVerifyEd25519 is the common case: one Ed25519 signature over a typical
// intent, JCS included.
func BenchmarkVerifyEd25519(b *testing.B) {
	a, err := SignEd25519(edKey("bench"), typicalIntent)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(typicalIntent, a, VerifyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyMultisig2of3 checks two Ed25519 signatures of a 2-of-3 multisig.
func BenchmarkVerifyMultisig2of3(b *testing.B) {
	k1, k2, k3 := edKey("b1"), edKey("b2"), edKey("b3")
	a := signed(Signature{Multisig: &MultisigSignature{
		Signers:    []Signer{{pubOf(k1), 1}, {pubOf(k2), 1}, {pubOf(k3), 1}},
		Threshold:  2,
		Signatures: []Signature{signEd(b, k1, typicalIntent), signEd(b, k3, typicalIntent)},
	}})
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(typicalIntent, a, VerifyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyPasskey checks a WebAuthn assertion with the origin and RP id
// configured, compressed key (the costlier parse) and DER signature.
func BenchmarkVerifyPasskey(b *testing.B) {
	p := softPasskey(b, "bench")
	p.Compressed = true
	a, err := p.Sign(typicalIntent)
	if err != nil {
		b.Fatal(err)
	}
	opts := VerifyOptions{PasskeyOrigin: "https://shop.example", PasskeyRPID: "shop.example"}
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(typicalIntent, a, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeAuthorship decodes a Signed Ed25519 authorship from its wire form.
func BenchmarkDecodeAuthorship(b *testing.B) {
	data := benchAuthorship(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeAuthorship(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeDecodedAuthorship is what intake does with an authorship it took in:
// decode it from the request, then write it into the stored intent.
func BenchmarkEncodeDecodedAuthorship(b *testing.B) {
	a, err := DecodeAuthorship(benchAuthorship(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchAuthorship is the wire form of a Signed Ed25519 authorship of typicalIntent.
func benchAuthorship(b *testing.B) []byte {
	a, err := SignEd25519(edKey("bench"), typicalIntent)
	if err != nil {
		b.Fatal(err)
	}
	data, err := a.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return data
}
