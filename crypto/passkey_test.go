package crypto

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// TestSoftPasskeyShapes checks that the software authenticator produces what a real
// one does, since the other passkey tests trust it to.
func TestSoftPasskeyShapes(t *testing.T) {
	p := softPasskey(t, "shapes")
	for _, compressed := range []bool{false, true} {
		p.Compressed = compressed
		s, err := p.Assert(typicalIntent)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case compressed && (len(s.PubKey) != 33 || (s.PubKey[0] != 2 && s.PubKey[0] != 3)):
			t.Errorf("compressed key = %x, want 33 bytes starting 02 or 03", s.PubKey)
		case !compressed && (len(s.PubKey) != 65 || s.PubKey[0] != 4):
			t.Errorf("uncompressed key = %x, want 65 bytes starting 04", s.PubKey)
		}
		if len(s.AuthenticatorData) != 37 || s.AuthenticatorData[32] != 0x01 {
			t.Errorf("authenticator data = %x, want 37 bytes with flags 0x01", s.AuthenticatorData)
		}
		if rp := sha256.Sum256([]byte("shop.example")); !bytes.Equal(s.AuthenticatorData[:32], rp[:]) {
			t.Errorf("authenticator data does not open with SHA-256 of the RP id")
		}
		var cd map[string]any
		if err := json.Unmarshal([]byte(s.ClientData), &cd); err != nil {
			t.Fatalf("client data is not JSON: %v", err)
		}
		sum := sha256.Sum256([]byte(`{"attrs":{"fields":{"colors":{"Set":{"String":["navy","blue"]}},"max_price_cents":{"Int":2500},"size":{"String":"M"}}},"id":"6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31","policy_id":"` + EncodeBase58(sha256Of("a policy")) + `"}`))
		want := base64.RawURLEncoding.EncodeToString(sum[:])
		if cd["type"] != "webauthn.get" || cd["challenge"] != want || cd["origin"] != "https://shop.example" {
			t.Errorf("client data = %s, want type webauthn.get, challenge %s, origin https://shop.example", s.ClientData, want)
		}
	}
	p.RawSignature = true
	if s, err := p.Assert(typicalIntent); err != nil || len(s.Signature) != 64 {
		t.Errorf("raw signature = %x (%v), want 64 bytes", s.Signature, err)
	}
}

func TestVerifyPasskey(t *testing.T) {
	p := softPasskey(t, "carol")
	challenge, err := PasskeyChallenge(typicalIntent)
	if err != nil {
		t.Fatal(err)
	}
	otherChallenge, _ := PasskeyChallenge(otherIntent)
	upFlag := byte(0x01)

	// assertion builds a passkey signature from parts, signing them as given.
	type form struct{ compressed, raw bool }
	assertion := func(f form, authData []byte, clientData string) Signature {
		t.Helper()
		q := *p
		q.Compressed, q.RawSignature = f.compressed, f.raw
		s, err := q.AssertRaw(authData, clientData)
		if err != nil {
			t.Fatal(err)
		}
		return Signature{Passkey: s}
	}
	good := func(f form) Signature {
		return assertion(f, p.AuthenticatorData(upFlag), p.ClientData("webauthn.get", challenge))
	}
	// modified returns a copy of a good assertion with one part changed after signing.
	modified := func(change func(s *PasskeySignature)) Signature {
		s := *good(form{}).Passkey
		change(&s)
		return Signature{Passkey: &s}
	}
	other := softPasskey(t, "dave")
	otherRP := *p
	otherRP.RPID = "evil.example"
	otherOrigin := *p
	otherOrigin.Origin = "https://evil.example"

	strict := VerifyOptions{PasskeyOrigin: "https://shop.example", PasskeyRPID: "shop.example"}
	requireUV := strict
	requireUV.PasskeyRequireUV = true
	cases := []struct {
		name    string
		sig     Signature
		opts    VerifyOptions
		wantErr string
	}{
		{"uncompressed key, DER signature", good(form{}), strict, ""},
		{"uncompressed key, raw signature", good(form{raw: true}), strict, ""},
		{"compressed key, DER signature", good(form{compressed: true}), strict, ""},
		{"compressed key, raw signature", good(form{compressed: true, raw: true}), strict, ""},
		{"user verified flag as well", assertion(form{}, p.AuthenticatorData(0x05), p.ClientData("webauthn.get", challenge)), strict, ""},
		{"longer authenticator data (extensions)", assertion(form{}, append(p.AuthenticatorData(0xc1), 0xa0), p.ClientData("webauthn.get", challenge)), strict, ""},
		{"other origin, origin not configured", assertion(form{}, p.AuthenticatorData(upFlag), otherOrigin.ClientData("webauthn.get", challenge)), VerifyOptions{}, ""},
		{"other RP id, RP id not configured", assertion(form{}, otherRP.AuthenticatorData(upFlag), p.ClientData("webauthn.get", challenge)), VerifyOptions{}, ""},

		{"wrong challenge", assertion(form{}, p.AuthenticatorData(upFlag), p.ClientData("webauthn.get", otherChallenge)), strict, "passkey: challenge does not match the intent"},
		{"challenge with padding", assertion(form{}, p.AuthenticatorData(upFlag), p.ClientData("webauthn.get", challenge+"=")), strict, "passkey: challenge does not match the intent"},
		{"challenge missing", assertion(form{}, p.AuthenticatorData(upFlag), `{"type":"webauthn.get","origin":"https://shop.example"}`), strict, "passkey: challenge does not match the intent"},
		{"wrong type", assertion(form{}, p.AuthenticatorData(upFlag), p.ClientData("webauthn.create", challenge)), strict, `passkey: client_data type is "webauthn.create", want "webauthn.get"`},
		{"user-present flag missing", assertion(form{}, p.AuthenticatorData(0x04), p.ClientData("webauthn.get", challenge)), strict, "passkey: authenticator_data does not have the user-present flag set"},
		{"other origin when configured", assertion(form{}, p.AuthenticatorData(upFlag), otherOrigin.ClientData("webauthn.get", challenge)), strict, `passkey: client_data origin "https://evil.example" is not the allowed origin "https://shop.example"`},
		{"wrong RP id hash when configured", assertion(form{}, otherRP.AuthenticatorData(upFlag), p.ClientData("webauthn.get", challenge)), strict, `passkey: authenticator_data RP id hash is not SHA-256 of RP id "shop.example"`},
		{"truncated authenticator data", assertion(form{}, p.AuthenticatorData(upFlag)[:36], p.ClientData("webauthn.get", challenge)), strict, "passkey: authenticator_data is 36 bytes, want at least 37"},
		{"empty authenticator data", modified(func(s *PasskeySignature) { s.AuthenticatorData = nil }), strict, "passkey: authenticator_data is 0 bytes"},
		{"signature over other client data", modified(func(s *PasskeySignature) {
			s.ClientData = strings.Replace(s.ClientData, `"crossOrigin":false`, `"crossOrigin":false,"extra":1`, 1)
		}), strict, "passkey: signature does not verify"},
		{"framed by another site", assertion(form{}, p.AuthenticatorData(upFlag), crossOrigin(p, challenge, "https://evil.example")), strict,
			`passkey: client_data says crossOrigin, framed by "https://evil.example", which is not an allowed top origin`},
		{"cross-origin with no top origin", assertion(form{}, p.AuthenticatorData(upFlag), crossOrigin(p, challenge, "")), strict, "which is not an allowed top origin"},
		{"framed by an allowed site", assertion(form{}, p.AuthenticatorData(upFlag), crossOrigin(p, challenge, "https://wallet.example")),
			VerifyOptions{PasskeyOrigin: "https://shop.example", PasskeyRPID: "shop.example", PasskeyTopOrigins: []string{"https://wallet.example"}}, ""},
		{"user verified, required", assertion(form{}, p.AuthenticatorData(0x05), p.ClientData("webauthn.get", challenge)), requireUV, ""},
		{"user verified among other flags, required", assertion(form{}, append(p.AuthenticatorData(0xc5), 0xa0), p.ClientData("webauthn.get", challenge)), requireUV, ""},
		{"user not verified, required", good(form{}), requireUV,
			"passkey: authenticator_data does not have the user-verified flag set, and this service requires user verification"},
		{"other flags but not user verified, required", assertion(form{}, p.AuthenticatorData(0xc1), p.ClientData("webauthn.get", challenge)), requireUV,
			"passkey: authenticator_data does not have the user-verified flag set"},
		{"user verified without user present, required", assertion(form{}, p.AuthenticatorData(0x04), p.ClientData("webauthn.get", challenge)), requireUV,
			"passkey: authenticator_data does not have the user-present flag set"},
		{"user not verified, required, no origin checks", good(form{}), VerifyOptions{PasskeyRequireUV: true},
			"passkey: authenticator_data does not have the user-verified flag set"},
		{"cross-origin, origin not configured", assertion(form{}, p.AuthenticatorData(upFlag), crossOrigin(p, challenge, "https://evil.example")), VerifyOptions{}, ""},
		{"signature over other authenticator data", modified(func(s *PasskeySignature) { s.AuthenticatorData = p.AuthenticatorData(0x05) }), strict, "passkey: signature does not verify"},
		{"signature bit flipped", modified(func(s *PasskeySignature) { s.Signature = flipBit(s.Signature, 8*len(s.Signature)-3) }), strict, "passkey: signature does not verify"},
		{"raw signature truncated", modified(func(s *PasskeySignature) { s.Signature = good(form{raw: true}).Passkey.Signature[:63] }), strict, "passkey: signature does not verify"},
		{"key of another passkey", modified(func(s *PasskeySignature) { s.PubKey = other.PublicKey() }), strict, "passkey: signature does not verify"},
		{"key not on the curve", modified(func(s *PasskeySignature) { s.PubKey = flipBit(s.PubKey, 8*64) }), strict, "passkey: pub_key is not a point on P-256"},
		{"compressed key with no point", modified(func(s *PasskeySignature) {
			// x = 2^256-1 is above the field prime, so no point has it.
			s.PubKey = append([]byte{2}, bytes.Repeat([]byte{0xff}, 32)...)
		}), strict, "passkey: pub_key is not a point on P-256"},
		{"key 32 bytes", modified(func(s *PasskeySignature) { s.PubKey = s.PubKey[:32] }), strict, "passkey: pub_key is 32 bytes, want 33 (compressed) or 65 (uncompressed)"},
		{"client data not JSON", assertion(form{}, p.AuthenticatorData(upFlag), `type=webauthn.get`), strict, "passkey: client_data is not a JSON object"},
		{"client data a JSON array", assertion(form{}, p.AuthenticatorData(upFlag), `["webauthn.get"]`), strict, "passkey: client_data is not a JSON object"},
		{"client data type a number", assertion(form{}, p.AuthenticatorData(upFlag), `{"type":1}`), strict, "passkey: client_data is not a JSON object"},
		{"client data naming its type twice", assertion(form{}, p.AuthenticatorData(upFlag),
			`{"type":"webauthn.create","challenge":"`+challenge+`","origin":"https://shop.example","type":"webauthn.get"}`),
			strict, "passkey: client_data.type: duplicate key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkVerify(t, Verify(typicalIntent, signed(tc.sig), tc.opts), tc.wantErr)
		})
	}
}

func TestVerifyPasskeyOtherIntent(t *testing.T) {
	p := softPasskey(t, "erin")
	a, err := p.Sign(typicalIntent)
	if err != nil {
		t.Fatal(err)
	}
	checkVerify(t, Verify(typicalIntent, a, VerifyOptions{}), "")
	checkVerify(t, Verify(otherIntent, a, VerifyOptions{}), "passkey: challenge does not match the intent")
}

func TestGenerateSoftPasskey(t *testing.T) {
	p, err := GenerateSoftPasskey("localhost", "http://localhost:8080")
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Sign(typicalIntent)
	if err != nil {
		t.Fatal(err)
	}
	checkVerify(t, Verify(typicalIntent, a, VerifyOptions{PasskeyOrigin: "http://localhost:8080", PasskeyRPID: "localhost"}), "")
	if _, err := NewSoftPasskey(nil, "", ""); err == nil {
		t.Error("NewSoftPasskey(nil) succeeded, want an error")
	}
}

// crossOrigin is the client data of an assertion made in a frame of top, another site
// than the passkey's origin.
func crossOrigin(p *SoftPasskey, challenge, top string) string {
	cd := strings.Replace(p.ClientData("webauthn.get", challenge), `"crossOrigin":false`, `"crossOrigin":true`, 1)
	if top == "" {
		return cd
	}
	return strings.TrimSuffix(cd, "}") + `,"topOrigin":"` + top + `"}`
}
