package http

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

const (
	testIntentID = "6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10"
	testIntent   = `{"id":"` + testIntentID + `","policy_id":"11111111111111111111111111111111"}`
)

func signedBody(t testing.TB) []byte {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(bytes.NewReader(make([]byte, 64)))
	auth, err := crypto.SignEd25519(key, []byte(testIntent))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(auth)
	return []byte(`{"intent":` + testIntent + `,"authorship":` + string(a) + `}`)
}

// wantError checks err's kind, code and that its message names what it should.
func wantError(t *testing.T, err error, kind intentd.Kind, code, inMessage string) {
	t.Helper()
	var e *intentd.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want an *intentd.Error %s/%s", err, kind, code)
	}
	if e.Kind != kind || e.Code != code || !strings.Contains(e.Message, inMessage) {
		t.Fatalf("err = %s/%s %q, want %s/%s naming %q", e.Kind, e.Code, e.Message, kind, code, inMessage)
	}
}

func TestDecodeAuthoredIntent(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		kind      intentd.Kind
		code      string
		inMessage string
	}{
		{"not JSON", `{"intent":`, intentd.KindInvalid, CodeInvalidJSON, "not valid JSON"},
		{"two values", `{} {}`, intentd.KindInvalid, CodeInvalidJSON, "not valid JSON"},
		{"empty", ``, intentd.KindInvalid, CodeInvalidJSON, "not valid JSON"},
		{"array", `[]`, intentd.KindUnprocessable, intentd.CodeInvalidIntent, "got a JSON array"},
		{"null", `null`, intentd.KindUnprocessable, intentd.CodeInvalidIntent, "got a JSON null"},
		{"missing intent", `{"authorship":"Unsigned"}`, intentd.KindUnprocessable, intentd.CodeInvalidIntent, "intent: missing"},
		{"missing authorship", `{"intent":{}}`, intentd.KindUnprocessable, CodeMalformedAuthorship, "authorship: missing"},
		{"unknown field", `{"intent":{},"authorship":"Unsigned","x":1}`, intentd.KindUnprocessable, intentd.CodeInvalidIntent, "x: unknown field"},
		{"duplicate", `{"intent":{},"authorship":"Unsigned","authorship":"Unsigned"}`, intentd.KindUnprocessable, intentd.CodeInvalidIntent, "authorship: duplicate key"},
		{"intent null", `{"intent":null,"authorship":"Unsigned"}`, intentd.KindUnprocessable, intentd.CodeInvalidIntent, "intent: must be a JSON object, got a JSON null"},
		{"intent string", `{"intent":"{}","authorship":"Unsigned"}`, intentd.KindUnprocessable, intentd.CodeInvalidIntent, "intent: must be a JSON object"},
		{"authorship null", `{"intent":{},"authorship":null}`, intentd.KindUnprocessable, CodeMalformedAuthorship, "authorship"},
		{"authorship lower case", `{"intent":{},"authorship":"unsigned"}`, intentd.KindUnprocessable, CodeMalformedAuthorship, "authorship: unknown authorship"},
		{"bad key length", `{"intent":{},"authorship":{"Signed":{"Ed25519":{"pub_key":"2","signature":"2"}}}}`,
			intentd.KindUnprocessable, CodeMalformedAuthorship, "authorship.Signed.Ed25519.pub_key"},
		{"signature beside intent", `{"intent":{},"signature":{"Ed25519":{}}}`, intentd.KindUnprocessable, CodeSupersededShape, "before 0.9.4"},
		{"signature and authorship", `{"intent":{},"authorship":"Unsigned","signature":{}}`, intentd.KindUnprocessable, CodeSupersededShape, "signature"},
		{"payload", `{"payload":{"template_id":"x"},"signature":{}}`, intentd.KindUnprocessable, CodeSupersededShape, "templates"},
		{"template_id", `{"intent":{"id":"x","template_id":"y"},"authorship":"Unsigned"}`, intentd.KindUnprocessable, CodeSupersededShape, "intent.template_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := DecodeAuthoredIntent([]byte(tt.body))
			wantError(t, err, tt.kind, tt.code, tt.inMessage)
		})
	}
	t.Run("signed", func(t *testing.T) {
		in, intent, auth, err := DecodeAuthoredIntent(signedBody(t))
		if err != nil {
			t.Fatal(err)
		}
		if in.ID != testIntentID || in.PolicyID != "11111111111111111111111111111111" {
			t.Fatalf("decoded intent = %+v, want the one sent", in)
		}
		if string(intent) != testIntent {
			t.Fatalf("intent = %s, want it as sent", intent)
		}
		if err := crypto.Verify(intent, auth, crypto.VerifyOptions{}); err != nil {
			t.Fatalf("decoded authorship does not verify: %v", err)
		}
	})
	t.Run("unsigned, keys in any order, spaces", func(t *testing.T) {
		raw := `{ "policy_id" : "11111111111111111111111111111111", "id": "` + testIntentID + `" }`
		in, intent, auth, err := DecodeAuthoredIntent([]byte(" {\"authorship\" : \"Unsigned\",\n\"intent\": " + raw + " } "))
		if err != nil || !auth.Unsigned() || string(intent) != raw || in.ID != testIntentID {
			t.Fatalf("got %+v %s, %+v, %v", in, intent, auth, err)
		}
	})
}

func TestDecodeProposal(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		want      string
		kind      intentd.Kind
		code      string
		inMessage string
	}{
		{"ok", `{"solution":"sku:TS-NAVY-M"}`, "sku:TS-NAVY-M", 0, "", ""},
		{"escapes", `{"solution":"a\"b\u00e9"}`, "a\"bé", 0, "", ""},
		{"empty passes to the engine", `{"solution":""}`, "", 0, "", ""},
		{"not JSON", `{"solution":"x"`, "", intentd.KindInvalid, CodeInvalidJSON, "not valid JSON"},
		{"string body", `"x"`, "", intentd.KindUnprocessable, intentd.CodeInvalidProposal, "got a JSON string"},
		{"missing", `{}`, "", intentd.KindUnprocessable, intentd.CodeInvalidProposal, "solution: missing"},
		{"null", `{"solution":null}`, "", intentd.KindUnprocessable, intentd.CodeInvalidProposal, "got a JSON null"},
		{"number", `{"solution":42}`, "", intentd.KindUnprocessable, intentd.CodeInvalidProposal, "got a JSON number"},
		{"unknown", `{"solution":"x","agent":"y"}`, "", intentd.KindUnprocessable, intentd.CodeInvalidProposal, "agent: unknown field"},
		{"duplicate", `{"solution":"x","solution":"y"}`, "", intentd.KindUnprocessable, intentd.CodeInvalidProposal, "solution: duplicate key"},
		{"metadata", `{"solution":"x","metadata":null}`, "", intentd.KindUnprocessable, CodeSupersededShape, "metadata"},
		{"surrogate pair", `{"solution":"\ud83d\ude00"}`, "\U0001F600", 0, "", ""},
		{"invalid UTF-8", "{\"solution\":\"https://shop.example/\xc0\xaf\"}", "", intentd.KindInvalid, CodeInvalidJSON, "not valid UTF-8"},
		{"lone high surrogate", `{"solution":"\ud800"}`, "", intentd.KindInvalid, CodeInvalidJSON, "lone surrogate"},
		{"high surrogate then a letter", `{"solution":"\ud800\u0041"}`, "", intentd.KindInvalid, CodeInvalidJSON, "lone surrogate"},
		{"lone low surrogate", `{"solution":"a\udc00"}`, "", intentd.KindInvalid, CodeInvalidJSON, "lone surrogate"},
		{"escaped backslash before u", `{"solution":"\\ud800"}`, "\\ud800", 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodeProposal([]byte(tt.body))
			if tt.code == "" {
				if err != nil || p.Solution != tt.want {
					t.Fatalf("got %+v, %v; want solution %q", p, err, tt.want)
				}
				return
			}
			wantError(t, err, tt.kind, tt.code, tt.inMessage)
		})
	}
}

// TestManyKeys: a body of a hundred thousand names is refused with the code of its
// shape, at whatever level of the body the names are; one at the bound of members is
// read whole, each of its members named as before.
func TestManyKeys(t *testing.T) {
	keys := manyKeys(100_000, "0")
	fields := strings.ReplaceAll(manyKeys(100_000, `{"Int":1}`), `"k`, `"f`)
	intent := func(extra string) string {
		return `{"intent":{"id":"` + testIntentID + `","policy_id":"11111111111111111111111111111111"` + extra + `},"authorship":"Unsigned"}`
	}
	tests := []struct {
		name, body string
		decode     func([]byte) error
		code       string
		inMessage  string
	}{
		{"authored intent", keys, decodeAuthored, intentd.CodeInvalidIntent, "body: more than 16 members"},
		{"proposal", keys, decodeProposal, intentd.CodeInvalidProposal, "body: more than 16 members"},
		{"intent", `{"intent":` + keys + `,"authorship":"Unsigned"}`, decodeAuthored, intentd.CodeInvalidIntent, "intent: more than 16 members"},
		{"attrs", intent(`,"attrs":{"fields":` + fields + `}`), decodeAuthored, intentd.CodeInvalidIntent, "intent.attrs.fields: more than 1024 fields"},
		{"at the bound", `{"intent":{},"authorship":"Unsigned",` + strings.Trim(manyKeys(14, "0"), "{}") + `}`, decodeAuthored, intentd.CodeInvalidIntent, "k0: unknown field"},
		{"proposal at the bound", `{"solution":"x",` + strings.Trim(manyKeys(15, "0"), "{}") + `}`, decodeProposal, intentd.CodeInvalidProposal, "k0: unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, tt.decode([]byte(tt.body)), intentd.KindUnprocessable, tt.code, tt.inMessage)
		})
	}
	// Text that is not JSON is a 400 however many names come before the fault.
	wantError(t, decodeAuthored([]byte(keys[:len(keys)-1])), intentd.KindInvalid, CodeInvalidJSON, "not valid JSON")
	wantError(t, decodeProposal([]byte(keys[:len(keys)-1]+`,"x":"\udc00"}`)), intentd.KindInvalid, CodeInvalidJSON, `lone surrogate (\udc00)`)
}

func decodeAuthored(body []byte) error {
	_, _, _, err := DecodeAuthoredIntent(body)
	return err
}

func decodeProposal(body []byte) error {
	_, err := DecodeProposal(body)
	return err
}

func TestParseLastEventID(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{"007", 7, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"9223372036854775808", 0, false},
		{"18446744073709551616", 0, false},
		{"", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{" 1", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"١", 0, false}, // an Arabic-Indic digit
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, err := ParseLastEventID(tt.in)
			if !tt.ok {
				wantError(t, err, intentd.KindInvalid, CodeInvalidLastEventID, "last-event-id")
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestRequireContentType(t *testing.T) {
	tests := []struct {
		header string
		ok     bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON; charset=UTF-8", true},
		{"application/json;charset=\"utf-8\"", true},
		{"application/json; charset=iso-8859-1", false},
		{"application/problem+json", false},
		{"text/json", false},
		{"application/json; charset", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/intents", nil)
			if tt.header != "" {
				r.Header.Set("Content-Type", tt.header)
			}
			err := requireContentType(r, "application/json")
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
			if err != nil {
				wantError(t, err, intentd.KindInvalid, CodeUnsupportedContentType, "Content-Type")
			}
		})
	}
}

func TestReadBody(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		chunked bool // no Content-Length: the limit is found while reading
		ok      bool
	}{
		{"at the limit", 100, false, true},
		{"over, by Content-Length", 101, false, false},
		{"at the limit, chunked", 100, true, true},
		{"over, chunked", 101, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", bytes.NewReader(bytes.Repeat([]byte("x"), tt.size)))
			if tt.chunked {
				r.ContentLength = -1
			}
			body, err := readBody(httptest.NewRecorder(), r, 100)
			if !tt.ok {
				wantError(t, err, intentd.KindTooLarge, CodeBodyTooLarge, "100 bytes")
				return
			}
			if err != nil || len(body) != tt.size {
				t.Fatalf("read %d bytes, %v", len(body), err)
			}
		})
	}
}

// checkDecodeError holds for every error of the body decoders: an *intentd.Error that
// is a 400 exactly when the text is not JSON (does not parse, is not UTF-8, or escapes
// a lone surrogate, as jsontext judges it; the cases are in the decoder tables) and a
// 422 otherwise.
func checkDecodeError(t *testing.T, body []byte, err error) {
	var e *intentd.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *intentd.Error", err)
	}
	want := intentd.KindUnprocessable
	if !jsontext.Value(body).IsValid(jsontext.AllowDuplicateNames(true)) {
		want = intentd.KindInvalid
	}
	if e.Kind != want || e.Message == "" || e.Code == "" {
		t.Fatalf("body %q: %s/%s %q, want kind %s", body, e.Kind, e.Code, e.Message, want)
	}
	if statusOf[e.Kind] != http.StatusBadRequest && statusOf[e.Kind] != http.StatusUnprocessableEntity {
		t.Fatalf("kind %s maps to %d", e.Kind, statusOf[e.Kind])
	}
}

func FuzzDecodeAuthoredIntent(f *testing.F) {
	f.Add(signedBody(f))
	for _, s := range []string{
		`{"intent":{},"authorship":"Unsigned"}`,
		`{"intent":{"id":"x","template_id":"y"},"authorship":"Unsigned"}`,
		`{"payload":{},"signature":{}}`,
		`{"intent":{},"signature":{}}`,
		`{"intent":{},"intent":{},"authorship":"Unsigned"}`,
		`{"intent":[],"authorship":{"Signed":{"Multisig":{"pub_key":{"signers":{},"threshold":1},"signatures":[]}}}}`,
		`{"intent":{},"authorship":{"Signed":{"Passkey":{"pub_key":"1","signature":"1","client_data":"{}","authenticator_data":"1"}}}}`,
		`{"intent":null,"authorship":null}`,
		`[]`, `"x"`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, intent, auth, err := DecodeAuthoredIntent(body)
		if err != nil {
			checkDecodeError(t, body, err)
			return
		}
		if !json.Valid(intent) || bytes.TrimSpace(intent)[0] != '{' {
			t.Fatalf("accepted intent %q is not a JSON object", intent)
		}
		// What was accepted encodes back to a form the decoder accepts as the same.
		enc, err := json.Marshal(auth)
		if err != nil {
			t.Fatalf("accepted authorship does not encode: %v", err)
		}
		again, err := crypto.DecodeAuthorship(enc)
		if err != nil {
			t.Fatalf("re-encoded authorship %s does not decode: %v", enc, err)
		}
		if enc2, _ := json.Marshal(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("authorship round trip: %s then %s", enc, enc2)
		}
	})
}

func FuzzDecodeProposal(f *testing.F) {
	for _, s := range []string{
		`{"solution":"sku:TS-NAVY-M"}`, `{"solution":""}`, `{"solution":"\u0000\ud800"}`,
		`{"solution":null}`, `{"solution":"x","metadata":{}}`, `{"solution":"x","solution":"y"}`,
		`{}`, `[]`, `"x"`, `{"solution":"x"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := DecodeProposal(body)
		if err != nil {
			checkDecodeError(t, body, err)
			return
		}
		// The body was exactly {"solution": s}: encoding s back decodes to s.
		enc, _ := json.Marshal(map[string]string{"solution": p.Solution})
		again, err := DecodeProposal(enc)
		if err != nil || again != p {
			t.Fatalf("round trip of %q: %+v, %v", p.Solution, again, err)
		}
	})
}

func FuzzParseLastEventID(f *testing.F) {
	for _, s := range []string{"0", "1", "007", "9223372036854775807", "9223372036854775808", "-1", "+1", " 1", "1.5", "", "१"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseLastEventID(s)
		if err != nil {
			wantError(t, err, intentd.KindInvalid, CodeInvalidLastEventID, "last-event-id")
			return
		}
		if n > math.MaxInt64 {
			t.Fatalf("%q gave %d, over int64", s, n)
		}
		if trimmed := strings.TrimLeft(s, "0"); strconv.FormatUint(n, 10) != trimmed && !(n == 0 && trimmed == "") {
			t.Fatalf("%q gave %d", s, n)
		}
	})
}

// FuzzStreamQuery holds the stream's query decoding to url.ParseQuery: the same values
// when it decodes, and a refusal, as the service's error, exactly when url.ParseQuery
// finds a pair it cannot decode (and url.Values would drop it).
func FuzzStreamQuery(f *testing.F) {
	for _, s := range []string{"", "last-event-id=5", "type=success&intent_id=a,b", "%zz", "a=%zz", "a;b=1", "a=1;b", "&&a=1&", "=x", "a", "a=b=c", "last-event-id=%2B1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := streamQuery(raw)
		want, werr := url.ParseQuery(raw)
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q: streamQuery %v, url.ParseQuery %v", raw, err, werr)
		}
		if err != nil {
			var e *intentd.Error
			if !errors.As(err, &e) || e.Kind != intentd.KindInvalid || e.Code != CodeInvalidFilter && e.Code != CodeInvalidLastEventID {
				t.Fatalf("%q: %v, want an invalid_filter or invalid_last_event_id error", raw, err)
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %v, want %v", raw, got, want)
		}
		for k, vs := range want {
			if !slices.Equal(got[k], vs) {
				t.Fatalf("%q: %s = %q, want %q", raw, k, got[k], vs)
			}
		}
	})
}
