package crypto

import (
	"crypto/ed25519"
	"fmt"
	"math"
	"testing"
)

func TestVerifyMultisig(t *testing.T) {
	a, b, c := edKey("a"), edKey("b"), edKey("c")
	pa, pb, pc := pubOf(a), pubOf(b), pubOf(c)
	pk := softPasskey(t, "multisig")
	pk.Compressed = true
	pkCompressed := pk.PublicKey()
	pk.Compressed = false
	pkUncompressed := pk.PublicKey()

	sa, sb, sc := signEd(t, a, typicalIntent), signEd(t, b, typicalIntent), signEd(t, c, typicalIntent)
	spk := assertPasskey(t, pk, typicalIntent) // pub_key uncompressed
	sbOther := signEd(t, b, otherIntent)
	spkOther := assertPasskey(t, pk, otherIntent)
	ones := []Signer{{pa, 1}, {pb, 1}, {pc, 1}}

	cases := []struct {
		name      string
		signers   []Signer
		threshold uint64
		sigs      []Signature
		opts      VerifyOptions
		wantErr   string
	}{
		{"2 of 3, exactly at threshold", ones, 2, []Signature{sa, sc}, VerifyOptions{}, ""},
		{"3 of 3 above threshold", ones, 2, []Signature{sc, sb, sa}, VerifyOptions{}, ""},
		{"one below threshold", ones, 3, []Signature{sa, sb}, VerifyOptions{}, "multisig: weight 2 below threshold 3"},
		{"weights count, not heads", []Signer{{pa, 5}, {pb, 1}, {pc, 1}}, 6, []Signature{sb, sc}, VerifyOptions{}, "multisig: weight 2 below threshold 6"},
		{"one heavy signer suffices", []Signer{{pa, 5}, {pb, 1}, {pc, 1}}, 5, []Signature{sa}, VerifyOptions{}, ""},
		{"no signatures", ones, 1, []Signature{}, VerifyOptions{}, "multisig: weight 0 below threshold 1"},
		{"threshold 0 refused", ones, 0, []Signature{sa}, VerifyOptions{}, "multisig: threshold must be at least 1"},
		{"threshold 0 refused with no signatures", ones, 0, nil, VerifyOptions{}, "multisig: threshold must be at least 1"},
		{"duplicate signer signs twice", ones, 2, []Signature{sa, sa}, VerifyOptions{}, "multisig: signatures[1]: signer " + EncodeBase58(pa) + " signed more than once"},
		{"signer listed twice", []Signer{{pa, 1}, {pb, 1}, {pa, 1}}, 2, []Signature{sa, sb}, VerifyOptions{}, "multisig: signer " + EncodeBase58(pa) + " is listed twice"},
		{"P-256 signer listed compressed and uncompressed", []Signer{{pkCompressed, 1}, {pkUncompressed, 1}}, 1, []Signature{spk}, VerifyOptions{}, "is listed twice"},
		{"signer not listed", []Signer{{pa, 1}, {pb, 1}}, 2, []Signature{sa, sc}, VerifyOptions{}, "multisig: signatures[1]: key " + EncodeBase58(pc) + " is not a listed signer"},
		{"one invalid signature among valid ones", ones, 2, []Signature{sa, sbOther, sc}, VerifyOptions{}, "multisig: signatures[1]: ed25519: signature does not verify"},
		{"nested multisig refused", ones, 1, []Signature{sa, {Multisig: &MultisigSignature{Signers: ones, Threshold: 1, Signatures: []Signature{sb}}}}, VerifyOptions{}, "multisig: signatures[1]: nested multisig refused"},
		{"weight 0 refused", []Signer{{pa, 1}, {pb, 0}}, 1, []Signature{sa}, VerifyOptions{}, "multisig: signer " + EncodeBase58(pb) + " has weight 0, want at least 1"},
		{"no signers", []Signer{}, 1, []Signature{sa}, VerifyOptions{}, "multisig: no signers"},
		{"signer key of bad length", []Signer{{pa, 1}, {pa[:31], 1}}, 1, []Signature{sa}, VerifyOptions{}, "multisig: signer " + EncodeBase58(pa[:31]) + " is 31 bytes, want 32 (Ed25519), 33 or 65 (P-256)"},
		{"signer P-256 key not on the curve", []Signer{{pa, 1}, {flipBit(pkUncompressed, 8*64), 1}}, 1, []Signature{sa}, VerifyOptions{}, "is not a point on P-256"},
		{"signature with a key of bad length", ones, 1, []Signature{{Ed25519: &Ed25519Signature{PubKey: pa[:31], Signature: sa.Ed25519.Signature}}}, VerifyOptions{}, "multisig: signatures[0]: pub_key is 31 bytes"},
		{"signature with no scheme set", ones, 1, []Signature{{}}, VerifyOptions{}, "multisig: signatures[0]: has 0 of Ed25519, Passkey, Multisig set"},

		// Weights and the threshold are JSON-safe integers, so that every reader of the
		// authorship sees the same numbers and the sum cannot wrap.
		{"largest weights meet the largest threshold", []Signer{{pa, MaxMultisigWeight}, {pb, MaxMultisigWeight}}, MaxMultisigWeight, []Signature{sa, sb}, VerifyOptions{}, ""},
		{"two largest weights sum past one", []Signer{{pa, MaxMultisigWeight}, {pb, MaxMultisigWeight}}, MaxMultisigWeight, []Signature{sa}, VerifyOptions{}, ""},
		{"weight beyond 2^53-1", []Signer{{pa, 1 << 53}, {pb, 1}}, 1, []Signature{sa}, VerifyOptions{}, fmt.Sprintf("multisig: signer %s has weight %d, beyond 2^53-1", EncodeBase58(pa), uint64(1<<53))},
		{"weight 2^64-1", []Signer{{pa, math.MaxUint64}, {pb, 2}}, 3, []Signature{sa, sb}, VerifyOptions{}, "beyond 2^53-1"},
		{"threshold beyond 2^53-1", []Signer{{pa, 1}, {pb, 1}}, 1 << 53, []Signature{sa, sb}, VerifyOptions{}, fmt.Sprintf("multisig: threshold %d is beyond 2^53-1", uint64(1<<53))},
		{"threshold 2^64-1", []Signer{{pa, 1 << 52}, {pb, 1 << 52}}, math.MaxUint64, []Signature{sa, sb}, VerifyOptions{}, "is beyond 2^53-1"},

		{"mixed Ed25519 and passkey", []Signer{{pa, 1}, {pkUncompressed, 1}, {pb, 1}}, 2, []Signature{spk, sa}, VerifyOptions{}, ""},
		{"passkey listed compressed, signing with the uncompressed key", []Signer{{pa, 1}, {pkCompressed, 1}}, 2, []Signature{sa, spk}, VerifyOptions{}, ""},
		{"mixed, passkey checked against configured origin and RP id", []Signer{{pa, 1}, {pkUncompressed, 1}}, 2, []Signature{sa, spk},
			VerifyOptions{PasskeyOrigin: "https://shop.example", PasskeyRPID: "shop.example"}, ""},
		{"mixed, passkey from another origin", []Signer{{pa, 1}, {pkUncompressed, 1}}, 2, []Signature{sa, spk},
			VerifyOptions{PasskeyOrigin: "https://other.example"}, `multisig: signatures[1]: passkey: client_data origin "https://shop.example" is not the allowed origin`},
		{"mixed, passkey over another intent", []Signer{{pa, 1}, {pkUncompressed, 1}}, 2, []Signature{sa, spkOther}, VerifyOptions{}, "multisig: signatures[1]: passkey: challenge does not match the intent"},
		{"passkey not listed", []Signer{{pa, 1}, {pb, 1}}, 1, []Signature{spk}, VerifyOptions{}, "multisig: signatures[0]: key " + EncodeBase58(pkUncompressed) + " is not a listed signer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := Signature{Multisig: &MultisigSignature{Signers: tc.signers, Threshold: tc.threshold, Signatures: tc.sigs}}
			checkVerify(t, Verify(typicalIntent, signed(m), tc.opts), tc.wantErr)
		})
	}
}

// TestVerifyMultisigLimits builds signer tables around the limit of 64.
func TestVerifyMultisigLimits(t *testing.T) {
	keys := make([]ed25519.PrivateKey, 65)
	signers := make([]Signer, 65)
	sigs := make([]Signature, 65)
	for i := range keys {
		keys[i] = edKey(fmt.Sprint("limit ", i))
		signers[i] = Signer{PubKey: pubOf(keys[i]), Weight: 1}
		sigs[i] = signEd(t, keys[i], typicalIntent)
	}
	cases := []struct {
		name          string
		signers, sigs int
		threshold     uint64
		wantErr       string
	}{
		{"64 signers, 64 signatures", 64, 64, 64, ""},
		{"65 signers refused", 65, 1, 1, "multisig: 65 signers, at most 64 allowed"},
		{"65 signatures refused", 64, 65, 1, "multisig: 65 signatures, at most 64 allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := Signature{Multisig: &MultisigSignature{Signers: signers[:tc.signers], Threshold: tc.threshold, Signatures: sigs[:tc.sigs]}}
			checkVerify(t, Verify(typicalIntent, signed(m), VerifyOptions{}), tc.wantErr)
		})
	}
}

func pubOf(k ed25519.PrivateKey) []byte { return k.Public().(ed25519.PublicKey) }
