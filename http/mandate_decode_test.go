package http

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

// The decoders of the bodies of mandates (http/mandate.go): their messages, and what
// holds for any body, fuzzed.

const (
	testMandateID = "0b6f3c2a-9d41-4e7a-8c5b-2f1e6a9d3c70"
	testMandate   = `{"id":"` + testMandateID + `","policy_id":"11111111111111111111111111111111",` +
		`"attrs":{"fields":{"budget_cents":{"Int":5000},"size":{"String":"M"}}},"expires_at":"2030-01-02T03:04:05Z"}`
	testRevocation = `{"mandate_id":"` + testMandateID + `"}`
)

// The codes each decoder's comment says it answers: a body that is not JSON is
// invalid_json, an authorship that does not decode malformed_authorship, anything
// else of the body the decoder's own code.
var (
	mandateCodes    = []string{CodeInvalidJSON, intentd.CodeInvalidMandate, CodeMalformedAuthorship}
	purchaseCodes   = []string{CodeInvalidJSON, intentd.CodeInvalidPurchase}
	revocationCodes = []string{CodeInvalidJSON, intentd.CodeInvalidRevocation, CodeMalformedAuthorship}
)

// authored is {"<name>": object, "authorship": the Ed25519 authorship of object by a
// fixed key}.
func authored(t testing.TB, name, object string) []byte {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(bytes.NewReader(make([]byte, 64)))
	auth, err := crypto.SignEd25519(key, []byte(object))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(auth)
	return []byte(`{"` + name + `":` + object + `,"authorship":` + string(a) + `}`)
}

// unsigned is {"<name>": object, "authorship": "Unsigned"}.
func unsigned(name, object string) string {
	return `{"` + name + `":` + object + `,"authorship":"Unsigned"}`
}

// mandateWith is the test mandate with the member name replaced by value, or taken out
// when value is "".
func mandateWith(name, value string) string {
	members := []string{`"id":"` + testMandateID + `"`, `"policy_id":"11111111111111111111111111111111"`,
		`"attrs":{"fields":{"budget_cents":{"Int":5000}}}`, `"expires_at":"2030-01-02T03:04:05Z"`}
	var out []string
	for _, m := range members {
		if strings.HasPrefix(m, `"`+name+`":`) {
			if value == "" {
				continue
			}
			m = `"` + name + `":` + value
		}
		out = append(out, m)
	}
	return "{" + strings.Join(out, ",") + "}"
}

// decodeCase is one refused body of a decoder: what the error must be.
type decodeCase struct {
	name      string
	body      string
	kind      intentd.Kind
	code      string
	inMessage string
}

// TestDecodeAuthoredMandateErrors checks that each refusal of a mandate's body names
// what is wrong with it, at the body and in the mandate, since a client reads the
// message to fix its request; and what a signed and an unsigned body decode to.
func TestDecodeAuthoredMandateErrors(t *testing.T) {
	const shape = `(a body has exactly "mandate" and "authorship")`
	unp, mandate := intentd.KindUnprocessable, intentd.CodeInvalidMandate
	for _, tc := range []decodeCase{
		{"not JSON", `{"mandate":`, intentd.KindInvalid, CodeInvalidJSON, "the body is not valid JSON"},
		{"not an object", `[]`, unp, mandate, "body: must be a JSON object, got a JSON array"},
		{"missing mandate", `{"authorship":"Unsigned"}`, unp, mandate, "mandate: missing"},
		{"missing authorship", `{"mandate":` + testMandate + `}`, unp, CodeMalformedAuthorship, "authorship: missing"},
		{"unknown member", `{"mandate":` + testMandate + `,"authorship":"Unsigned","note":1}`, unp, mandate, "note: unknown field " + shape},
		{"duplicate key", `{"mandate":` + testMandate + `,"mandate":` + testMandate + `,"authorship":"Unsigned"}`, unp, mandate, "mandate: duplicate key"},
		{"mandate not an object", unsigned("mandate", `"x"`), unp, mandate, "mandate: must be a JSON object"},
		{"mandate null", unsigned("mandate", `null`), unp, mandate, "mandate: must be a JSON object"},
		{"missing id", unsigned("mandate", mandateWith("id", "")), unp, mandate, "mandate.id: missing"},
		{"missing policy_id", unsigned("mandate", mandateWith("policy_id", "")), unp, mandate, "mandate.policy_id: missing"},
		{"missing expires_at", unsigned("mandate", mandateWith("expires_at", "")), unp, mandate, "mandate.expires_at: missing"},
		{"unknown member of the mandate", unsigned("mandate", mandateWith("id", `"`+testMandateID+`","budget":1`)), unp, mandate, "mandate.budget: unknown field"},
		{"duplicate key in the mandate", unsigned("mandate", mandateWith("id", `"`+testMandateID+`","id":"`+testMandateID+`"`)), unp, mandate, "mandate.id: duplicate key"},
		{"id a number", unsigned("mandate", mandateWith("id", `1`)), unp, mandate, "mandate.id: must be a string"},
		{"id not a UUID", unsigned("mandate", mandateWith("id", `"mandate-1"`)), unp, mandate, `mandate.id: "mandate-1" is not a UUID`},
		{"policy_id not a digest", unsigned("mandate", mandateWith("policy_id", `"0OIl"`)), unp, mandate, `mandate.policy_id: "0OIl" is not a Base58 SHA-256 digest`},
		{"expires_at a date", unsigned("mandate", mandateWith("expires_at", `"2030-01-02"`)), unp, mandate, `mandate.expires_at: "2030-01-02" is not an RFC 3339 time`},
		{"expires_at without a zone", unsigned("mandate", mandateWith("expires_at", `"2030-01-02T03:04:05"`)), unp, mandate, "is not an RFC 3339 time"},
		{"expires_at a number", unsigned("mandate", mandateWith("expires_at", `1893553445`)), unp, mandate, "mandate.expires_at: must be a string"},
		{"attrs null", unsigned("mandate", mandateWith("attrs", `null`)), unp, mandate, "mandate.attrs: must be omitted, not null"},
		{"attrs of the wrong shape", unsigned("mandate", mandateWith("attrs", `{"budget_cents":5000}`)), unp, mandate, "mandate.attrs.budget_cents: unknown key"},
		{"an int past 2^53", unsigned("mandate", mandateWith("attrs", `{"fields":{"budget_cents":{"Int":9007199254740993}}}`)), unp, mandate, "mandate.attrs.fields.budget_cents: 9007199254740993 is beyond"},
		{"authorship lower case", `{"mandate":` + testMandate + `,"authorship":"unsigned"}`, unp, CodeMalformedAuthorship, "authorship: unknown authorship"},
		{"authorship a bad key", `{"mandate":` + testMandate + `,"authorship":{"Signed":{"Ed25519":{"pub_key":"2","signature":"2"}}}}`,
			unp, CodeMalformedAuthorship, "authorship.Signed.Ed25519.pub_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeAuthoredMandate([]byte(tc.body))
			wantError(t, err, tc.kind, tc.code, tc.inMessage)
		})
	}
	t.Run("signed", func(t *testing.T) {
		sub, err := DecodeAuthoredMandate(authored(t, "mandate", testMandate))
		if err != nil {
			t.Fatal(err)
		}
		md := sub.Mandate
		if md.ID != testMandateID || md.PolicyID != "11111111111111111111111111111111" || md.Attrs == nil ||
			(*md.Attrs)["budget_cents"].Int() != 5000 || md.ExpiresAt.Format("2006-01-02T15:04:05Z07:00") != "2030-01-02T03:04:05Z" {
			t.Fatalf("decoded mandate = %+v, want the one sent", md)
		}
		if err := crypto.VerifyCanonical(sub.Canonical, sub.Authorship, crypto.VerifyOptions{}); err != nil {
			t.Fatalf("the authorship does not verify over the canonical form: %v", err)
		}
	})
	t.Run("without attrs", func(t *testing.T) {
		sub, err := DecodeAuthoredMandate([]byte(unsigned("mandate", mandateWith("attrs", ""))))
		if err != nil || sub.Mandate.Attrs != nil || !sub.Authorship.Unsigned() {
			t.Fatalf("got %+v, %v; want no attrs, unsigned", sub, err)
		}
	})
}

// TestDecodePurchaseErrors checks that each refusal of a purchase's body names the
// member at fault, and that an intent_id of any form passes to the engine, which is
// the one to say whether it is a UUID.
func TestDecodePurchaseErrors(t *testing.T) {
	const shape = `(a purchase has exactly "intent_id" and "solution")`
	unp, purchase := intentd.KindUnprocessable, intentd.CodeInvalidPurchase
	for _, tc := range []decodeCase{
		{"not JSON", `{"intent_id":"x"`, intentd.KindInvalid, CodeInvalidJSON, "the body is not valid JSON"},
		{"lone surrogate", `{"intent_id":"\ud800","solution":"x"}`, intentd.KindInvalid, CodeInvalidJSON, "lone surrogate"},
		{"not an object", `"x"`, unp, purchase, "body: must be a JSON object, got a JSON string"},
		{"missing intent_id", `{"solution":"x"}`, unp, purchase, "intent_id: missing"},
		{"missing solution", `{"intent_id":"` + testIntentID + `"}`, unp, purchase, "solution: missing"},
		{"unknown member", `{"intent_id":"` + testIntentID + `","solution":"x","quantity":2}`, unp, purchase, "quantity: unknown field " + shape},
		{"intent_id a number", `{"intent_id":1,"solution":"x"}`, unp, purchase, "intent_id: must be a string, got a JSON number"},
		{"solution null", `{"intent_id":"` + testIntentID + `","solution":null}`, unp, purchase, "solution: must be a string, got a JSON null"},
		{"duplicate key", `{"intent_id":"` + testIntentID + `","solution":"a","solution":"b"}`, unp, purchase, "solution: duplicate key"},
		{"too many members", `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"n":1,"o":1,"p":1,"q":1}`,
			unp, purchase, "body: more than 16 members " + shape},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePurchase([]byte(tc.body))
			wantError(t, err, tc.kind, tc.code, tc.inMessage)
		})
	}
	t.Run("an intent_id that is not a UUID is the engine's to refuse", func(t *testing.T) {
		pu, err := DecodePurchase([]byte(`{"solution":"sku:1","intent_id":"not-a-uuid"}`))
		if err != nil || pu != (intentd.Purchase{IntentID: "not-a-uuid", Solution: "sku:1"}) {
			t.Fatalf("got %+v, %v", pu, err)
		}
	})
}

// TestDecodeAuthoredRevocationErrors checks that each refusal of a revocation's body
// names what is wrong, a revocation of another mandate than the path's among them, and
// that the canonical form taken is the one the author signed.
func TestDecodeAuthoredRevocationErrors(t *testing.T) {
	const other = "7d2e9a41-3b6c-4f08-a1d5-c9e8b7f60213"
	unp, revocation := intentd.KindUnprocessable, intentd.CodeInvalidRevocation
	for _, tc := range []struct {
		decodeCase
		id string // the mandate of the path; testMandateID when empty
	}{
		{decodeCase: decodeCase{"not JSON", `{"revocation":{}`, intentd.KindInvalid, CodeInvalidJSON, "the body is not valid JSON"}},
		{decodeCase: decodeCase{"missing revocation", `{"authorship":"Unsigned"}`, unp, revocation, "revocation: missing"}},
		{decodeCase: decodeCase{"missing authorship", `{"revocation":` + testRevocation + `}`, unp, CodeMalformedAuthorship, "authorship: missing"}},
		{decodeCase: decodeCase{"unknown member", `{"revocation":` + testRevocation + `,"authorship":"Unsigned","reason":"x"}`, unp, revocation,
			`reason: unknown field (a body has exactly "revocation" and "authorship")`}},
		{decodeCase: decodeCase{"duplicate key", `{"revocation":` + testRevocation + `,"revocation":` + testRevocation + `,"authorship":"Unsigned"}`,
			unp, revocation, "revocation: duplicate key"}},
		{decodeCase: decodeCase{"revocation not an object", unsigned("revocation", `[]`), unp, revocation, "revocation: must be a JSON object"}},
		{decodeCase: decodeCase{"missing mandate_id", unsigned("revocation", `{}`), unp, revocation, "revocation.mandate_id: missing"}},
		{decodeCase: decodeCase{"unknown member of the revocation", unsigned("revocation", `{"mandate_id":"`+testMandateID+`","at":1}`), unp, revocation,
			"revocation.at: unknown field"}},
		{decodeCase: decodeCase{"duplicate key in the revocation", unsigned("revocation", `{"mandate_id":"`+testMandateID+`","mandate_id":"`+testMandateID+`"}`),
			unp, revocation, "revocation.mandate_id: duplicate key"}},
		{decodeCase: decodeCase{"mandate_id a number", unsigned("revocation", `{"mandate_id":7}`), unp, revocation, "revocation.mandate_id: must be a string"}},
		{decodeCase: decodeCase{"another mandate", unsigned("revocation", `{"mandate_id":"`+other+`"}`), unp, revocation,
			`revocation.mandate_id: "` + other + `" is not the mandate of the path, ` + testMandateID}},
		{decodeCase: decodeCase{"mandate_id not a UUID", unsigned("revocation", `{"mandate_id":"m-1"}`), unp, revocation,
			`revocation.mandate_id: "m-1" is not the mandate of the path`}},
		{decodeCase: decodeCase{"a path that is not a UUID", unsigned("revocation", testRevocation), unp, revocation, "is not the mandate of the path, m-1"}, id: "m-1"},
		{decodeCase: decodeCase{"authorship null", `{"revocation":` + testRevocation + `,"authorship":null}`, unp, CodeMalformedAuthorship, "authorship"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.id
			if id == "" {
				id = testMandateID
			}
			_, err := DecodeAuthoredRevocation([]byte(tc.body), id)
			wantError(t, err, tc.kind, tc.code, tc.inMessage)
		})
	}
	t.Run("signed, the path in capitals", func(t *testing.T) {
		rv, err := DecodeAuthoredRevocation(authored(t, "revocation", ` { "mandate_id" : "`+testMandateID+`" } `), strings.ToUpper(testMandateID))
		if err != nil {
			t.Fatal(err)
		}
		if string(rv.Canonical) != testRevocation {
			t.Fatalf("canonical form %s, want %s", rv.Canonical, testRevocation)
		}
		if err := crypto.VerifyCanonical(rv.Canonical, rv.Authorship, crypto.VerifyOptions{}); err != nil {
			t.Fatalf("the authorship does not verify over the canonical form: %v", err)
		}
	})
}

// checkDecodeCode holds for every error of a decoder of mandates: what
// checkDecodeError holds, with a code among those the decoder documents.
func checkDecodeCode(t *testing.T, body []byte, err error, codes []string) {
	t.Helper()
	checkDecodeError(t, body, err)
	var e *intentd.Error
	if errors.As(err, &e) && !slices.Contains(codes, e.Code) {
		t.Fatalf("body %q: code %s %q, want one of %q", body, e.Code, e.Message, codes)
	}
}

// reauthored is a decoded object and authorship encoded again as a body.
func reauthored(t *testing.T, name string, canonical []byte, auth crypto.Authorship) []byte {
	t.Helper()
	a, err := json.Marshal(auth)
	if err != nil {
		t.Fatalf("accepted authorship does not encode: %v", err)
	}
	return []byte(`{"` + name + `":` + string(canonical) + `,"authorship":` + string(a) + `}`)
}

// sameAuthorship fails unless two authorships encode alike.
func sameAuthorship(t *testing.T, a, b crypto.Authorship) {
	t.Helper()
	ea, _ := json.Marshal(a)
	eb, _ := json.Marshal(b)
	if !bytes.Equal(ea, eb) {
		t.Fatalf("authorship round trip: %s then %s", ea, eb)
	}
}

// FuzzDecodeAuthoredMandate holds the decoder of POST /mandates to its contract on any
// body: no panic, an error of the kinds and codes it documents, and a mandate taken
// that is taken again, the same, from its canonical form and its authorship.
func FuzzDecodeAuthoredMandate(f *testing.F) {
	f.Add(authored(f, "mandate", testMandate))
	for _, s := range []string{
		unsigned("mandate", testMandate),
		unsigned("mandate", mandateWith("attrs", "")),
		unsigned("mandate", mandateWith("expires_at", `"2030-01-02T03:04:05.123456789+05:30"`)),
		unsigned("mandate", mandateWith("attrs", `{"fields":{"colors":{"Set":{"String":["navy","blue"]}},"n":{"Int":1e3}}}`)),
		unsigned("mandate", mandateWith("attrs", `null`)),
		unsigned("mandate", mandateWith("id", `"`+strings.ToUpper(testMandateID)+`"`)),
		unsigned("mandate", mandateWith("expires_at", `"2030-01-02"`)),
		unsigned("mandate", mandateWith("id", `"`+testMandateID+`","id":"x"`)),
		unsigned("mandate", `"x"`),
		`{"mandate":{},"mandate":{},"authorship":"Unsigned"}`,
		`{"mandate":{},"authorship":{"Signed":{"Multisig":{"pub_key":{"signers":{},"threshold":1},"signatures":[]}}}}`,
		`{"mandate":null,"authorship":null}`,
		`{"mandate":{"id":"\ud800"},"authorship":"Unsigned"}`,
		`[]`, `"x"`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sub, err := DecodeAuthoredMandate(body)
		if err != nil {
			checkDecodeCode(t, body, err, mandateCodes)
			return
		}
		// The canonical form with the authorship encoded again is a body the decoder
		// takes as the same mandate, the same canonical form and the same authorship.
		again, err := DecodeAuthoredMandate(reauthored(t, "mandate", sub.Canonical, sub.Authorship))
		if err != nil {
			t.Fatalf("re-encoded mandate %s does not decode: %v", sub.Canonical, err)
		}
		a, b := sub.Mandate, again.Mandate
		ea, _ := json.Marshal(a.Attrs)
		eb, _ := json.Marshal(b.Attrs)
		if a.ID != b.ID || a.PolicyID != b.PolicyID || !a.ExpiresAt.Equal(b.ExpiresAt) || (a.Attrs == nil) != (b.Attrs == nil) || !bytes.Equal(ea, eb) {
			t.Fatalf("round trip: %+v then %+v", a, b)
		}
		if !bytes.Equal(sub.Canonical, again.Canonical) {
			t.Fatalf("canonical form %s then %s", sub.Canonical, again.Canonical)
		}
		sameAuthorship(t, sub.Authorship, again.Authorship)
	})
}

// FuzzDecodePurchase holds the decoder of a purchase's body to its contract on any
// body: no panic, an error of the kinds and codes it documents, and a purchase taken
// that is taken again, the same, once encoded.
func FuzzDecodePurchase(f *testing.F) {
	for _, s := range []string{
		`{"intent_id":"` + testIntentID + `","solution":"https://shop.example/products/tshirt-navy-m"}`,
		`{"solution":"","intent_id":""}`, `{"intent_id":"x","solution":"\u0000\u00e9"}`,
		`{"intent_id":"x","solution":"\ud800"}`, `{"intent_id":null,"solution":"x"}`, `{"intent_id":"x","solution":1}`,
		`{"intent_id":"x","solution":"y","extra":{}}`, `{"intent_id":"x","solution":"y","solution":"z"}`,
		`{"solution":"x"}`, `{}`, `[]`, `"x"`, `{"intent_id":"x"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pu, err := DecodePurchase(body)
		if err != nil {
			checkDecodeCode(t, body, err, purchaseCodes)
			return
		}
		// The body was exactly {"intent_id": i, "solution": s}: encoding them back
		// decodes to them.
		enc, err := json.Marshal(pu)
		if err != nil {
			t.Fatalf("accepted purchase does not encode: %v", err)
		}
		again, err := DecodePurchase(enc)
		if err != nil || again != pu {
			t.Fatalf("round trip of %+v: %+v, %v", pu, again, err)
		}
	})
}

// FuzzDecodeAuthoredRevocation holds the decoder of a revocation's body to its contract
// on any body and path: no panic, an error of the kinds and codes it documents, and a
// revocation taken only of the path's mandate, taken again the same once encoded.
func FuzzDecodeAuthoredRevocation(f *testing.F) {
	f.Add(authored(f, "revocation", testRevocation), testMandateID)
	for _, s := range []string{
		unsigned("revocation", testRevocation),
		unsigned("revocation", `{"mandate_id":"`+strings.ToUpper(testMandateID)+`"}`),
		unsigned("revocation", `{"mandate_id":"7d2e9a41-3b6c-4f08-a1d5-c9e8b7f60213"}`),
		unsigned("revocation", `{"mandate_id":"`+testMandateID+`","mandate_id":"x"}`),
		unsigned("revocation", `{"mandate_id":1}`),
		unsigned("revocation", `{}`),
		`{"revocation":` + testRevocation + `}`,
		`{"revocation":null,"authorship":null}`,
		`[]`, `"x"`, `{`, ``,
	} {
		f.Add([]byte(s), testMandateID)
	}
	f.Add([]byte(unsigned("revocation", testRevocation)), "m-1")
	f.Fuzz(func(t *testing.T, body []byte, id string) {
		rv, err := DecodeAuthoredRevocation(body, id)
		if err != nil {
			checkDecodeCode(t, body, err, revocationCodes)
			return
		}
		// What was taken names the mandate of the path, and encoded again is taken as
		// the same revocation of it.
		var r struct {
			MandateID string `json:"mandate_id"`
		}
		want, _ := intentd.CanonicalIntentID(id)
		if err := json.Unmarshal(rv.Canonical, &r); err != nil || !strings.EqualFold(r.MandateID, want) {
			t.Fatalf("revocation %s taken for mandate %q (%v)", rv.Canonical, id, err)
		}
		again, err := DecodeAuthoredRevocation(reauthored(t, "revocation", rv.Canonical, rv.Authorship), id)
		if err != nil {
			t.Fatalf("re-encoded revocation %s does not decode: %v", rv.Canonical, err)
		}
		if !bytes.Equal(rv.Canonical, again.Canonical) {
			t.Fatalf("canonical form %s then %s", rv.Canonical, again.Canonical)
		}
		sameAuthorship(t, rv.Authorship, again.Authorship)
	})
}
