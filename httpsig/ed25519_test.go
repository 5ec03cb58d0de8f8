package httpsig

import (
	stded "crypto/ed25519"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

// Ed25519 verifiers differ at the edges (small-order points, encodings that are not
// canonical, the cofactor). An agent or a verifier of proofs that checks with Go's
// crypto/ed25519 must reach the answer this package reaches, so verifyEd25519 is held
// to crypto/ed25519's answer on exactly those edges, and on random changes.

// edgeCases are triples at the edges, with crypto/ed25519's answer.
var edgeCases = []struct {
	name          string
	pub, msg, sig string // hex
	want          bool
}{
	// The identity as A and R with S = 0 satisfies [S]B = R + [k]A for any message
	// under cofactorless verification.
	{"identity A and R, S = 0", "01" + hexZeros(31), "6869", "01" + hexZeros(31) + hexZeros(32), true},
	// y = p + 1 is a second, non-canonical encoding of the identity: as A it decodes,
	// as R it is compared as bytes with the canonical encoding and refused.
	{"non-canonical A", "ee" + strings.Repeat("ff", 30) + "7f", "6869", "01" + hexZeros(31) + hexZeros(32), true},
	{"non-canonical R", "01" + hexZeros(31), "6869", "ee" + strings.Repeat("ff", 30) + "7f" + hexZeros(32), false},
	{"identity with sign bit as A", "01" + hexZeros(30) + "80", "6869", "01" + hexZeros(31) + hexZeros(32), true},
	{"identity with sign bit as R", "01" + hexZeros(31), "6869", "01" + hexZeros(30) + "80" + hexZeros(32), false},
	// S = L, the group order: S must be below it.
	{"S not reduced", "01" + hexZeros(31), "6869", "01" + hexZeros(31) + "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", false},
	{"order-2 A", "ec" + strings.Repeat("ff", 30) + "7f", "6869", "01" + hexZeros(31) + hexZeros(32), true},
	{"not on the curve", "02" + hexZeros(31), "6869", "01" + hexZeros(31) + hexZeros(32), false},
}

func hexZeros(n int) string { return strings.Repeat("00", n) }

func TestVerifyEd25519AgreesWithStdLib(t *testing.T) {
	for _, tc := range edgeCases {
		t.Run(tc.name, func(t *testing.T) {
			pub, _ := hex.DecodeString(tc.pub)
			msg, _ := hex.DecodeString(tc.msg)
			sig, _ := hex.DecodeString(tc.sig)
			if std := stded.Verify(pub, msg, sig); std != tc.want {
				t.Fatalf("crypto/ed25519 answers %v, the case says %v: the case is wrong", std, tc.want)
			}
			if got := verifyEd25519(pub, msg, sig); got != tc.want {
				t.Fatalf("verifyEd25519 = %v, crypto/ed25519 = %v", got, tc.want)
			}
		})
	}
	t.Run("random signatures and one-bit changes", func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
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
			msg := make([]byte, r.IntN(400))
			for j := range msg {
				msg[j] = byte(r.Uint32())
			}
			sig := stded.Sign(priv, msg)
			if !verifyEd25519(pub, msg, sig) {
				t.Fatalf("case %d: a valid signature does not verify", i)
			}
			parts := [][]byte{pub, sig, msg}
			part := parts[r.IntN(3)]
			if len(part) == 0 {
				continue
			}
			b := r.IntN(len(part) * 8)
			part[b/8] ^= 1 << (b % 8)
			if got, want := verifyEd25519(pub, msg, sig), stded.Verify(pub, msg, sig); got != want {
				t.Fatalf("case %d, bit %d flipped: verifyEd25519 = %v, crypto/ed25519 = %v", i, b, got, want)
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
	msg := []byte("\"@method\": POST\n\"@signature-params\": (\"@method\");created=1;expires=2;nonce=\"n\"")
	f.Add([]byte(priv.Public().(stded.PublicKey)), msg, stded.Sign(priv, msg))
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		if len(pub) != stded.PublicKeySize || len(sig) != stded.SignatureSize {
			return // the callers check lengths first; both libraries panic on a bad key
		}
		if got, want := verifyEd25519(pub, msg, sig), stded.Verify(pub, msg, sig); got != want {
			t.Fatalf("pub %x msg %x sig %x: verifyEd25519 = %v, crypto/ed25519 = %v", pub, msg, sig, got, want)
		}
	})
}
