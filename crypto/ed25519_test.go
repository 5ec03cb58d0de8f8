package crypto

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

// rfc8032Test1024Msg is the 1023-byte message of RFC 8032 section 7.1, TEST 1024.
const rfc8032Test1024Msg = "" +
	"08b8b2b733424243760fe426a4b54908632110a66c2f6591eabd3345e3e4eb98fa6e264bf09efe12ee50f8f54e9f77b1" +
	"e355f6c50544e23fb1433ddf73be84d879de7c0046dc4996d9e773f4bc9efe5738829adb26c81b37c93a1b270b20329d" +
	"658675fc6ea534e0810a4432826bf58c941efb65d57a338bbd2e26640f89ffbc1a858efcb8550ee3a5e1998bd177e93a" +
	"7363c344fe6b199ee5d02e82d522c4feba15452f80288a821a579116ec6dad2b3b310da903401aa62100ab5d1a36553e" +
	"06203b33890cc9b832f79ef80560ccb9a39ce767967ed628c6ad573cb116dbefefd75499da96bd68a8a97b928a8bbc10" +
	"3b6621fcde2beca1231d206be6cd9ec7aff6f6c94fcd7204ed3455c68c83f4a41da4af2b74ef5c53f1d8ac70bdcb7ed1" +
	"85ce81bd84359d44254d95629e9855a94a7c1958d1f8ada5d0532ed8a5aa3fb2d17ba70eb6248e594e1a2297acbbb39d" +
	"502f1a8c6eb6f1ce22b3de1a1f40cc24554119a831a9aad6079cad88425de6bde1a9187ebb6092cf67bf2b13fd65f270" +
	"88d78b7e883c8759d2c4f5c65adb7553878ad575f9fad878e80a0c9ba63bcbcc2732e69485bbc9c90bfbd62481d9089b" +
	"eccf80cfe2df16a2cf65bd92dd597b0707e0917af48bbb75fed413d238f5555a7a569d80c3414a8d0859dc65a46128ba" +
	"b27af87a71314f318c782b23ebfe808b82b0ce26401d2e22f04d83d1255dc51addd3b75a2b1ae0784504df543af8969b" +
	"e3ea7082ff7fc9888c144da2af58429ec96031dbcad3dad9af0dcbaaaf268cb8fcffead94f3c7ca495e056a9b47acdb7" +
	"51fb73e666c6c655ade8297297d07ad1ba5e43f1bca32301651339e22904cc8c42f58c30c04aafdb038dda0847dd988d" +
	"cda6f3bfd15c4b4c4525004aa06eeff8ca61783aacec57fb3d1f92b0fe2fd1a85f6724517b65e614ad6808d6f6ee34df" +
	"f7310fdc82aebfd904b01e1dc54b2927094b2db68d6f903b68401adebf5a7e08d78ff4ef5d63653a65040cf9bfd4aca7" +
	"984a74d37145986780fc0b16ac451649de6188a7dbdf191f64b5fc5e2ab47b57f7f7276cd419c17a3ca8e1b939ae49e4" +
	"88acba6b965610b5480109c8b17b80e1b7b750dfc7598d5d5011fd2dcc5600a32ef5b52a1ecc820e308aa342721aac09" +
	"43bf6686b64b2579376504ccc493d97e6aed3fb0f9cd71a43dd497f01f17c0e2cb3797aa2a2f256656168e6c496afc5f" +
	"b93246f6b1116398a346f1a641f3b041e989f7914f90cc2c7fff357876e506b50d334ba77c225bc307ba537152f3f161" +
	"0e4eafe595f6d9d90d11faa933a15ef1369546868a7f3a45a96768d40fd9d03412c091c6315cf4fde7cb68606937380d" +
	"b2eaaa707b4c4185c32eddcdd306705e4dc1ffc872eeee475a64dfac86aba41c0618983f8741c5ef68d3a101e8a3b8ca" +
	"c60c905c15fc910840b94c00a0b9d0"

// rfc8032Vectors are the Ed25519 test vectors of RFC 8032 section 7.1, as printed there.
var rfc8032Vectors = []struct {
	name, secret, public, message, signature string
	msgLen                                   int
}{
	{
		name:      "TEST 1",
		secret:    "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
		public:    "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
		message:   "",
		signature: "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
		msgLen:    0,
	},
	{
		name:      "TEST 2",
		secret:    "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
		public:    "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
		message:   "72",
		signature: "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
		msgLen:    1,
	},
	{
		name:      "TEST 3",
		secret:    "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
		public:    "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
		message:   "af82",
		signature: "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
		msgLen:    2,
	},
	{
		name:      "TEST 1024",
		secret:    "f5e5767cf153319517630f226876b86c8160cc583bc013744c6bf255f5cc0ee5",
		public:    "278117fc144c72340f67d0f2316e8386ceffbf2b2428c9c51fef7c597f1d426e",
		message:   rfc8032Test1024Msg,
		signature: "0aab4c900501b3e24d7cdf4663326a3a87df5e4843b2cbdb67cbf6e460fec350aa5371b1508f9f4528ecea23c436d94b5e8fcd4f681e30a6ac00a9704a188a03",
		msgLen:    1023,
	},
}

// TestEd25519RFC8032 runs the RFC's vectors through the package's Ed25519 check (the
// messages are not JSON, so the check is called on the message bytes directly), and
// checks that each vector fails once a bit of the signature, the key or the message
// is flipped.
func TestEd25519RFC8032(t *testing.T) {
	for _, tc := range rfc8032Vectors {
		t.Run(tc.name, func(t *testing.T) {
			secret, pub := mustHex(t, tc.secret), mustHex(t, tc.public)
			msg, sig := mustHex(t, tc.message), mustHex(t, tc.signature)
			if len(msg) != tc.msgLen {
				t.Fatalf("message is %d bytes, the RFC says %d: transcription error", len(msg), tc.msgLen)
			}
			// The RFC's secret must give the RFC's public key and signature: this
			// guards the transcription of the vector, not the package.
			priv := ed25519.NewKeyFromSeed(secret)
			if got := priv.Public().(ed25519.PublicKey); !bytes.Equal(got, pub) {
				t.Fatalf("public key from secret = %x, RFC says %x", got, pub)
			}
			if got := ed25519.Sign(priv, msg); !bytes.Equal(got, sig) {
				t.Fatalf("signature = %x, RFC says %x", got, sig)
			}

			check := func(pub, msg, sig []byte) error {
				v := verifier{canon: msg}
				return v.ed25519(&Ed25519Signature{PubKey: pub, Signature: sig})
			}
			if err := check(pub, msg, sig); err != nil {
				t.Fatalf("RFC vector does not verify: %v", err)
			}
			for _, bit := range []int{0, 7, 255, 256, 511} {
				if check(pub, msg, flipBit(sig, bit)) == nil {
					t.Errorf("signature with bit %d flipped verifies", bit)
				}
			}
			for _, bit := range []int{0, 100, 254} {
				if check(flipBit(pub, bit), msg, sig) == nil {
					t.Errorf("public key with bit %d flipped verifies", bit)
				}
			}
			if len(msg) > 0 && check(pub, flipBit(msg, 8*len(msg)-1), sig) == nil {
				t.Errorf("message with its last bit flipped verifies")
			}
			if check(pub, append(msg, 0), sig) == nil {
				t.Errorf("message with a byte appended verifies")
			}
		})
	}
}

func TestVerifyEd25519(t *testing.T) {
	priv := edKey("alice")
	good := signEd(t, priv, typicalIntent)
	withPub := func(pub []byte) Signature {
		return Signature{Ed25519: &Ed25519Signature{PubKey: pub, Signature: good.Ed25519.Signature}}
	}
	withSig := func(sig []byte) Signature {
		return Signature{Ed25519: &Ed25519Signature{PubKey: good.Ed25519.PubKey, Signature: sig}}
	}
	// The same intent with its keys in another order and with whitespace: JCS makes
	// both the same bytes as typicalIntent.
	reordered := []byte(`{
	  "attrs": {"fields": {"colors": {"Set": {"String": ["navy", "blue"]}},
	                       "max_price_cents": {"Int": 2500}, "size": {"String": "M"}}},
	  "policy_id": "` + EncodeBase58(sha256Of("a policy")) + `",
	  "id": "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31"
	}`)
	// \u0061 is "a": the escape and the letter are one string to JCS.
	escaped := []byte(strings.Replace(string(typicalIntent), `"attrs"`, `"\u0061ttrs"`, 1))
	// The array order is part of the value, so changing it changes what is signed.
	swapped := []byte(strings.Replace(string(typicalIntent), `["navy","blue"]`, `["blue","navy"]`, 1))

	cases := []struct {
		name    string
		intent  []byte
		sig     Signature
		wantErr string
	}{
		{"valid", typicalIntent, good, ""},
		{"keys reordered and whitespace added", reordered, good, ""},
		{"unicode escape in a key", escaped, good, ""},
		{"different intent", otherIntent, good, "ed25519: signature does not verify"},
		{"array order changed", swapped, good, "ed25519: signature does not verify"},
		{"signature bit flipped", typicalIntent, withSig(flipBit(good.Ed25519.Signature, 77)), "ed25519: signature does not verify"},
		{"key of another signer", typicalIntent, withPub(edKey("bob").Public().(ed25519.PublicKey)), "ed25519: signature does not verify"},
		{"key 31 bytes", typicalIntent, withPub(good.Ed25519.PubKey[:31]), "ed25519: pub_key is 31 bytes, want 32"},
		{"key 33 bytes", typicalIntent, withPub(append(append([]byte(nil), good.Ed25519.PubKey...), 0)), "ed25519: pub_key is 33 bytes, want 32"},
		{"key empty", typicalIntent, withPub(nil), "ed25519: pub_key is 0 bytes, want 32"},
		{"signature 63 bytes", typicalIntent, withSig(good.Ed25519.Signature[:63]), "ed25519: signature is 63 bytes, want 64"},
		{"intent not JSON", []byte(`{"id":`), good, "intent cannot be canonicalized"},
		{"intent with duplicate keys", []byte(`{"id":"a","id":"b"}`), good, "intent cannot be canonicalized"},
		{"no scheme set", typicalIntent, Signature{}, "signature has 0 of Ed25519, Passkey, Multisig set"},
		{"two schemes set", typicalIntent, Signature{Ed25519: good.Ed25519, Passkey: &PasskeySignature{}}, "signature has 2 of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkVerify(t, Verify(tc.intent, signed(tc.sig), VerifyOptions{}), tc.wantErr)
		})
	}
}

func TestVerifyUnsigned(t *testing.T) {
	cases := []struct {
		name    string
		allow   bool
		intent  []byte
		wantErr error
	}{
		{"refused by default", false, typicalIntent, ErrUnsignedNotPermitted},
		{"permitted", true, typicalIntent, nil},
		// Unsigned asserts nothing about the bytes, so they are not even read.
		{"permitted whatever the intent", true, []byte(`not json`), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.intent, Authorship{}, VerifyOptions{AllowUnsigned: tc.allow})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.wantErr)
			}
			if errors.Is(err, ErrAuthorshipInvalid) {
				t.Fatalf("Verify = %v: an Unsigned refusal must not read as an invalid signature", err)
			}
		})
	}
}

func TestSignEd25519RefusesBadInput(t *testing.T) {
	cases := []struct {
		name   string
		priv   ed25519.PrivateKey
		intent []byte
	}{
		{"short key", edKey("alice")[:32], typicalIntent},
		{"intent not JSON", edKey("alice"), []byte(`{`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := SignEd25519(tc.priv, tc.intent); err == nil {
				t.Fatal("SignEd25519 succeeded, want an error")
			}
		})
	}
}

func TestCanonicalize(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"keys sorted", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"whitespace dropped", "{ \"a\" :\t[1, 2 ,3]\n}", `{"a":[1,2,3]}`},
		{"nested objects sorted", `{"z":{"y":1,"x":2},"a":null}`, `{"a":null,"z":{"x":2,"y":1}}`},
		{"escape normalised", `{"\u0061":"\u00e9"}`, `{"a":"é"}`},
		{"number normalised", `{"n":1.0E2}`, `{"n":100}`},
		// RFC 8785 sorts by UTF-16 code units: U+FB01 (0xFB01) sorts after U+1F600,
		// whose first code unit is the surrogate 0xD83D.
		{"utf-16 order", `{"ﬁ":1,"😀":2}`, `{"😀":2,"ﬁ":1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("Canonicalize(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestIntentNumbersMustBeExact covers the refusal of numbers JCS would round: without
// it a signature over one of two such intents would verify for the other.
func TestIntentNumbersMustBeExact(t *testing.T) {
	cases := []struct {
		name    string
		intent  string
		wantErr string
	}{
		{"largest exact integer", `{"attrs":{"n":{"Int":9007199254740991}}}`, ""},
		{"smallest exact integer", `{"n":-9007199254740991}`, ""},
		{"fraction", `{"n":0.5}`, ""},
		{"big integer in a string", `{"id":"9007199254740993"}`, ""},
		{"digits after an escaped quote", `{"a":"x\"99999999999999999","b":1}`, ""},
		{"2^53", `{"n":9007199254740992}`, "number 9007199254740992 is beyond"},
		{"2^53+1", `{"attrs":{"n":{"Int":9007199254740993}}}`, "is beyond ±(2^53-1)"},
		{"negative", `{"n":[1,-9007199254740993]}`, "is beyond"},
		{"exponent form", `{"n":1e16}`, "is beyond"},
	}
	priv := edKey("numbers")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := SignEd25519(priv, []byte(tc.intent))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("SignEd25519: %v", err)
				}
				checkVerify(t, Verify([]byte(tc.intent), a, VerifyOptions{}), "")
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("SignEd25519 = %v, want an error containing %q", err, tc.wantErr)
			}
			// A signature made over the JCS bytes anyway must still be refused.
			canon, err := Canonicalize([]byte(tc.intent))
			if err != nil {
				t.Fatal(err)
			}
			forced := Signature{Ed25519: &Ed25519Signature{PubKey: pubOf(priv), Signature: ed25519.Sign(priv, canon)}}
			checkVerify(t, Verify([]byte(tc.intent), signed(forced), VerifyOptions{}), tc.wantErr)
		})
	}
}

// TestVerifyCanonical checks that VerifyCanonical agrees with Verify on canonical
// bytes and refuses what is not canonical rather than accept it.
func TestVerifyCanonical(t *testing.T) {
	priv := edKey("alice")
	good := signed(signEd(t, priv, typicalIntent))
	canon, err := Canonicalize(typicalIntent)
	if err != nil {
		t.Fatal(err)
	}
	big := []byte(`{"id":"x","n":9007199254740993}`)
	cases := []struct {
		name    string
		canon   []byte
		a       Authorship
		opts    VerifyOptions
		wantErr string
	}{
		{"canonical bytes verify", canon, good, VerifyOptions{}, ""},
		{"other bytes fail", []byte(strings.Replace(string(canon), `"M"`, `"L"`, 1)), good, VerifyOptions{}, "ed25519: signature does not verify"},
		{"integers JCS rounds are refused", big, good, VerifyOptions{}, "intent cannot be canonicalized"},
		{"unsigned permitted", canon, Authorship{}, VerifyOptions{AllowUnsigned: true}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkVerify(t, VerifyCanonical(tc.canon, tc.a, tc.opts), tc.wantErr)
		})
	}
	t.Run("unsigned refused by default", func(t *testing.T) {
		if err := VerifyCanonical(canon, Authorship{}, VerifyOptions{}); !errors.Is(err, ErrUnsignedNotPermitted) {
			t.Fatalf("VerifyCanonical = %v, want ErrUnsignedNotPermitted", err)
		}
	})
}
