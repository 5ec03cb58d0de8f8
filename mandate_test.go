package intentd

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/crypto"
)

const (
	testMandateID       = "0b6f3c2a-9d41-4e7a-8c5b-2f1e6a9d3c70"
	testMandatePolicyID = "11111111111111111111111111111111"
)

// mandateJSON is a mandate of the given members, each `"name":value`, in order.
func mandateJSON(members ...string) []byte {
	return []byte("{" + strings.Join(members, ",") + "}")
}

// The members of a valid mandate.
const (
	mID      = `"id":"` + testMandateID + `"`
	mPolicy  = `"policy_id":"` + testMandatePolicyID + `"`
	mAttrs   = `"attrs":{"fields":{"budget_cents":{"Int":5000},"size":{"String":"M"}}}`
	mExpires = `"expires_at":"2030-01-02T03:04:05Z"`
)

// TestDecodeMandate checks what a mandate decodes to, in any member order, with attrs
// and without, and with an expiry in any zone: the engine decides purchases on these.
func TestDecodeMandate(t *testing.T) {
	expires := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		raw     []byte
		id      string    // the id decoded
		expires time.Time // the expiry decoded; expires when zero
		attrs   int       // how many attrs; -1 for none (nil)
	}{
		{"every member", mandateJSON(mID, mPolicy, mAttrs, mExpires), testMandateID, time.Time{}, 2},
		{"in another order", mandateJSON(mExpires, mAttrs, mPolicy, mID), testMandateID, time.Time{}, 2},
		{"without attrs", mandateJSON(mID, mPolicy, mExpires), testMandateID, time.Time{}, -1},
		{"empty attrs", mandateJSON(mID, mPolicy, `"attrs":{"fields":{}}`, mExpires), testMandateID, time.Time{}, 0},
		{"id in capitals, kept as sent", mandateJSON(`"id":"`+strings.ToUpper(testMandateID)+`"`, mPolicy, mExpires), strings.ToUpper(testMandateID), time.Time{}, -1},
		{"expires_at with an offset and a fraction", mandateJSON(mID, mPolicy, `"expires_at":"2030-01-02T08:34:05.5+05:30"`), testMandateID,
			expires.Add(500 * time.Millisecond), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md, err := DecodeMandate(tc.raw)
			if err != nil {
				t.Fatalf("DecodeMandate(%s): %v", tc.raw, err)
			}
			want := tc.expires
			if want.IsZero() {
				want = expires
			}
			if md.ID != tc.id || md.PolicyID != testMandatePolicyID || !md.ExpiresAt.Equal(want) {
				t.Fatalf("DecodeMandate(%s) = %+v", tc.raw, md)
			}
			if tc.attrs < 0 && md.Attrs != nil || tc.attrs >= 0 && (md.Attrs == nil || len(*md.Attrs) != tc.attrs) {
				t.Fatalf("attrs %v, want %d", md.Attrs, tc.attrs)
			}
			if tc.attrs == 2 && ((*md.Attrs)["budget_cents"].Int() != 5000 || (*md.Attrs)["size"].Str() != "M") {
				t.Fatalf("attrs %v, want the ones sent", *md.Attrs)
			}
		})
	}
}

// TestDecodeMandateErrors checks that every refusal of a mandate is unprocessable
// invalid_mandate with a message that names the member at fault.
func TestDecodeMandateErrors(t *testing.T) {
	many := []string{mID, mPolicy, mExpires}
	for i := range 14 {
		many = append(many, `"x`+string(rune('a'+i))+`":1`)
	}
	for _, tc := range []struct {
		name      string
		raw       string
		inMessage string
	}{
		{"not JSON", `{"id":`, "mandate: invalid JSON"},
		{"trailing data", string(mandateJSON(mID, mPolicy, mExpires)) + `{}`, "mandate: invalid JSON: unexpected data after the object"},
		{"an array", `[]`, "mandate: must be a JSON object"},
		{"null", `null`, "mandate: must be a JSON object"},
		{"missing id", string(mandateJSON(mPolicy, mExpires)), "mandate.id: missing"},
		{"missing policy_id", string(mandateJSON(mID, mExpires)), "mandate.policy_id: missing"},
		{"missing expires_at", string(mandateJSON(mID, mPolicy)), "mandate.expires_at: missing"},
		{"unknown member", string(mandateJSON(mID, mPolicy, mExpires, `"budget_cents":5000`)), "mandate.budget_cents: unknown field"},
		{"superseded member", string(mandateJSON(mID, `"template_id":"x"`, mExpires)), "mandate.template_id: unknown field"},
		{"duplicate key", string(mandateJSON(mID, mPolicy, mExpires, mID)), "mandate.id: duplicate key"},
		{"many unknown members, the first named", string(mandateJSON(many...)), "mandate.xa: unknown field"},
		{"id a number", string(mandateJSON(`"id":7`, mPolicy, mExpires)), "mandate.id: must be a string"},
		{"id not a UUID", string(mandateJSON(`"id":"m-1"`, mPolicy, mExpires)), `mandate.id: "m-1" is not a UUID (want the 36-character hyphenated form)`},
		{"id a UUID without hyphens", string(mandateJSON(`"id":"`+strings.ReplaceAll(testMandateID, "-", "")+`"`, mPolicy, mExpires)), "is not a UUID"},
		{"policy_id null", string(mandateJSON(mID, `"policy_id":null`, mExpires)), "mandate.policy_id: must be a string"},
		{"policy_id not a digest", string(mandateJSON(mID, `"policy_id":"abc"`, mExpires)), `mandate.policy_id: "abc" is not a Base58 SHA-256 digest`},
		{"expires_at a date", string(mandateJSON(mID, mPolicy, `"expires_at":"2030-01-02"`)), `mandate.expires_at: "2030-01-02" is not an RFC 3339 time`},
		{"expires_at without a zone", string(mandateJSON(mID, mPolicy, `"expires_at":"2030-01-02T03:04:05"`)), "is not an RFC 3339 time"},
		{"expires_at Unix seconds", string(mandateJSON(mID, mPolicy, `"expires_at":1893553445`)), "mandate.expires_at: must be a string"},
		{"attrs null", string(mandateJSON(mID, mPolicy, `"attrs":null`, mExpires)), "mandate.attrs: must be omitted, not null"},
		{"attrs not the wire form", string(mandateJSON(mID, mPolicy, `"attrs":{"budget_cents":5000}`, mExpires)), "mandate.attrs.budget_cents: unknown key"},
		{"attrs an array", string(mandateJSON(mID, mPolicy, `"attrs":[]`, mExpires)), "mandate.attrs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeMandate([]byte(tc.raw))
			e, ok := err.(*Error)
			if !ok || e.Kind != KindUnprocessable || e.Code != CodeInvalidMandate || !strings.Contains(e.Message, tc.inMessage) {
				t.Fatalf("DecodeMandate(%s) = %v, want %s/%s naming %q", tc.raw, err, KindUnprocessable, CodeInvalidMandate, tc.inMessage)
			}
		})
	}
}

// TestSameAuthor checks the comparison a revocation is allowed by: one key, whatever it
// signed, is one author; another key, another scheme or no signature on one side is
// not; a multisig is its signers, weights and threshold, in any order.
func TestSameAuthor(t *testing.T) {
	key := func(seed byte) ed25519.PrivateKey {
		return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	}
	sign := func(k ed25519.PrivateKey, object string) crypto.Authorship {
		t.Helper()
		a, err := crypto.SignEd25519(k, []byte(object))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a, b := key(1), key(2)
	mandate, revocation := string(mandateJSON(mID, mPolicy, mExpires)), `{"mandate_id":"`+testMandateID+`"}`
	passkey, err := crypto.GenerateSoftPasskey("intentd.example", "https://intentd.example")
	if err != nil {
		t.Fatal(err)
	}
	pass := func(object string) crypto.Authorship {
		t.Helper()
		au, err := passkey.Sign([]byte(object))
		if err != nil {
			t.Fatal(err)
		}
		return au
	}
	pa, pb := a.Public().(ed25519.PublicKey), b.Public().(ed25519.PublicKey)
	multisig := func(signers []crypto.Signer, threshold uint64, by ...crypto.Authorship) crypto.Authorship {
		m := &crypto.MultisigSignature{Signers: signers, Threshold: threshold}
		for _, au := range by {
			m.Signatures = append(m.Signatures, *au.Signature)
		}
		return crypto.Authorship{Signature: &crypto.Signature{Multisig: m}}
	}
	for _, tc := range []struct {
		name string
		x, y crypto.Authorship
		same bool
	}{
		{"unsigned and unsigned", crypto.Authorship{}, crypto.Authorship{}, true},
		{"unsigned and signed", crypto.Authorship{}, sign(a, revocation), false},
		{"signed and unsigned", sign(a, mandate), crypto.Authorship{}, false},
		{"one Ed25519 key over the mandate and its revocation", sign(a, mandate), sign(a, revocation), true},
		{"one Ed25519 key, one signature", sign(a, mandate), sign(a, mandate), true},
		{"two Ed25519 keys", sign(a, mandate), sign(b, revocation), false},
		{"two Ed25519 keys over the same bytes", sign(a, mandate), sign(b, mandate), false},
		{"one passkey", pass(mandate), pass(revocation), true},
		{"a passkey and an Ed25519 key", pass(mandate), sign(a, revocation), false},
		{"one multisig, its signers in another order", multisig([]crypto.Signer{{PubKey: pa, Weight: 1}, {PubKey: pb, Weight: 1}}, 2, sign(a, mandate), sign(b, mandate)),
			multisig([]crypto.Signer{{PubKey: pb, Weight: 1}, {PubKey: pa, Weight: 1}}, 2, sign(b, revocation), sign(a, revocation)), true},
		{"multisigs of other thresholds", multisig([]crypto.Signer{{PubKey: pa, Weight: 1}, {PubKey: pb, Weight: 1}}, 2, sign(a, mandate), sign(b, mandate)),
			multisig([]crypto.Signer{{PubKey: pa, Weight: 1}, {PubKey: pb, Weight: 1}}, 1, sign(a, revocation)), false},
		{"a multisig and the Ed25519 key of a signer", multisig([]crypto.Signer{{PubKey: pa, Weight: 1}}, 1, sign(a, mandate)), sign(a, revocation), false},
		{"a signature of no scheme", crypto.Authorship{Signature: &crypto.Signature{}}, crypto.Authorship{Signature: &crypto.Signature{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SameAuthor(tc.x, tc.y); got != tc.same {
				t.Fatalf("SameAuthor = %v, want %v", got, tc.same)
			}
			if got := SameAuthor(tc.y, tc.x); got != tc.same {
				t.Fatalf("SameAuthor the other way = %v, want %v", got, tc.same)
			}
		})
	}
}
