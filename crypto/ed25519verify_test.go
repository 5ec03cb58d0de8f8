package crypto

import (
	stded "crypto/ed25519"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// Ed25519 verifiers differ at the edges (small-order points, encodings that are not
// canonical, the cofactor), and a signature one accepts and another refuses would let
// an intent through that a client checking with Go's crypto/ed25519 calls forged. These
// tests hold verifyEd25519 to crypto/ed25519's answer on exactly those edges.

// edgeCases are triples at the edges, with what crypto/ed25519 answers.
var edgeCases = []struct {
	name          string
	pub, msg, sig string // hex
	want          bool
}{
	// The identity as A and R with S = 0 satisfies [S]B = R + [k]A for any message
	// under cofactorless verification: crypto/ed25519 accepts it.
	{"identity A and R, S = 0", "01" + zeros(31), "6869", "01" + zeros(31) + zeros(32), true},
	// y = p + 1 is a second, non-canonical encoding of the identity. As A it decodes; as
	// R it is compared as bytes with the canonical encoding and refused.
	{"non-canonical A", "ee" + ffs(30) + "7f", "6869", "01" + zeros(31) + zeros(32), true},
	{"non-canonical R", "01" + zeros(31), "6869", "ee" + ffs(30) + "7f" + zeros(32), false},
	// The identity with the sign bit set: x = 0 has no negative.
	{"identity with sign bit as A", "01" + zeros(30) + "80", "6869", "01" + zeros(31) + zeros(32), true},
	{"identity with sign bit as R", "01" + zeros(31), "6869", "01" + zeros(30) + "80" + zeros(32), false},
	// S = L, the group order: S must be below it.
	{"S not reduced", "01" + zeros(31), "6869", "01" + zeros(31) + "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", false},
	// A point of order 2, (0, -1), as A: [k]A is the identity when k is even, as it is for
	// this message, so the identity R and S = 0 verify.
	{"order-2 A", "ec" + ffs(30) + "7f", "6869", "01" + zeros(31) + zeros(32), true},
	{"not on the curve", "02" + zeros(31), "6869", "01" + zeros(31) + zeros(32), false},
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
			if std != tc.want {
				t.Fatalf("crypto/ed25519 answers %v, the case says %v: the case is wrong", std, tc.want)
			}
			if got := verifyEd25519(pub, msg, sig); got != std {
				t.Fatalf("verifyEd25519 = %v, crypto/ed25519 = %v", got, std)
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
			if got, std := verifyEd25519(pub, msg, sig), stded.Verify(pub, msg, sig); got != std {
				t.Fatalf("case %d, bit %d flipped: verifyEd25519 = %v, crypto/ed25519 = %v", i, b, got, std)
			}
		}
	})
}

// FuzzVerifyEd25519 looks for a triple on which verifyEd25519 and crypto/ed25519 part.
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
		if got, std := verifyEd25519(pub, msg, sig), stded.Verify(pub, msg, sig); got != std {
			t.Fatalf("pub %x msg %x sig %x: verifyEd25519 = %v, crypto/ed25519 = %v", pub, msg, sig, got, std)
		}
	})
}
