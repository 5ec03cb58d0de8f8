package crypto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Wire fixtures: Base58 strings of the right lengths for each kind of value.
var (
	b58Key32  = EncodeBase58(bytes.Repeat([]byte{7}, 32))
	b58Sig64  = EncodeBase58(bytes.Repeat([]byte{9}, 64))
	b58Key33  = EncodeBase58(append([]byte{2}, bytes.Repeat([]byte{5}, 32)...))
	b58Key65  = EncodeBase58(append([]byte{4}, bytes.Repeat([]byte{6}, 64)...))
	b58Der70  = EncodeBase58(bytes.Repeat([]byte{0x30}, 70))
	b58Auth37 = EncodeBase58(bytes.Repeat([]byte{1}, 37))
	b58Key31  = EncodeBase58(bytes.Repeat([]byte{7}, 31))
	b58Sig63  = EncodeBase58(bytes.Repeat([]byte{9}, 63))
	b58Key32b = EncodeBase58(bytes.Repeat([]byte{8}, 32))
)

func edJSON(pub, sig string) string {
	return `{"Ed25519":{"pub_key":` + pub + `,"signature":` + sig + `}}`
}

func q(s string) string { return `"` + s + `"` }

var (
	validEd      = edJSON(q(b58Key32), q(b58Sig64))
	validPasskey = `{"Passkey":{"pub_key":"` + b58Key33 + `","signature":"` + b58Der70 +
		`","client_data":"{\"type\":\"webauthn.get\"}","authenticator_data":"` + b58Auth37 + `"}}`
	validMultisig = `{"Multisig":{"pub_key":{"signers":{"` + b58Key32 + `":1,"` + b58Key65 + `":18446744073709551615},"threshold":2},"signatures":[` +
		validEd + `,` + validPasskey + `]}}`
)

func multisigJSON(pubKey, sigs string) string {
	return `{"Signed":{"Multisig":{"pub_key":` + pubKey + `,"signatures":` + sigs + `}}}`
}

// TestDecodeRoundTrip decodes valid wire forms and checks that encoding gives the
// same bytes back, and that the decoded values hold what the JSON says.
func TestDecodeRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		json  string
		check func(t *testing.T, a Authorship)
	}{
		{"unsigned", `"Unsigned"`, func(t *testing.T, a Authorship) {
			if !a.Unsigned() {
				t.Error("Unsigned() = false")
			}
		}},
		{"ed25519", `{"Signed":` + validEd + `}`, func(t *testing.T, a Authorship) {
			e := a.Signature.Ed25519
			if a.Unsigned() || e == nil || !bytes.Equal(e.PubKey, bytes.Repeat([]byte{7}, 32)) || !bytes.Equal(e.Signature, bytes.Repeat([]byte{9}, 64)) {
				t.Errorf("decoded %+v", a.Signature)
			}
		}},
		{"passkey", `{"Signed":` + validPasskey + `}`, func(t *testing.T, a Authorship) {
			p := a.Signature.Passkey
			if p == nil || len(p.PubKey) != 33 || len(p.Signature) != 70 || p.ClientData != `{"type":"webauthn.get"}` || len(p.AuthenticatorData) != 37 {
				t.Errorf("decoded %+v", p)
			}
		}},
		{"multisig", `{"Signed":` + validMultisig + `}`, func(t *testing.T, a Authorship) {
			m := a.Signature.Multisig
			if m == nil || m.Threshold != 2 || len(m.Signers) != 2 || m.Signers[1].Weight != 1<<64-1 ||
				len(m.Signers[1].PubKey) != 65 || len(m.Signatures) != 2 || m.Signatures[1].Passkey == nil {
				t.Errorf("decoded %+v", m)
			}
		}},
		// One level of nesting decodes, so that Verify can refuse it as an
		// authorship error rather than a schema error.
		{"nested multisig decodes", multisigJSON(`{"signers":{"`+b58Key32+`":1},"threshold":1}`, `[`+validMultisig+`]`), func(t *testing.T, a Authorship) {
			if a.Signature.Multisig.Signatures[0].Multisig == nil {
				t.Error("inner multisig lost")
			}
		}},
		{"client data with escapes", `{"Signed":{"Passkey":{"pub_key":"` + b58Key65 + `","signature":"` + b58Sig64 +
			`","client_data":"\u003c\"é\"\\\n","authenticator_data":"` + b58Auth37 + `"}}}`, func(t *testing.T, a Authorship) {
			if got := a.Signature.Passkey.ClientData; got != "<\"é\"\\\n" {
				t.Errorf("client_data = %q", got)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := DecodeAuthorship([]byte(tc.json))
			if err != nil {
				t.Fatalf("DecodeAuthorship: %v", err)
			}
			tc.check(t, a)
			out, err := json.Marshal(a)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			again, err := DecodeAuthorship(out)
			if err != nil {
				t.Fatalf("decoding the encoding %s: %v", out, err)
			}
			if !reflect.DeepEqual(a.Signature, again.Signature) {
				t.Fatalf("round trip changed the value:\n%+v\n%+v", a.Signature, again.Signature)
			}
			// json.Marshal escapes < as \u003c, which the input spells that way too.
			if string(out) != tc.json {
				t.Fatalf("encoding differs from the input:\n got %s\nwant %s", out, tc.json)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	ed := func(pub, sig string) string { return `{"Signed":` + edJSON(pub, sig) + `}` }
	pk := func(fields string) string { return `{"Signed":{"Passkey":{` + fields + `}}}` }
	pkFields := func(pub, sig, cd, ad string) string {
		return `"pub_key":` + pub + `,"signature":` + sig + `,"client_data":` + cd + `,"authenticator_data":` + ad
	}
	goodPK := pkFields(q(b58Key33), q(b58Der70), `"{}"`, q(b58Auth37))
	signers := func(inner string) string { return `{"signers":{` + inner + `},"threshold":1}` }
	one := `"` + b58Key32 + `":1`
	deep := multisigJSON(signers(one), `[{"Multisig":{"pub_key":`+signers(one)+`,"signatures":[`+validMultisig+`]}}]`)

	cases := []struct {
		name, json, field, reason string
	}{
		{"null", `null`, "", "must not be null"},
		{"number", `42`, "", "must be \"Unsigned\" or {\"Signed\": ...}, got number"},
		{"unknown string", `"unsigned"`, "", `unknown authorship "unsigned"`},
		{"empty object", `{}`, "", `empty object, want exactly one of "Signed"`},
		{"unknown top key", `{"Signed":` + validEd + `,"Extra":1}`, "Extra", "unknown field"},
		{"Signed twice", `{"Signed":` + validEd + `,"Signed":` + validEd + `}`, "Signed", "duplicate key"},
		{"Signed null", `{"Signed":null}`, "Signed", "must not be null"},
		{"Signed a string", `{"Signed":"Ed25519"}`, "Signed", "must be an object"},
		{"Signed empty", `{"Signed":{}}`, "Signed", "empty object, want exactly one of"},
		{"two schemes", `{"Signed":{"Ed25519":{"pub_key":"` + b58Key32 + `","signature":"` + b58Sig64 + `"},"Passkey":{}}}`, "Signed", `has both "Ed25519" and "Passkey"`},
		{"unknown scheme", `{"Signed":{"Rsa":{}}}`, "Signed.Rsa", "unknown field"},
		{"invalid JSON", `{"Signed":`, "", "not valid JSON"},
		{"trailing data", `"Unsigned" "Unsigned"`, "", "not valid JSON: data after the value"},
		{"too deep", strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40), "", "nested more than 32 levels deep"},

		{"ed25519 null", `{"Signed":{"Ed25519":null}}`, "Signed.Ed25519", "must not be null"},
		{"ed25519 missing signature", `{"Signed":{"Ed25519":{"pub_key":"` + b58Key32 + `"}}}`, "Signed.Ed25519.signature", "missing"},
		{"ed25519 missing pub_key", `{"Signed":{"Ed25519":{"signature":"` + b58Sig64 + `"}}}`, "Signed.Ed25519.pub_key", "missing"},
		{"ed25519 unknown field", `{"Signed":{"Ed25519":{"pub_key":"` + b58Key32 + `","signature":"` + b58Sig64 + `","alg":"x"}}}`, "Signed.Ed25519.alg", "unknown field"},
		{"ed25519 pub_key twice", `{"Signed":{"Ed25519":{"pub_key":"` + b58Key32 + `","pub_key":"` + b58Key32 + `","signature":"` + b58Sig64 + `"}}}`, "Signed.Ed25519.pub_key", "duplicate key"},
		{"ed25519 pub_key number", ed(`12`, q(b58Sig64)), "Signed.Ed25519.pub_key", "must be a Base58 string, got number"},
		{"ed25519 pub_key null", ed(`null`, q(b58Sig64)), "Signed.Ed25519.pub_key", "must not be null"},
		{"ed25519 pub_key array", ed(`[]`, q(b58Sig64)), "Signed.Ed25519.pub_key", "got array"},
		{"ed25519 pub_key bad Base58", ed(q("0OIl"+b58Key32[4:]), q(b58Sig64)), "Signed.Ed25519.pub_key", "not valid Base58"},
		{"ed25519 pub_key empty", ed(`""`, q(b58Sig64)), "Signed.Ed25519.pub_key", "empty string"},
		{"ed25519 pub_key 31 bytes", ed(q(b58Key31), q(b58Sig64)), "Signed.Ed25519.pub_key", "decodes to 31 bytes, want 32"},
		{"ed25519 pub_key 33 bytes", ed(q(b58Key33), q(b58Sig64)), "Signed.Ed25519.pub_key", "decodes to 33 bytes, want 32"},
		{"ed25519 signature 63 bytes", ed(q(b58Key32), q(b58Sig63)), "Signed.Ed25519.signature", "decodes to 63 bytes, want 64"},
		{"ed25519 signature bool", ed(q(b58Key32), `true`), "Signed.Ed25519.signature", "got boolean"},

		{"passkey pub_key 32 bytes", pk(pkFields(q(b58Key32), q(b58Der70), `"{}"`, q(b58Auth37))), "Signed.Passkey.pub_key", "decodes to 32 bytes, want 33 or 65"},
		{"passkey signature 7 bytes", pk(pkFields(q(b58Key65), q(EncodeBase58(make([]byte, 7))), `"{}"`, q(b58Auth37))), "Signed.Passkey.signature", "decodes to 7 bytes"},
		{"passkey signature 73 bytes", pk(pkFields(q(b58Key65), q(EncodeBase58(make([]byte, 73))), `"{}"`, q(b58Auth37))), "Signed.Passkey.signature", "decodes to 73 bytes"},
		{"passkey client_data object", pk(pkFields(q(b58Key65), q(b58Der70), `{"type":"webauthn.get"}`, q(b58Auth37))), "Signed.Passkey.client_data", "must be a string, got object"},
		{"passkey client_data null", pk(pkFields(q(b58Key65), q(b58Der70), `null`, q(b58Auth37))), "Signed.Passkey.client_data", "must not be null"},
		{"passkey authenticator_data bad Base58", pk(pkFields(q(b58Key65), q(b58Der70), `"{}"`, `"abc0"`)), "Signed.Passkey.authenticator_data", "not valid Base58"},
		{"passkey missing authenticator_data", pk(`"pub_key":"` + b58Key33 + `","signature":"` + b58Der70 + `","client_data":"{}"`), "Signed.Passkey.authenticator_data", "missing"},
		{"passkey unknown field", pk(goodPK + `,"counter":1`), "Signed.Passkey.counter", "unknown field"},

		{"multisig missing signatures", `{"Signed":{"Multisig":{"pub_key":` + signers(one) + `}}}`, "Signed.Multisig.signatures", "missing"},
		{"multisig missing pub_key", `{"Signed":{"Multisig":{"signatures":[]}}}`, "Signed.Multisig.pub_key", "missing"},
		{"multisig pub_key a string", multisigJSON(q(b58Key32), `[]`), "Signed.Multisig.pub_key", "must be an object, got string"},
		{"multisig threshold missing", multisigJSON(`{"signers":{`+one+`}}`, `[]`), "Signed.Multisig.pub_key.threshold", "missing"},
		{"multisig threshold null", multisigJSON(`{"signers":{`+one+`},"threshold":null}`, `[]`), "Signed.Multisig.pub_key.threshold", "must not be null"},
		{"multisig threshold negative", multisigJSON(`{"signers":{`+one+`},"threshold":-1}`, `[]`), "Signed.Multisig.pub_key.threshold", "-1 is not a non-negative integer"},
		{"multisig threshold a string", multisigJSON(`{"signers":{`+one+`},"threshold":"2"}`, `[]`), "Signed.Multisig.pub_key.threshold", "got string"},
		{"multisig threshold above u64", multisigJSON(`{"signers":{`+one+`},"threshold":18446744073709551616}`, `[]`), "Signed.Multisig.pub_key.threshold", "is above 18446744073709551615"},
		{"multisig pub_key unknown field", multisigJSON(`{"signers":{`+one+`},"threshold":1,"m":2}`, `[]`), "Signed.Multisig.pub_key.m", "unknown field"},
		{"multisig signers an array", multisigJSON(`{"signers":[],"threshold":1}`, `[]`), "Signed.Multisig.pub_key.signers", "got array"},
		{"multisig signer key bad Base58", multisigJSON(signers(`"0x12":1`), `[]`), "Signed.Multisig.pub_key.signers.0x12", "key not valid Base58"},
		{"multisig signer key 31 bytes", multisigJSON(signers(`"`+b58Key31+`":1`), `[]`), "Signed.Multisig.pub_key.signers." + b58Key31, "key decodes to 31 bytes, want 32, 33 or 65"},
		{"multisig signer listed twice", multisigJSON(signers(one+`,"`+b58Key32b+`":1,`+one), `[]`), "Signed.Multisig.pub_key.signers." + b58Key32, "duplicate key"},
		{"multisig weight fraction", multisigJSON(signers(`"`+b58Key32+`":1.5`), `[]`), "Signed.Multisig.pub_key.signers." + b58Key32, "1.5 is not a non-negative integer"},
		{"multisig weight exponent", multisigJSON(signers(`"`+b58Key32+`":1e3`), `[]`), "Signed.Multisig.pub_key.signers." + b58Key32, "1e3 is not a non-negative integer"},
		{"multisig weight null", multisigJSON(signers(`"`+b58Key32+`":null`), `[]`), "Signed.Multisig.pub_key.signers." + b58Key32, "must not be null"},
		{"multisig signatures an object", multisigJSON(signers(one), `{}`), "Signed.Multisig.signatures", "must be an array of signatures, got object"},
		{"multisig signatures null", multisigJSON(signers(one), `null`), "Signed.Multisig.signatures", "must not be null"},
		{"multisig signature bad", multisigJSON(signers(one), `[`+validEd+`,`+edJSON(q(b58Key31), q(b58Sig64))+`]`), "Signed.Multisig.signatures[1].Ed25519.pub_key", "decodes to 31 bytes"},
		{"multisig signature null", multisigJSON(signers(one), `[null]`), "Signed.Multisig.signatures[0]", "must not be null"},
		{"multisig nested two deep", deep, "Signed.Multisig.signatures[0].Multisig.signatures[0].Multisig", "signatures nested more than 3 deep"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeAuthorship([]byte(tc.json))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("DecodeAuthorship(%s) = %v, want a *FieldError", tc.json, err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Reason, tc.reason) {
				t.Fatalf("FieldError{%q, %q}, want field %q and a reason containing %q", fe.Field, fe.Reason, tc.field, tc.reason)
			}
		})
	}
}

// TestSignersBound: a multisig of maxWireSigners signers decodes, for Verify to refuse
// if it is over MaxMultisigSigners; one more is refused while decoding, before its key
// is decoded.
func TestSignersBound(t *testing.T) {
	signers := func(n int) string {
		list := make([]string, n)
		for i := range list {
			key := bytes.Repeat([]byte{7}, 32)
			key[0], key[1] = byte(i>>8)+1, byte(i)
			list[i] = q(EncodeBase58(key)) + ":1"
		}
		return `{"signers":{` + strings.Join(list, ",") + `},"threshold":1}`
	}
	a, err := DecodeAuthorship([]byte(multisigJSON(signers(maxWireSigners), `[]`)))
	if err != nil || len(a.Signature.Multisig.Signers) != maxWireSigners {
		t.Fatalf("%d signers: %v", maxWireSigners, err)
	}
	_, err = DecodeAuthorship([]byte(multisigJSON(signers(maxWireSigners+1), `[]`)))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Signed.Multisig.pub_key.signers" || !strings.Contains(fe.Reason, "more than 256 signers") {
		t.Fatalf("%d signers: %v", maxWireSigners+1, err)
	}
}

// TestDecodeInsideStruct checks that the decoder's errors come through encoding/json
// when an Authorship is a field of a larger body, as in an AuthoredIntent.
func TestDecodeInsideStruct(t *testing.T) {
	type body struct {
		Intent     json.RawMessage `json:"intent"`
		Authorship Authorship      `json:"authorship"`
	}
	cases := []struct {
		name, json, field string
		wantErr           bool
	}{
		{"valid", `{"intent":{},"authorship":{"Signed":` + validEd + `}}`, "", false},
		{"null authorship", `{"intent":{},"authorship":null}`, "", true},
		{"bad field", `{"intent":{},"authorship":{"Signed":` + edJSON(q(b58Key31), q(b58Sig64)) + `}}`, "Signed.Ed25519.pub_key", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b body
			err := json.Unmarshal([]byte(tc.json), &b)
			if !tc.wantErr {
				if err != nil || b.Authorship.Signature == nil || b.Authorship.Signature.Ed25519 == nil {
					t.Fatalf("Unmarshal = %v, %+v", err, b.Authorship)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Unmarshal = %v, want a *FieldError for field %q", err, tc.field)
			}
		})
	}
}

func TestEncodeRefusesBadSignature(t *testing.T) {
	ed := &Ed25519Signature{PubKey: []byte{1}, Signature: []byte{2}}
	cases := []struct {
		name string
		a    Authorship
	}{
		{"no scheme", Authorship{Signature: &Signature{}}},
		{"two schemes", Authorship{Signature: &Signature{Ed25519: ed, Passkey: &PasskeySignature{}}}},
		{"bad scheme inside a multisig", Authorship{Signature: &Signature{Multisig: &MultisigSignature{Signatures: []Signature{{}}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := json.Marshal(tc.a); err == nil {
				t.Fatalf("Marshal = %s, want an error", out)
			}
		})
	}
}

func TestFieldErrorMessage(t *testing.T) {
	cases := []struct {
		err  FieldError
		want string
	}{
		{FieldError{Field: "Signed.Ed25519.pub_key", Reason: "missing"}, "Signed.Ed25519.pub_key: missing"},
		{FieldError{Reason: "must not be null"}, "must not be null"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Fatalf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLongBase58IsRefusedBeforeDecoding: Base58 decoding is quadratic in the length, so
// a value too long for its field is refused from its length alone.
func TestLongBase58IsRefusedBeforeDecoding(t *testing.T) {
	long := strings.Repeat("z", 1_000_000)
	tests := []struct {
		name    string
		lengths []int
	}{
		{"fixed length", []int{Ed25519PubKeyLen}},
		{"one of several", []int{P256CompressedLen, P256UncompressedLen}},
		{"variable length", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// "too long" comes from the length check, before any decoding.
			_, err := decodeKey(long, tt.lengths...)
			if err == nil || !strings.Contains(err.Error(), "too long") {
				t.Fatalf("decodeKey of a megabyte = %v, want refused as too long", err)
			}
		})
	}
	// The longest honest encodings still pass.
	for _, n := range []int{32, 33, 64, 65, maxVariableBytes} {
		full := bytes.Repeat([]byte{0xff}, n)
		if _, err := decodeKey(EncodeBase58(full)); err != nil {
			t.Errorf("%d bytes of 0xff refused as a variable-length value: %v", n, err)
		}
		if _, err := decodeKey(EncodeBase58(full), n); err != nil {
			t.Errorf("%d bytes of 0xff refused: %v", n, err)
		}
	}
}

// TestAuthorshipKeepsItsJSON: an Ed25519 authorship that arrives spelled as it is
// encoded keeps that JSON, and is encoded to the same bytes as one built in code; one
// spelled otherwise is encoded afresh.
func TestAuthorshipKeepsItsJSON(t *testing.T) {
	zeros := EncodeBase58(append([]byte{0, 0}, bytes.Repeat([]byte{3}, 30)...)) // leading 1s
	canonical := `{"Signed":` + edJSON(q(b58Key32), q(b58Sig64)) + `}`
	for _, tc := range []struct {
		name, json string
		kept       bool
	}{
		{"canonical", canonical, true},
		{"leading zero bytes", `{"Signed":` + edJSON(q(zeros), q(b58Sig64)) + `}`, true},
		{"spaced", `{"Signed": ` + edJSON(q(b58Key32), q(b58Sig64)) + `}`, false},
		{"members reordered", `{"Signed":{"Ed25519":{"signature":"` + b58Sig64 + `","pub_key":"` + b58Key32 + `"}}}`, false},
		{"escaped letter", `{"Signed":` + edJSON(`"\u00`+fmt.Sprintf("%x", b58Key32[0])+b58Key32[1:]+`"`, q(b58Sig64)) + `}`, false},
		{"passkey", `{"Signed":` + validPasskey + `}`, false},
		{"multisig", `{"Signed":` + validMultisig + `}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := DecodeAuthorship([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if kept := a.wire != nil; kept != tc.kept {
				t.Fatalf("JSON kept = %v, want %v", kept, tc.kept)
			}
			got, err := a.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			want, err := Authorship{Signature: a.Signature}.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding = %s, want %s", got, want)
			}
			if tc.kept && string(got) != tc.json {
				t.Fatalf("kept JSON = %s, want the input %s", got, tc.json)
			}
			got[0] = 'X' // the caller's copy: the next encoding is unchanged
			if again, _ := a.MarshalJSON(); !bytes.Equal(again, want) {
				t.Fatalf("a change to one encoding's bytes reached the next: %s", again)
			}
		})
	}
}

// TestUnmarshalKeepsNoInput: encoding/json may reuse the bytes it gave UnmarshalJSON,
// so a value it decoded is encoded the same after they change.
func TestUnmarshalKeepsNoInput(t *testing.T) {
	data := []byte(`{"Signed":` + validEd + `}`)
	var a Authorship
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	want := string(data)
	for i := range data {
		data[i] = ' '
	}
	if got, err := a.MarshalJSON(); err != nil || string(got) != want {
		t.Fatalf("encoding after the input changed = %s, %v; want %s", got, err, want)
	}
}
