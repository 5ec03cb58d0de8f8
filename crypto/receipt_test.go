package crypto

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testSigningKey derives a fixed signing key from a label.
func testSigningKey(t testing.TB, label string) *SigningKey {
	t.Helper()
	k, err := NewSigningKey(sha256Of("signing " + label))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func digestOf(label string) string { return EncodeBase58(sha256Of(label)) }

// typicalReceipt is a constraint failure with two failed constraints.
func typicalReceipt() Receipt {
	return Receipt{
		Version:              ReceiptVersion,
		IntentID:             "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31",
		PolicyID:             digestOf("policy"),
		AuthoredIntentDigest: digestOf("authored"),
		ProposalDigest:       digestOf("proposal"),
		EvidenceDigest:       digestOf("evidence"),
		Outcome:              OutcomeFailure,
		ConstraintFailures: []ConstraintFailure{
			{Index: 0, PrettyExpr: "evidence.size == parameters.size", Reason: `"L" != "M"`},
			{Index: 1, PrettyExpr: "evidence.price_cents <= parameters.max_price_cents", Reason: "9999 > 2500"},
		},
		FailureKind: FailureKindConstraints,
		IssuedAt:    time.Date(2025, 3, 1, 12, 30, 45, 123456789, time.FixedZone("CET", 3600)),
	}
}

func signTypical(t testing.TB, key *SigningKey) *SignedReceipt {
	t.Helper()
	s, err := SignReceipt(key, typicalReceipt())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignReceiptVerifies(t *testing.T) {
	key := testSigningKey(t, "service")
	tests := []struct {
		name   string
		modify func(*Receipt)
	}{
		{"constraint failure", func(*Receipt) {}},
		{"success", func(r *Receipt) { r.Outcome, r.ConstraintFailures, r.FailureKind = OutcomeSuccess, nil, "" }},
		{"success with an empty list", func(r *Receipt) {
			r.Outcome, r.ConstraintFailures, r.FailureKind = OutcomeSuccess, []ConstraintFailure{}, ""
		}},
		{"evidence failure", func(r *Receipt) {
			r.FailureKind, r.EvidenceMissing = FailureKindEvidence, []string{"price_cents", "size"}
		}},
		{"constraint failure beside missing evidence", func(r *Receipt) { r.EvidenceMissing = []string{"price_cents"} }},
		{"version 1 failure", func(r *Receipt) { r.Version, r.FailureKind = ReceiptVersion1, "" }},
		{"version 1 success", func(r *Receipt) {
			r.Version, r.Outcome, r.ConstraintFailures, r.FailureKind = ReceiptVersion1, OutcomeSuccess, nil, ""
		}},
		{"unicode in a reason", func(r *Receipt) { r.ConstraintFailures[0].Reason = "\u00e9t\u00e9 \u2260 hiver \U0001F600 <>&" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := typicalReceipt()
			tt.modify(&r)
			s, err := SignReceipt(key, r)
			if err != nil {
				t.Fatalf("SignReceipt: %v", err)
			}
			if s.Receipt.KeyID != key.ID() {
				t.Errorf("key_id %s, want the signing key's %s", s.Receipt.KeyID, key.ID())
			}
			if _, off := s.Receipt.IssuedAt.Zone(); off != 0 || !s.Receipt.IssuedAt.Equal(r.IssuedAt) {
				t.Errorf("issued_at %v, want %v in UTC", s.Receipt.IssuedAt, r.IssuedAt)
			}
			if err := VerifyReceipt(s, key.PublicKey()); err != nil {
				t.Fatalf("VerifyReceipt: %v", err)
			}
			wire, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeSignedReceipt(wire)
			if err != nil {
				t.Fatalf("DecodeSignedReceipt(%s): %v", wire, err)
			}
			if !reflect.DeepEqual(back, s) {
				t.Errorf("round trip changed the receipt:\n got %+v\nwant %+v", back, s)
			}
			if err := VerifyReceipt(back, key.PublicKey()); err != nil {
				t.Fatalf("VerifyReceipt after a round trip: %v", err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, wire) {
				t.Errorf("re-encoding differs:\n got %s\nwant %s", again, wire)
			}
		})
	}
}

// TestReceiptWireForm pins the field names and the forms of the values, which offline
// verifiers in other languages rely on.
func TestReceiptWireForm(t *testing.T) {
	s := signTypical(t, testSigningKey(t, "service"))
	wire, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Receipt   map[string]any `json:"receipt"`
		Signature string         `json:"signature"`
		PublicKey string         `json:"public_key"`
	}
	if err := json.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"version":                float64(2),
		"intent_id":              "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31",
		"policy_id":              digestOf("policy"),
		"authored_intent_digest": digestOf("authored"),
		"proposal_digest":        digestOf("proposal"),
		"evidence_digest":        digestOf("evidence"),
		"outcome":                "failure",
		"constraint_failures": []any{
			map[string]any{"index": float64(0), "pretty_expr": "evidence.size == parameters.size", "reason": `"L" != "M"`},
			map[string]any{"index": float64(1), "pretty_expr": "evidence.price_cents <= parameters.max_price_cents", "reason": "9999 > 2500"},
		},
		"failure_kind": "constraints",
		"issued_at":    "2025-03-01T11:30:45.123456789Z",
		"key_id":       s.Receipt.KeyID,
	}
	if !reflect.DeepEqual(got.Receipt, want) {
		t.Errorf("receipt object:\n got %v\nwant %v", got.Receipt, want)
	}
	if b, _ := DecodeBase58(got.Signature); len(b) != 64 {
		t.Errorf("signature %q decodes to %d bytes, want 64", got.Signature, len(b))
	}
	if got.PublicKey != EncodeBase58(s.PublicKey) {
		t.Errorf("public_key %q, want %q", got.PublicKey, EncodeBase58(s.PublicKey))
	}
	// The receipt member is written in its JCS form: the bytes signed.
	var members struct{ Receipt json.RawMessage }
	if err := json.Unmarshal(wire, &members); err != nil {
		t.Fatal(err)
	}
	signedBytes, err := canonicalReceipt(&s.Receipt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(members.Receipt, signedBytes) {
		t.Errorf("receipt member is not the signed bytes:\n got %s\nwant %s", members.Receipt, signedBytes)
	}
	// Inside an enclosing json.Marshal, '<' and '>' come out escaped; JCS brings back
	// the signed bytes.
	escaped, err := json.Marshal(struct{ R *SignedReceipt }{s})
	if err != nil {
		t.Fatal(err)
	}
	var outer struct {
		R struct{ Receipt json.RawMessage }
	}
	if err := json.Unmarshal(escaped, &outer); err != nil {
		t.Fatal(err)
	}
	if canon, err := Canonicalize(outer.R.Receipt); err != nil || !bytes.Equal(canon, signedBytes) {
		t.Errorf("JCS of the escaped receipt member: %s, %v; want the signed bytes", canon, err)
	}
}

func TestVerifyReceiptDetectsChanges(t *testing.T) {
	key := testSigningKey(t, "service")
	other := testSigningKey(t, "other")
	tests := []struct {
		name    string
		modify  func(*SignedReceipt)
		pub     []byte // nil: the service key
		wantErr string
	}{
		{"intent id", func(s *SignedReceipt) { s.Receipt.IntentID = "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a32" }, nil, "signature does not verify under key " + key.ID()},
		{"policy id", func(s *SignedReceipt) { s.Receipt.PolicyID = digestOf("other policy") }, nil, "signature does not verify"},
		{"authored intent digest", func(s *SignedReceipt) { s.Receipt.AuthoredIntentDigest = digestOf("x") }, nil, "signature does not verify"},
		{"proposal digest", func(s *SignedReceipt) { s.Receipt.ProposalDigest = digestOf("x") }, nil, "signature does not verify"},
		{"evidence digest", func(s *SignedReceipt) { s.Receipt.EvidenceDigest = digestOf("x") }, nil, "signature does not verify"},
		{"outcome", func(s *SignedReceipt) { s.Receipt.Outcome = OutcomeSuccess }, nil, "signature does not verify"},
		{"a failure's reason", func(s *SignedReceipt) { s.Receipt.ConstraintFailures[1].Reason = "9999 > 9999" }, nil, "signature does not verify"},
		{"a failure's index", func(s *SignedReceipt) { s.Receipt.ConstraintFailures[1].Index = 2 }, nil, "signature does not verify"},
		{"a failure dropped", func(s *SignedReceipt) { s.Receipt.ConstraintFailures = s.Receipt.ConstraintFailures[:1] }, nil, "signature does not verify"},
		{"issue time", func(s *SignedReceipt) { s.Receipt.IssuedAt = s.Receipt.IssuedAt.Add(time.Nanosecond) }, nil, "signature does not verify"},
		{"a bit of the signature", func(s *SignedReceipt) { s.Signature = flipBit(s.Signature, 100) }, nil, "signature does not verify"},
		{"short signature", func(s *SignedReceipt) { s.Signature = s.Signature[:63] }, nil, "signature is 63 bytes"},
		{"another trusted key", func(*SignedReceipt) {}, other.PublicKey(), "receipt names key " + key.ID() + ", the key given is " + other.ID()},
		{"key id rewritten to another key", func(s *SignedReceipt) { s.Receipt.KeyID = other.ID() }, other.PublicKey(), "signature does not verify under key " + other.ID()},
		{"short key", func(*SignedReceipt) {}, other.PublicKey()[:31], "public key is 31 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := signTypical(t, key)
			tt.modify(s)
			pub := tt.pub
			if pub == nil {
				pub = key.PublicKey()
			}
			err := VerifyReceipt(s, pub)
			if err == nil {
				t.Fatalf("VerifyReceipt succeeded, want an error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("VerifyReceipt: %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestSignReceiptRefuses(t *testing.T) {
	key := testSigningKey(t, "service")
	tests := []struct {
		name      string
		modify    func(*Receipt)
		wantField string
	}{
		{"version", func(r *Receipt) { r.Version = 5 }, "version"},
		{"version 3 without its agent", func(r *Receipt) { r.Version = 3 }, "agent"},
		{"kind in version 1", func(r *Receipt) { r.Version = ReceiptVersion1 }, "failure_kind"},
		{"missing evidence in version 1", func(r *Receipt) {
			r.Version, r.FailureKind, r.EvidenceMissing = ReceiptVersion1, "", []string{"size"}
		}, "evidence_missing"},
		{"failure without a kind", func(r *Receipt) { r.FailureKind = "" }, "failure_kind"},
		{"unknown kind", func(r *Receipt) { r.FailureKind = "extraction" }, "failure_kind"},
		{"success with a kind", func(r *Receipt) { r.Outcome, r.ConstraintFailures = OutcomeSuccess, nil }, "failure_kind"},
		{"success with missing evidence", func(r *Receipt) {
			r.Outcome, r.ConstraintFailures, r.FailureKind, r.EvidenceMissing = OutcomeSuccess, nil, "", []string{"size"}
		}, "evidence_missing"},
		{"evidence kind naming nothing", func(r *Receipt) { r.FailureKind = FailureKindEvidence }, "evidence_missing"},
		{"an empty list of missing evidence", func(r *Receipt) { r.EvidenceMissing = []string{} }, "evidence_missing"},
		{"missing evidence unsorted", func(r *Receipt) { r.EvidenceMissing = []string{"size", "price_cents"} }, "evidence_missing[1]"},
		{"missing evidence repeated", func(r *Receipt) { r.EvidenceMissing = []string{"size", "size"} }, "evidence_missing[1]"},
		{"missing evidence with an empty name", func(r *Receipt) { r.EvidenceMissing = []string{""} }, "evidence_missing[0]"},
		{"no intent id", func(r *Receipt) { r.IntentID = "" }, "intent_id"},
		{"policy id not Base58", func(r *Receipt) { r.PolicyID = "0OIl" }, "policy_id"},
		{"digest of 31 bytes", func(r *Receipt) { r.EvidenceDigest = EncodeBase58(sha256Of("x")[:31]) }, "evidence_digest"},
		{"digest with a leading 1", func(r *Receipt) { r.ProposalDigest = "1" + digestOf("x") }, "proposal_digest"},
		{"unknown outcome", func(r *Receipt) { r.Outcome = "expired" }, "outcome"},
		{"success with failures", func(r *Receipt) { r.Outcome = OutcomeSuccess }, "constraint_failures"},
		{"failure without failures", func(r *Receipt) { r.ConstraintFailures = nil }, "constraint_failures"},
		{"no time", func(r *Receipt) { r.IssuedAt = time.Time{} }, "issued_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := typicalReceipt()
			tt.modify(&r)
			_, err := SignReceipt(key, r)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("SignReceipt: %v, want a *FieldError", err)
			}
			if fe.Field != tt.wantField {
				t.Fatalf("SignReceipt: field %q (%v), want %q", fe.Field, err, tt.wantField)
			}
		})
	}
}

// signedWire returns the wire form of the typical receipt as a generic tree that tests
// change one value of.
func signedWire(t *testing.T) map[string]any {
	t.Helper()
	wire, err := json.Marshal(signTypical(t, testSigningKey(t, "service")))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(wire, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDecodeSignedReceiptErrors(t *testing.T) {
	tests := []struct {
		name      string
		modify    func(w, r map[string]any)
		raw       string // used instead of modify when set
		wantField string
		wantErr   string
	}{
		{name: "not JSON", raw: `{"receipt":`, wantField: "", wantErr: "not valid JSON"},
		{name: "duplicate key", raw: `{"signature":"a","signature":"b"}`, wantField: "", wantErr: "not valid JSON"},
		{name: "unknown top-level field", modify: func(w, _ map[string]any) { w["extra"] = 1 }, wantErr: "unknown field"},
		{name: "unknown receipt field", modify: func(_, r map[string]any) { r["note"] = "hi" }, wantField: "receipt", wantErr: "unknown field"},
		{name: "no receipt", modify: func(w, _ map[string]any) { delete(w, "receipt") }, wantField: "receipt", wantErr: "missing"},
		{name: "null receipt", modify: func(w, _ map[string]any) { w["receipt"] = nil }, wantField: "receipt", wantErr: "missing"},
		{name: "no signature", modify: func(w, _ map[string]any) { delete(w, "signature") }, wantField: "signature", wantErr: "missing"},
		{name: "no public key", modify: func(w, _ map[string]any) { delete(w, "public_key") }, wantField: "public_key", wantErr: "missing"},
		{name: "signature not Base58", modify: func(w, _ map[string]any) { w["signature"] = "0OIl" }, wantField: "signature", wantErr: "Base58"},
		{name: "signature of 32 bytes", modify: func(w, _ map[string]any) { w["signature"] = digestOf("x") }, wantField: "signature", wantErr: "want 64"},
		{name: "public key of 64 bytes", modify: func(w, _ map[string]any) { w["public_key"] = w["signature"] }, wantField: "public_key", wantErr: "want 32"},
		{name: "no version", modify: func(_, r map[string]any) { delete(r, "version") }, wantField: "receipt.version", wantErr: "want 4, 3, 2 or 1"},
		{name: "version 1 with a kind", modify: func(_, r map[string]any) { r["version"] = 1 }, wantField: "receipt.failure_kind", wantErr: "version 1"},
		{name: "an empty list of missing evidence", modify: func(_, r map[string]any) { r["evidence_missing"] = []any{} }, wantField: "receipt.evidence_missing", wantErr: "left out"},
		{name: "version as a string", modify: func(_, r map[string]any) { r["version"] = "1" }, wantField: "receipt", wantErr: "cannot unmarshal"},
		{name: "no key id", modify: func(_, r map[string]any) { delete(r, "key_id") }, wantField: "receipt.key_id", wantErr: "empty"},
		{name: "unknown outcome", modify: func(_, r map[string]any) { r["outcome"] = "expired" }, wantField: "receipt.outcome", wantErr: `"expired"`},
		{name: "null failures", modify: func(_, r map[string]any) {
			r["outcome"], r["constraint_failures"] = "success", nil
			delete(r, "failure_kind")
		}, wantField: "receipt.constraint_failures", wantErr: "null"},
		{name: "no time", modify: func(_, r map[string]any) { delete(r, "issued_at") }, wantField: "receipt.issued_at", wantErr: "missing"},
		{name: "time not RFC 3339", modify: func(_, r map[string]any) { r["issued_at"] = "1 March 2025" }, wantField: "receipt", wantErr: "cannot parse"},
		{name: "time with an offset", modify: func(_, r map[string]any) { r["issued_at"] = "2025-03-01T12:30:45.123456789+01:00" }, wantField: "receipt.issued_at", wantErr: "not in UTC"},
		{name: "time with a zero offset", modify: func(_, r map[string]any) { r["issued_at"] = "2025-03-01T11:30:45.123456789+00:00" }, wantField: "receipt", wantErr: "spelled differently"},
		{name: "time with trailing zeros", modify: func(_, r map[string]any) { r["issued_at"] = "2025-03-01T11:30:45.1234567890Z" }, wantField: "receipt", wantErr: "spelled differently"},
		{name: "index with an exponent", modify: func(_, r map[string]any) {
			r["constraint_failures"].([]any)[1].(map[string]any)["index"] = json.Number("1e0")
		}, wantField: "receipt", wantErr: "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.raw)
			if tt.raw == "" {
				w := signedWire(t)
				r, _ := w["receipt"].(map[string]any)
				tt.modify(w, r)
				var err error
				if data, err = json.Marshal(w); err != nil {
					t.Fatal(err)
				}
			}
			_, err := DecodeSignedReceipt(data)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("DecodeSignedReceipt(%s): %v, want a *FieldError", data, err)
			}
			if fe.Field != tt.wantField || !strings.Contains(fe.Reason, tt.wantErr) {
				t.Fatalf("DecodeSignedReceipt: field %q reason %q, want field %q and a reason containing %q", fe.Field, fe.Reason, tt.wantField, tt.wantErr)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	base, err := Digest([]byte(`{"size":"M","price_cents":1999}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkDigest(base); err != nil {
		t.Fatalf("Digest gave %q: %v", base, err)
	}
	tests := []struct {
		name    string
		json    string
		same    bool
		fails   bool
		wantErr string // in the lower-cased error, when fails
	}{
		{name: "keys reordered", json: `{"price_cents":1999,"size":"M"}`, same: true},
		{name: "whitespace", json: " {\n\"size\" : \"M\",\t\"price_cents\": 1999 } ", same: true},
		{name: "number spelled with an exponent", json: `{"size":"M","price_cents":1.999e3}`, same: true},
		{name: "escaped string", json: `{"size":"\u004d","price_cents":1999}`, same: true},
		{name: "one value changed", json: `{"size":"M","price_cents":1998}`},
		{name: "one key changed", json: `{"size":"M","price_cent":1999}`},
		{name: "a field added", json: `{"size":"M","price_cents":1999,"x":null}`},
		{name: "number beyond 2^53", json: `{"size":"M","price_cents":9007199254740993}`, fails: true, wantErr: "beyond"},
		{name: "duplicate key", json: `{"size":"M","size":"L"}`, fails: true, wantErr: "duplicate"},
		{name: "not JSON", json: `{"size":`, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Digest([]byte(tt.json))
			if tt.fails {
				if err == nil || !strings.Contains(strings.ToLower(err.Error()), tt.wantErr) {
					t.Fatalf("Digest: %q, %v; want an error containing %q", d, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (d == base) != tt.same {
				t.Fatalf("Digest = %s, base %s; want same=%v", d, base, tt.same)
			}
		})
	}
}

// FuzzDecodeSignedReceipt checks that the decoder never panics, that every failure is a
// *FieldError, and that whatever decodes encodes back to JSON that decodes to the same
// value and verifies (or not) the same way.
func FuzzDecodeSignedReceipt(f *testing.F) {
	key := testSigningKey(f, "fuzz")
	ok := signTypical(f, key)
	wire, err := json.Marshal(ok)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(wire)
	f.Add(bytes.Replace(wire, []byte(`"failure"`), []byte(`"success"`), 1))
	f.Add(bytes.Replace(wire, []byte(`"version":2`), []byte(`"version":2.0`), 1))
	f.Add(bytes.Replace(wire, []byte(`Z"`), []byte(`+00:00"`), 1))
	f.Add(bytes.Replace(wire, []byte(`"failure_kind":"constraints"`), []byte(`"evidence_missing":["size"],"failure_kind":"evidence"`), 1))
	f.Add([]byte(`{"receipt":{},"signature":"","public_key":""}`))
	f.Add([]byte(`null`))
	v3, err := SignReceipt(key, agentReceipt(edKey("agent"), []byte("base")))
	if err != nil {
		f.Fatal(err)
	}
	if wire, err = json.Marshal(v3); err != nil {
		f.Fatal(err)
	}
	f.Add(wire)
	f.Add(bytes.Replace(wire, []byte(`"version":3`), []byte(`"version":2`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSignedReceipt(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *FieldError", err, err)
			}
			return
		}
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("decoded receipt does not encode: %v", err)
		}
		back, err := DecodeSignedReceipt(enc)
		if err != nil {
			t.Fatalf("re-encoded receipt does not decode: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip changed the receipt:\n got %+v\nwant %+v", back, s)
		}
		if (VerifyReceipt(s, s.PublicKey) == nil) != (VerifyReceipt(back, back.PublicKey) == nil) {
			t.Fatal("verification differs after a round trip")
		}
	})
}

func BenchmarkSignReceipt(b *testing.B) {
	key := testSigningKey(b, "bench")
	r := typicalReceipt()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SignReceipt(key, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyReceipt(b *testing.B) {
	key := testSigningKey(b, "bench")
	s := signTypical(b, key)
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyReceipt(s, key.PublicKey()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSignedReceipt(b *testing.B) {
	wire, err := json.Marshal(signTypical(b, testSigningKey(b, "bench")))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSignedReceipt(wire); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSignReceiptJSON holds the one-pass signing and encoding to SignReceipt followed
// by MarshalJSON, byte for byte, and to its refusals.
func TestSignReceiptJSON(t *testing.T) {
	key := testSigningKey(t, "service")
	for _, tc := range []struct {
		name   string
		modify func(*Receipt)
	}{
		{"failure", func(*Receipt) {}},
		{"success", func(r *Receipt) { r.Outcome, r.ConstraintFailures, r.FailureKind = OutcomeSuccess, nil, "" }},
		{"refused", func(r *Receipt) { r.Outcome = "expired" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := typicalReceipt()
			tc.modify(&r)
			got, gotErr := SignReceiptJSON(key, r)
			var want []byte
			s, wantErr := SignReceipt(key, r)
			if wantErr == nil {
				want, wantErr = s.MarshalJSON()
			}
			if (gotErr == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("SignReceiptJSON = %s, %v; SignReceipt and MarshalJSON = %s, %v", got, gotErr, want, wantErr)
			}
		})
	}
}
