package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
)

// authorshipCases: the authorship's shape and its Base58 fields.
func (f *hostileFixture) authorshipCases() []hostileCase {
	in := f.intent(uuid.NewString(), hostileAttrs)
	c := hostileCanon(in)
	pub := crypto.EncodeBase58(hostilePub(f.keys[0]))
	sig := crypto.EncodeBase58(ed25519.Sign(f.keys[0], c))
	with := func(auth string) []byte { return hostileBody(in, auth) }
	ed := func(pubKey, signature string) []byte {
		return with(fmt.Sprintf(`{"Signed":{"Ed25519":{"pub_key":%s,"signature":%s}}}`, pubKey, signature))
	}
	q := func(s string) string { return `"` + s + `"` }
	b58 := func(n int) string { return q(crypto.EncodeBase58(bytes.Repeat([]byte{9}, n))) }
	const ma = "malformed_authorship"
	return []hostileCase{
		hostilePost("authorship null", with(`null`), 422, ma),
		hostilePost("authorship number", with(`1`), 422, ma),
		hostilePost("authorship array", with(`[]`), 422, ma),
		hostilePost("authorship unsigned in lower case", with(`"unsigned"`), 422, ma),
		hostilePost("authorship Signed as a string", with(`"Signed"`), 422, ma),
		hostilePost("authorship empty object", with(`{}`), 422, ma),
		hostilePost("authorship Signed and Unsigned", with(`{"Signed":{},"Unsigned":{}}`), 422, ma),
		hostilePost("Signed null", with(`{"Signed":null}`), 422, ma),
		hostilePost("Signed empty", with(`{"Signed":{}}`), 422, ma),
		hostilePost("Signed two schemes", with(`{"Signed":{"Ed25519":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`},"Passkey":{}}}`), 422, ma),
		hostilePost("Signed unknown scheme", with(`{"Signed":{"Secp256k1":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`}}}`), 422, ma),
		hostilePost("Signed duplicate scheme", with(`{"Signed":{"Ed25519":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`},"Ed25519":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`}}}`), 422, ma),
		hostilePost("Ed25519 missing signature", with(`{"Signed":{"Ed25519":{"pub_key":`+q(pub)+`}}}`), 422, ma),
		hostilePost("Ed25519 unknown field", with(`{"Signed":{"Ed25519":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`,"alg":"EdDSA"}}}`), 422, ma),
		hostilePost("Ed25519 pub_key number", ed(`12345`, q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key array of bytes", ed(`[1,2,3]`, q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key empty", ed(`""`, q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key bad Base58 0", ed(q("0"+pub[1:]), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key bad Base58 O", ed(q("O"+pub[1:]), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key bad Base58 I", ed(q("I"+pub[1:]), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key bad Base58 l", ed(q("l"+pub[1:]), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key Base64", ed(q("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key with a space", ed(q(" "+pub), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key 31 bytes", ed(b58(31), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key 33 bytes", ed(b58(33), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key with a leading zero byte", ed(q("1"+pub), q(sig)), 422, ma),
		hostilePost("Ed25519 signature 63 bytes", ed(q(pub), b58(63)), 422, ma),
		hostilePost("Ed25519 signature 65 bytes", ed(q(pub), b58(65)), 422, ma),
		hostilePost("Ed25519 signature 10000 bytes", ed(q(pub), b58(10000)), 422, ma),
		hostilePost("Ed25519 signature null", ed(q(pub), `null`), 422, ma),
		// Base58 decodes in time quadratic in its length: a value of a whole body's
		// length must be refused by its length, not decoded first.
		{name: "intents/Ed25519 pub_key of 1000000 Base58 characters", method: "POST", path: "/intents", ctype: hostileJSON,
			body: ed(q(strings.Repeat("z", 1_000_000)), q(sig)), status: 422, code: ma},
		{name: "intents/passkey authenticator_data of 1000000 Base58 characters", method: "POST", path: "/intents", ctype: hostileJSON,
			body: with(fmt.Sprintf(`{"Signed":{"Passkey":{"pub_key":%q,"signature":%q,"client_data":"{}","authenticator_data":%q}}}`,
				crypto.EncodeBase58(append([]byte{2}, bytes.Repeat([]byte{1}, 32)...)), crypto.EncodeBase58(bytes.Repeat([]byte{1}, 64)), strings.Repeat("z", 1_000_000))),
			status: 422, code: ma},
	}
}

// signatureCases: well-formed signatures that do not sign this intent's canonical bytes.
func (f *hostileFixture) signatureCases() []hostileCase {
	in := f.intent(uuid.NewString(), hostileAttrs)
	c := hostileCanon(in)
	k := f.keys[0]
	good := ed25519.Sign(k, c)
	flipped := append([]byte(nil), good...)
	flipped[10] ^= 1
	// S + L: the same signature written with a scalar out of range, the malleable form.
	const order = "7237005577332262213973186563042994240857116359379907606001950938285454250989"
	l, _ := new(big.Int).SetString(order, 10)
	sLE := append([]byte(nil), good[32:]...)
	hostileReverse(sLE)
	s := new(big.Int).SetBytes(sLE)
	s.Add(s, l)
	malleable := append([]byte(nil), good[:32]...)
	sBytes := s.FillBytes(make([]byte, 32))
	hostileReverse(sBytes)
	malleable = append(malleable, sBytes...)
	other := f.intent(uuid.NewString(), hostileAttrs)
	pretty, _ := json.MarshalIndent(json.RawMessage(in), "", "  ")
	prehash := sha256.Sum256(c)
	signedWith := func(sig string) []byte { return hostileBody(in, `{"Signed":`+sig+`}`) }
	const ai = "authorship_invalid"
	return []hostileCase{
		hostilePost("signature of another intent", signedWith(hostileEdSig(k, hostileCanon(other))), 400, ai),
		hostilePost("signature of the bytes as sent, not JCS", hostileBody(pretty, `{"Signed":`+hostileEdSig(k, pretty)+`}`), 400, ai),
		hostilePost("signature of SHA-256 of JCS", signedWith(hostileEdSig(k, prehash[:])), 400, ai),
		hostilePost("signature of the whole body", signedWith(hostileEdSig(k, hostileBody(c, `"Unsigned"`))), 400, ai),
		hostilePost("signature of JCS with a newline", signedWith(hostileEdSig(k, append(append([]byte(nil), c...), '\n'))), 400, ai),
		hostilePost("signature by another key", signedWith(hostileEdSigRaw(hostilePub(k), ed25519.Sign(f.keys[1], c))), 400, ai),
		hostilePost("signature with one bit flipped", signedWith(hostileEdSigRaw(hostilePub(k), flipped)), 400, ai),
		hostilePost("signature of zeros", signedWith(hostileEdSigRaw(hostilePub(k), make([]byte, 64))), 400, ai),
		hostilePost("signature with S above the group order", signedWith(hostileEdSigRaw(hostilePub(k), malleable)), 400, ai),
		hostilePost("public key not on the curve", signedWith(hostileEdSigRaw(bytes.Repeat([]byte{0xff}, 32), good)), 400, ai),
		// Under a key of small order a signature of S = 0 verifies for any intent by
		// crypto/ed25519's rules: no private key is needed.
		hostilePost("public key the identity, signature forged", signedWith(hostileEdSigRaw(append([]byte{1}, make([]byte, 31)...), append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))), 400, ai),
		hostilePost("public key of order 2, signature forged", signedWith(hostileEdSigRaw(append(append([]byte{0xec}, bytes.Repeat([]byte{0xff}, 30)...), 0x7f), append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))), 400, ai),
		hostilePost("public key the identity spelled y = p + 1, signature forged", signedWith(hostileEdSigRaw(append(append([]byte{0xee}, bytes.Repeat([]byte{0xff}, 30)...), 0x7f), append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))), 400, ai),
		hostilePost("signature over an attr changed after signing", hostileBody(bytes.Replace(in, []byte(`3000`), []byte(`3001`), 1), `{"Signed":`+hostileEdSig(k, c)+`}`), 400, ai),
		// JCS sorts keys and drops whitespace: the same intent sent differently is the
		// same signed bytes, and is stored.
		{name: "intents/keys reordered and spaced, signed over JCS", method: "POST", path: "/intents", ctype: hostileJSON,
			body: hostileBody(pretty, `{"Signed":`+hostileEdSig(k, c)+`}`), status: 200, stores: true},
	}
}

func hostileReverse(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}

// multisigCases: thresholds, weights, signers and nesting.
func (f *hostileFixture) multisigCases() []hostileCase {
	in := f.intent(uuid.NewString(), hostileAttrs)
	c := hostileCanon(in)
	k0, k1, k2, k3 := f.keys[0], f.keys[1], f.keys[2], f.keys[3]
	s0, s1, s2 := hostileEdSig(k0, c), hostileEdSig(k1, c), hostileEdSig(k2, c)
	two := []string{hostileSigner(hostilePub(k0), "1"), hostileSigner(hostilePub(k1), "1")}
	with := func(auth string) []byte { return hostileBody(in, auth) }
	ms := func(signers []string, threshold string, sigs ...string) []byte {
		return with(hostileMultisig(signers, threshold, sigs))
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(hostileMultisig(two, "1", []string{s0}), `{"Signed":`), "}")
	innerOf := func(sigs string) string {
		return strings.TrimSuffix(strings.TrimPrefix(hostileMultisig(two, "1", []string{sigs}), `{"Signed":`), "}")
	}
	manySigners := make([]string, 65)
	for i := range manySigners {
		manySigners[i] = hostileSigner(bytes.Repeat([]byte{byte(i + 1)}, 32), "1")
	}
	manySigs := make([]string, 65)
	for i := range manySigs {
		manySigs[i] = s0
	}
	p := f.passkey
	p.Compressed = false
	pkU := p.PublicKey()
	p.Compressed = true
	pkC := p.PublicKey()
	p.Compressed = false
	const maxU64 = "18446744073709551615"
	const ai, ma = "authorship_invalid", "malformed_authorship"
	// Weights and thresholds beyond 2^53-1 are refused, as every other number the
	// service reads past the JSON-safe range: a reader of another language would see
	// other numbers, and no sum of 64 of them can wrap.
	const max53, past53 = "9007199254740991", "9007199254740992"
	// One point, the identity, in two spellings: it must not count as two signers.
	identity := append([]byte{1}, make([]byte, 31)...)
	identity2 := append(append([]byte{0xee}, bytes.Repeat([]byte{0xff}, 30)...), 0x7f)
	forged := hostileEdSigRaw(identity, append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))
	forged2 := hostileEdSigRaw(identity2, append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))
	return []hostileCase{
		hostilePost("multisig threshold 0", ms(two, "0", s0), 400, ai),
		hostilePost("multisig threshold -1", ms(two, "-1", s0), 422, ma),
		hostilePost("multisig threshold 1.0", ms(two, "1.0", s0), 422, ma),
		hostilePost("multisig threshold 1e0", ms(two, "1e0", s0), 422, ma),
		hostilePost("multisig threshold as a string", ms(two, `"1"`, s0), 422, ma),
		hostilePost("multisig threshold null", ms(two, `null`, s0), 422, ma),
		hostilePost("multisig threshold 2^64", ms(two, "18446744073709551616", s0), 422, ma),
		hostilePost("multisig threshold of 400 digits", ms(two, strings.Repeat("9", 400), s0), 422, ma),
		hostilePost("multisig threshold above the weights", ms(two, "3", s0, s1), 400, ai),
		hostilePost("multisig weight 0", ms([]string{hostileSigner(hostilePub(k0), "0"), hostileSigner(hostilePub(k1), "1")}, "1", s1), 400, ai),
		hostilePost("multisig weight negative", ms([]string{hostileSigner(hostilePub(k0), "-1")}, "1", s0), 422, ma),
		hostilePost("multisig weight 2^64", ms([]string{hostileSigner(hostilePub(k0), "18446744073709551616")}, "1", s0), 422, ma),
		hostilePost("multisig weights overflow, one bad signature", ms([]string{hostileSigner(hostilePub(k0), maxU64), hostileSigner(hostilePub(k1), maxU64)}, maxU64, s0, hostileEdSigRaw(hostilePub(k1), make([]byte, 64))), 400, ai),
		hostilePost("multisig weights of 2^64-1 that would wrap", ms([]string{hostileSigner(hostilePub(k0), maxU64), hostileSigner(hostilePub(k1), "1")}, maxU64, s0, s1), 400, ai),
		hostilePost("multisig weight 2^53", ms([]string{hostileSigner(hostilePub(k0), past53), hostileSigner(hostilePub(k1), "1")}, "1", s0), 400, ai),
		hostilePost("multisig threshold 2^53", ms([]string{hostileSigner(hostilePub(k0), max53), hostileSigner(hostilePub(k1), max53)}, past53, s0, s1), 400, ai),
		hostilePost("multisig one small-order point in two spellings", ms([]string{hostileSigner(identity, "1"), hostileSigner(identity2, "1")}, "2", forged, forged2), 400, ai),
		{name: "intents/multisig weights of 2^53-1 reach a threshold of 2^53-1", method: "POST", path: "/intents", ctype: hostileJSON,
			body: ms([]string{hostileSigner(hostilePub(k0), max53), hostileSigner(hostilePub(k1), max53)}, max53, s0, s1), status: 200, stores: true},
		hostilePost("multisig no signers", ms(nil, "1", s0), 400, ai),
		hostilePost("multisig no signatures", ms(two, "1"), 400, ai),
		hostilePost("multisig 65 signers", ms(manySigners, "1", s0), 400, ai),
		hostilePost("multisig 65 signatures", ms(two, "1", manySigs...), 400, ai),
		hostilePost("multisig signer listed twice in the object", ms([]string{hostileSigner(hostilePub(k0), "1"), hostileSigner(hostilePub(k0), "1")}, "1", s0), 422, ma),
		hostilePost("multisig P-256 signer listed in both forms", ms([]string{hostileSigner(pkU, "1"), hostileSigner(pkC, "1")}, "1", s0), 400, ai),
		hostilePost("multisig same signer signs twice", ms(two, "2", s0, s0), 400, ai),
		hostilePost("multisig unknown signer", ms(two, "1", s2), 400, ai),
		hostilePost("multisig unknown signer beside a good one", ms(two, "1", s0, s2), 400, ai),
		hostilePost("multisig signer key 31 bytes", ms([]string{hostileSigner(bytes.Repeat([]byte{3}, 31), "1")}, "1", s0), 422, ma),
		hostilePost("multisig signer key bad Base58", ms([]string{`"0OIl":1`}, "1", s0), 422, ma),
		hostilePost("multisig signers an array", with(strings.Replace(hostileMultisig(nil, "1", []string{s0}), `"signers":{}`, `"signers":[]`, 1)), 422, ma),
		hostilePost("multisig signatures an object", with(strings.Replace(hostileMultisig(two, "1", nil), `"signatures":[]`, `"signatures":{}`, 1)), 422, ma),
		hostilePost("multisig missing threshold", with(strings.Replace(hostileMultisig(two, "1", []string{s0}), `,"threshold":1`, ``, 1)), 422, ma),
		hostilePost("multisig unknown field", with(strings.Replace(hostileMultisig(two, "1", []string{s0}), `"signatures"`, `"m":1,"signatures"`, 1)), 422, ma),
		hostilePost("multisig nested one level", ms(two, "1", inner), 400, ai),
		hostilePost("multisig nested two levels", ms(two, "1", innerOf(inner)), 422, ma),
		hostilePost("multisig nested 40 levels", ms(two, "1", hostileNestMultisig(two, s0, 40)), 422, ma),
		hostilePost("multisig signature by an unlisted key over another intent", ms([]string{hostileSigner(hostilePub(k3), "1")}, "1", hostileEdSig(k3, hostileCanon(f.intent(uuid.NewString(), hostileAttrs)))), 400, ai),
	}
}

func hostileNestMultisig(signers []string, leaf string, depth int) string {
	s := leaf
	for range depth {
		s = strings.TrimSuffix(strings.TrimPrefix(hostileMultisig(signers, "1", []string{s}), `{"Signed":`), "}")
	}
	return s
}

// passkeyCases: WebAuthn assertions wrong in one way each.
func (f *hostileFixture) passkeyCases() []hostileCase {
	t := f.t
	p := f.passkey
	in := f.intent(uuid.NewString(), hostileAttrs)
	challenge, err := crypto.PasskeyChallenge(in)
	if err != nil {
		t.Fatal(err)
	}
	otherChallenge, _ := crypto.PasskeyChallenge(f.intent(uuid.NewString(), hostileAttrs))
	ad := p.AuthenticatorData(0x01)
	cd := p.ClientData("webauthn.get", challenge)
	signedWith := func(sig string) []byte { return hostileBody(in, `{"Signed":`+sig+`}`) }
	assert := func(ad []byte, cd string) []byte {
		ps, err := p.AssertRaw(ad, cd)
		return signedWith(hostilePasskeySig(t, ps, err))
	}
	good, err := p.AssertRaw(ad, cd)
	if err != nil {
		t.Fatal(err)
	}
	tampered := *good
	tampered.ClientData = strings.Replace(cd, `"crossOrigin":false`, `"crossOrigin":true`, 1)
	offCurve := *good
	offCurve.PubKey = append([]byte{0x04}, bytes.Repeat([]byte{1}, 64)...)
	wire := hostilePasskeySig(t, good, nil)
	const ai, ma = "authorship_invalid", "malformed_authorship"
	return []hostileCase{
		hostilePost("passkey create, not get", assert(ad, p.ClientData("webauthn.create", challenge)), 400, ai),
		hostilePost("passkey challenge of another intent", assert(ad, p.ClientData("webauthn.get", otherChallenge)), 400, ai),
		hostilePost("passkey challenge with padding", assert(ad, p.ClientData("webauthn.get", challenge+"=")), 400, ai),
		hostilePost("passkey client data not JSON", assert(ad, "type=webauthn.get"), 400, ai),
		hostilePost("passkey client data with duplicate type", assert(ad, `{"type":"webauthn.create","type":"webauthn.get","challenge":"`+challenge+`"}`), 400, ai),
		hostilePost("passkey without user presence", assert(p.AuthenticatorData(0x00), cd), 400, ai),
		hostilePost("passkey authenticator data 36 bytes", assert(ad[:36], cd), 400, ai),
		hostilePost("passkey client data changed after signing", signedWith(hostilePasskeySig(t, &tampered, nil)), 400, ai),
		hostilePost("passkey key not on the curve", signedWith(hostilePasskeySig(t, &offCurve, nil)), 400, ai),
		hostilePost("passkey key 32 bytes", signedWith(strings.Replace(wire, crypto.EncodeBase58(good.PubKey), crypto.EncodeBase58(good.PubKey[:32]), 1)), 422, ma),
		hostilePost("passkey signature 7 bytes", signedWith(strings.Replace(wire, crypto.EncodeBase58(good.Signature), crypto.EncodeBase58(good.Signature[:7]), 1)), 422, ma),
		hostilePost("passkey signature 73 bytes", signedWith(strings.Replace(wire, crypto.EncodeBase58(good.Signature), crypto.EncodeBase58(append(bytes.Repeat([]byte{1}, 72), 1)), 1)), 422, ma),
		hostilePost("passkey client data an object", signedWith(fmt.Sprintf(`{"Passkey":{"pub_key":%q,"signature":%q,"client_data":{"type":"webauthn.get"},"authenticator_data":%q}}`,
			crypto.EncodeBase58(good.PubKey), crypto.EncodeBase58(good.Signature), crypto.EncodeBase58(ad))), 422, ma),
		hostilePost("passkey authenticator data bad Base58", signedWith(fmt.Sprintf(`{"Passkey":{"pub_key":%q,"signature":%q,"client_data":%q,"authenticator_data":"0OIl"}}`,
			crypto.EncodeBase58(good.PubKey), crypto.EncodeBase58(good.Signature), cd)), 422, ma),
	}
}
