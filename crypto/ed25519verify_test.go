package crypto

import (
	stded "crypto/ed25519"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

// Ed25519 verifiers differ at the edges (small-order points, encodings that are not
// canonical, the cofactor), and a signature one accepts and another refuses would let
// an intent through that a client checking with Go's crypto/ed25519 calls forged. These
// tests hold verifyEd25519 to crypto/ed25519's answer on exactly those edges, but for
// the public keys the service refuses: small-order points, under which anyone signs
// anything, and encodings that are not canonical. Those verify nothing.

// edgeCases are triples at the edges, with what crypto/ed25519 answers (std) and what
// the service answers (want).
var edgeCases = []struct {
	name          string
	pub, msg, sig string // hex
	std, want     bool
}{
	// The identity as A and R with S = 0 satisfies [S]B = R + [k]A for any message
	// under cofactorless verification: crypto/ed25519 accepts it, the service does not.
	{"identity A and R, S = 0", "01" + zeros(31), "6869", "01" + zeros(31) + zeros(32), true, false},
	// y = p + 1 is a second, non-canonical encoding of the identity. As A it decodes; as
	// R it is compared as bytes with the canonical encoding and refused.
	{"non-canonical A", "ee" + ffs(30) + "7f", "6869", "01" + zeros(31) + zeros(32), true, false},
	{"non-canonical R", "01" + zeros(31), "6869", "ee" + ffs(30) + "7f" + zeros(32), false, false},
	// The identity with the sign bit set: x = 0 has no negative.
	{"identity with sign bit as A", "01" + zeros(30) + "80", "6869", "01" + zeros(31) + zeros(32), true, false},
	{"identity with sign bit as R", "01" + zeros(31), "6869", "01" + zeros(30) + "80" + zeros(32), false, false},
	// S = L, the group order: S must be below it.
	{"S not reduced", "01" + zeros(31), "6869", "01" + zeros(31) + "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", false, false},
	// A point of order 2, (0, -1), as A: [k]A is the identity when k is even, as it is for
	// this message, so the identity R and S = 0 verify.
	{"order-2 A", "ec" + ffs(30) + "7f", "6869", "01" + zeros(31) + zeros(32), true, false},
	{"not on the curve", "02" + zeros(31), "6869", "01" + zeros(31) + zeros(32), false, false},
}

func zeros(n int) string { return hexRepeat("00", n) }
func ffs(n int) string   { return hexRepeat("ff", n) }
func hexRepeat(b string, n int) string {
	s := ""
	for range n {
		s += b
	}
	return s
}

func TestVerifyEd25519AgreesWithStdLib(t *testing.T) {
	for _, tc := range edgeCases {
		t.Run(tc.name, func(t *testing.T) {
			pub, _ := hex.DecodeString(tc.pub)
			msg, _ := hex.DecodeString(tc.msg)
			sig, _ := hex.DecodeString(tc.sig)
			std := stded.Verify(pub, msg, sig)
			if std != tc.std {
				t.Fatalf("crypto/ed25519 answers %v, the case says %v: the case is wrong", std, tc.std)
			}
			if got := verifyEd25519(pub, msg, sig); got != tc.want {
				t.Fatalf("verifyEd25519 = %v, want %v (crypto/ed25519 = %v)", got, tc.want, std)
			}
		})
	}

	t.Run("random signatures and one-bit changes", func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		n := 300
		if testing.Short() {
			n = 30
		}
		for i := range n {
			seed := make([]byte, stded.SeedSize)
			for j := range seed {
				seed[j] = byte(r.Uint32())
			}
			priv := stded.NewKeyFromSeed(seed)
			pub := priv.Public().(stded.PublicKey)
			msg := make([]byte, r.IntN(300))
			for j := range msg {
				msg[j] = byte(r.Uint32())
			}
			sig := stded.Sign(priv, msg)
			if !verifyEd25519(pub, msg, sig) {
				t.Fatalf("case %d: a valid signature does not verify", i)
			}
			// Flip one bit of the key, the signature or the message.
			parts := [][]byte{pub, sig, msg}
			part := parts[r.IntN(3)]
			if len(part) == 0 {
				continue
			}
			b := r.IntN(len(part) * 8)
			part[b/8] ^= 1 << (b % 8)
			if got, want := verifyEd25519(pub, msg, sig), serviceAnswer(pub, msg, sig); got != want {
				t.Fatalf("case %d, bit %d flipped: verifyEd25519 = %v, want %v", i, b, got, want)
			}
		}
	})
}

// serviceAnswer is what verifyEd25519 must answer: crypto/ed25519's, for a key the
// service takes.
func serviceAnswer(pub, msg, sig []byte) bool {
	return checkEd25519Key(pub) == nil && stded.Verify(pub, msg, sig)
}

// FuzzVerifyEd25519 looks for a triple on which verifyEd25519 and crypto/ed25519 part,
// for a key the service takes, or a refused key under which a signature verifies.
func FuzzVerifyEd25519(f *testing.F) {
	for _, tc := range edgeCases {
		pub, _ := hex.DecodeString(tc.pub)
		msg, _ := hex.DecodeString(tc.msg)
		sig, _ := hex.DecodeString(tc.sig)
		f.Add(pub, msg, sig)
	}
	priv := stded.NewKeyFromSeed(make([]byte, stded.SeedSize))
	msg := []byte(`{"id":"0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f"}`)
	f.Add([]byte(priv.Public().(stded.PublicKey)), msg, stded.Sign(priv, msg))
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		if len(pub) != stded.PublicKeySize || len(sig) != stded.SignatureSize {
			return // the callers check lengths first; crypto/ed25519 panics on a bad key
		}
		if got, want := verifyEd25519(pub, msg, sig), serviceAnswer(pub, msg, sig); got != want {
			t.Fatalf("pub %x msg %x sig %x: verifyEd25519 = %v, want %v (key check: %v)", pub, msg, sig, got, want, checkEd25519Key(pub))
		}
	})
}

// TestCheckEd25519Key holds the key rule to the points it is about: the eight points of
// small order in their canonical encodings, encodings that are not canonical, a string
// that is no point, and keys made by crypto/ed25519, which pass.
func TestCheckEd25519Key(t *testing.T) {
	tests := []struct {
		name, pub string // hex
		want      string // a part of the refusal; "" passes
	}{
		{"identity", "01" + zeros(31), "small order"},
		{"order 2", "ec" + ffs(30) + "7f", "small order"},
		{"order 4", zeros(32), "small order"},
		{"order 4, sign bit", zeros(31) + "80", "small order"},
		{"order 8 (1)", "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", "small order"},
		{"order 8 (2)", "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa", "small order"},
		{"order 8 (3)", "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", "small order"},
		{"order 8 (4)", "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85", "small order"},
		{"identity as y = p + 1", "ee" + ffs(30) + "7f", "not the canonical encoding"},
		{"identity with the sign bit", "01" + zeros(30) + "80", "not the canonical encoding"},
		{"order 4 as y = p", "ed" + ffs(30) + "7f", "not the canonical encoding"},
		{"not on the curve", "02" + zeros(31), "not a point"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pub, _ := hex.DecodeString(tc.pub)
			err := checkEd25519Key(pub)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkEd25519Key(%s) = %v, want a refusal saying %q", tc.pub, err, tc.want)
			}
		})
	}
	t.Run("keys of crypto/ed25519", func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for range 200 {
			seed := make([]byte, stded.SeedSize)
			for j := range seed {
				seed[j] = byte(r.Uint32())
			}
			pub := stded.NewKeyFromSeed(seed).Public().(stded.PublicKey)
			if err := checkEd25519Key(pub); err != nil {
				t.Fatalf("key %x: %v", []byte(pub), err)
			}
		}
	})
}

// TestForgeryUnderSmallOrderKey checks the attack the key rule stops: the identity as
// key, R and S = 0 make a signature crypto/ed25519 takes for any intent, and a multisig
// would count one signer twice in two spellings of one point.
func TestForgeryUnderSmallOrderKey(t *testing.T) {
	identity, _ := hex.DecodeString("01" + zeros(31))
	forged, _ := hex.DecodeString("01" + zeros(31) + zeros(32))
	a := Authorship{Signature: &Signature{Ed25519: &Ed25519Signature{PubKey: identity, Signature: forged}}}
	checkVerify(t, Verify(typicalIntent, a, VerifyOptions{}), "ed25519: pub_key is a point of small order")

	other, _ := hex.DecodeString("ee" + ffs(30) + "7f") // the identity, y = p + 1
	m := Signature{Multisig: &MultisigSignature{
		Signers:    []Signer{{identity, 1}, {other, 1}},
		Threshold:  2,
		Signatures: []Signature{*a.Signature, {Ed25519: &Ed25519Signature{PubKey: other, Signature: forged}}},
	}}
	checkVerify(t, Verify(typicalIntent, signed(m), VerifyOptions{}), "multisig: signer "+EncodeBase58(identity)+" is a point of small order")
}
