package crypto

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeAuthorship checks that the decoder never panics, that every failure is a
// *FieldError, that whatever decodes encodes and decodes again to the same value and
// the same bytes, and that Verify accepts any decoded value without panicking.
func FuzzDecodeAuthorship(f *testing.F) {
	p := softPasskey(f, "fuzz")
	pk, err := p.Sign(typicalIntent)
	if err != nil {
		f.Fatal(err)
	}
	ed, err := SignEd25519(edKey("fuzz"), typicalIntent)
	if err != nil {
		f.Fatal(err)
	}
	ms := Authorship{Signature: &Signature{Multisig: &MultisigSignature{
		Signers:    []Signer{{PubKey: ed.Signature.Ed25519.PubKey, Weight: 1}, {PubKey: pk.Signature.Passkey.PubKey, Weight: 1 << 63}},
		Threshold:  2,
		Signatures: []Signature{*ed.Signature, *pk.Signature},
	}}}
	for _, a := range []Authorship{{}, ed, pk, ms} {
		b, err := json.Marshal(a)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"Signed":` + validEd + `}`,
		`{"Signed":` + validPasskey + `}`,
		`{"Signed":` + validMultisig + `}`,
		multisigJSON(`{"signers":{"`+b58Key32+`":1},"threshold":1}`, `[`+validMultisig+`]`),
		`{"Signed":{"Ed25519":{"pub_key":"` + b58Key32 + `","signature":"` + b58Sig64 + `"},"Passkey":{}}}`,
		`{"Signed":{"Ed25519":{"pub_key":"` + b58Key31 + `","signature":"` + b58Sig64 + `"}}}`,
		`{"Signed":{"Multisig":{"pub_key":{"signers":{"1111":1e3},"threshold":-0},"signatures":[null]}}}`,
		`null`, `"Unsigned"`, `{}`, `[]`, `{"Signed":{}}`, `"\u0055nsigned"`, `{"Signed":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAuthorship(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("DecodeAuthorship error %T %v is not a *FieldError", err, err)
			}
			return
		}
		enc, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("Marshal of a decoded value: %v", err)
		}
		again, err := DecodeAuthorship(enc)
		if err != nil {
			t.Fatalf("decoding the encoding %s: %v", enc, err)
		}
		if !reflect.DeepEqual(a.Signature, again.Signature) {
			t.Fatalf("round trip changed the value:\n%#v\n%#v", a.Signature, again.Signature)
		}
		// The JSON kept from the input, when there is one, is what encoding the
		// decoded value gives.
		if built, err := json.Marshal(Authorship{Signature: a.Signature}); err != nil || !bytes.Equal(built, enc) {
			t.Fatalf("the kept JSON %s differs from the encoding %s (%v)", enc, built, err)
		}
		enc2, err := json.Marshal(again)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("second encoding differs: %s vs %s (%v)", enc, enc2, err)
		}
		err = Verify(typicalIntent, a, VerifyOptions{PasskeyOrigin: "https://shop.example", PasskeyRPID: "shop.example"})
		if err != nil && !errors.Is(err, ErrAuthorshipInvalid) && !errors.Is(err, ErrUnsignedNotPermitted) {
			t.Fatalf("Verify error %v wraps neither sentinel", err)
		}
	})
}

// FuzzDecodeBase58Key checks the Base58 decoding of keys and signatures: no panics,
// the decoded length is one the caller allows, and a decoded value encodes back to the
// very string it came from, so that keys have one spelling on the wire.
func FuzzDecodeBase58Key(f *testing.F) {
	for _, s := range []string{b58Key32, b58Sig64, b58Key33, b58Key65, b58Key31, "", "1", "11111111111111111111111111111111",
		"0OIl", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "\xff", "1\x00", EncodeBase58(make([]byte, 32))} {
		f.Add(s)
	}
	lengthSets := [][]int{
		{Ed25519PubKeyLen},
		{Ed25519SignatureLen},
		{P256CompressedLen, P256UncompressedLen},
		{Ed25519PubKeyLen, P256CompressedLen, P256UncompressedLen},
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := DecodeBase58(s)
		if err == nil && EncodeBase58(raw) != s {
			t.Fatalf("DecodeBase58(%q) = %x, which encodes to %q", s, raw, EncodeBase58(raw))
		}
		for _, lengths := range lengthSets {
			b, kerr := decodeKey(s, lengths...)
			if kerr != nil {
				if err == nil && hasLength(lengths, len(raw)) {
					t.Fatalf("decodeKey(%q, %v) refused a %d-byte value: %v", s, lengths, len(raw), kerr)
				}
				continue
			}
			if err != nil || !bytes.Equal(b, raw) || !hasLength(lengths, len(b)) {
				t.Fatalf("decodeKey(%q, %v) = %x, want a value of an allowed length equal to %x (%v)", s, lengths, b, raw, err)
			}
		}
	})
}

func hasLength(lengths []int, n int) bool {
	for _, l := range lengths {
		if l == n {
			return true
		}
	}
	return false
}
