package httpsig

import (
	"bytes"
	stded "crypto/ed25519"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"
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
			// The second check of a key that verified goes through its expanded form.
			for _, pass := range []string{"first", "second"} {
				if got := verifyEd25519(pub, msg, sig); got != tc.want {
					t.Fatalf("%s check: verifyEd25519 = %v, crypto/ed25519 = %v", pass, got, tc.want)
				}
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

// TestExpandedKeys checks the cache of expanded keys: a key is kept once a signature
// verified under it and not before, a kept key still refuses what it did not sign, and
// the cache never holds more than maxKeys.
func TestExpandedKeys(t *testing.T) {
	expandedKeys.reset() // a key an earlier test kept would be kept already
	msg := []byte("a proposal's signature base")
	newKey := func(i int) (stded.PublicKey, stded.PrivateKey) {
		seed := make([]byte, stded.SeedSize)
		seed[0], seed[1], seed[2] = byte(i), byte(i>>8), 0xa5
		priv := stded.NewKeyFromSeed(seed)
		return priv.Public().(stded.PublicKey), priv
	}
	pub, priv := newKey(0)
	sig := stded.Sign(priv, msg)
	bad := append([]byte(nil), sig...)
	bad[5] ^= 1
	tests := []struct {
		name     string
		sig      []byte
		want     bool
		wantKept bool
	}{
		{"a bad signature keeps nothing", bad, false, false},
		{"a good one keeps the key", sig, true, true},
		{"the kept key refuses a bad signature", bad, false, true},
		{"and accepts the good one", sig, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := verifyEd25519(pub, msg, tc.sig); got != tc.want {
				t.Fatalf("verifyEd25519 = %v, want %v", got, tc.want)
			}
			if _, kept := expandedKeys.get([stded.PublicKeySize]byte(pub)); kept != tc.wantKept {
				t.Fatalf("kept = %v, want %v", kept, tc.wantKept)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		for i := 1; i <= maxKeys+10; i++ {
			pub, priv := newKey(i)
			if !verifyEd25519(pub, msg, stded.Sign(priv, msg)) {
				t.Fatalf("key %d: a valid signature does not verify", i)
			}
			if n := expandedKeys.len(); n > maxKeys {
				t.Fatalf("after %d keys the cache holds %d, more than %d", i, n, maxKeys)
			}
		}
	})
}

// TestKeyIDs checks the cache of keyids: a keyid is kept once a signature under its key
// verified and not before, a kept one reads as the key it names, and a caller that
// changes the key it was handed changes nothing kept.
func TestKeyIDs(t *testing.T) {
	keyIDs.reset()
	expandedKeys.reset()
	priv := stded.NewKeyFromSeed(bytes.Repeat([]byte{9}, stded.SeedSize))
	pub := priv.Public().(stded.PublicKey)
	body := []byte(`{"solution":"M"}`)
	at := time.Unix(1_800_000_000, 0)
	signed := "/intents/7Yh3kq/proposal"
	request := func(path string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, signed, bytes.NewReader(body))
		if err := Sign(r, body, priv, Params{Created: at, Expires: at.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		r.URL.Path = path
		return r
	}
	tests := []struct {
		name     string
		path     string
		wantErr  Reason
		wantKept bool
	}{
		{"a signature that does not verify keeps nothing", "/intents/other/proposal", BadSignature, false},
		{"a signature that verifies keeps the keyid", signed, "", true},
		{"the kept keyid verifies again", signed, "", true},
		{"and refuses what it did not sign", "/intents/other/proposal", BadSignature, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Verify(request(tc.path), body, at, Options{})
			if tc.wantErr != "" {
				var e *Error
				if !errors.As(err, &e) || e.Reason != tc.wantErr {
					t.Fatalf("Verify: %v, want a refusal %s", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Verify: %v", err)
			} else {
				if !bytes.Equal(v.Key, pub) {
					t.Fatalf("the key is %x, want %x", v.Key, pub)
				}
				v.Key[0] ^= 1 // the caller's own copy
			}
			kept, ok := keyIDs.get(base58.Encode(pub))
			if ok != tc.wantKept {
				t.Fatalf("kept = %v, want %v", ok, tc.wantKept)
			}
			if ok && !bytes.Equal(kept, pub) {
				t.Fatalf("the kept key is %x, want %x", kept, pub)
			}
		})
	}
}
