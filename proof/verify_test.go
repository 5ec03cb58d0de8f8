package proof_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/proof"
)

// The bundles here are made without an engine, from the same parts the service puts in
// one, so that Verify is checked on its own and on input nobody's engine made. The
// engine's bundles are checked in package actors.

const testPolicy = `
name test_tshirt
parameters { size: string  max_price_cents: int }
evidence { size: string  price_cents: int }
requires {
  evidence.size == parameters.size;
  evidence.price_cents <= parameters.max_price_cents;
}
`

// testIntentID is fixed, so that the fuzz seeds are the same on every run.
const testIntentID = "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31"

// serviceKey signs the receipts; otherKey stands for any other service's key.
var serviceKey, otherKey = signingKey("service"), signingKey("other")

// authorKey signs the intents.
var authorKey = ed25519.NewKeyFromSeed(seed("author"))

func seed(label string) []byte {
	s := sha256.Sum256([]byte("proof test " + label))
	return s[:]
}

func signingKey(label string) *crypto.SigningKey {
	k, err := crypto.NewSigningKey(seed(label))
	if err != nil {
		panic(err)
	}
	return k
}

// bundle is a proof bundle in its parts, as the service would make it: encode signs the
// receipt and writes the JSON. A test changes a part, and re-signs or re-digests when
// it means to stand for a service that signed something else.
type bundle struct {
	key      *crypto.SigningKey
	authored json.RawMessage
	proposal json.RawMessage
	evidence json.RawMessage
	bytecode []byte
	receipt  crypto.Receipt
	// edit, when set, changes the bundle's members after the receipt is signed.
	edit func(parts map[string]json.RawMessage)
}

// newBundle is the bundle of an intent for a size M t-shirt of at most 2500 cents, for
// which the evidence shows a size L at 9999 cents: a failure of both constraints.
func newBundle(tb testing.TB) *bundle {
	tb.Helper()
	return newBundleFor(tb, `{"size":"L","price_cents":9999}`)
}

// newBundleFor is newBundle with other evidence, and the outcome the policy gives on it.
func newBundleFor(tb testing.TB, evidence string) *bundle {
	tb.Helper()
	p, err := policy.Compile(testPolicy)
	if err != nil {
		tb.Fatal(err)
	}
	b := &bundle{key: serviceKey, evidence: json.RawMessage(evidence), bytecode: p.Bytecode()}
	raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":2500}}}}`, testIntentID, p.ID())
	b.setIntent(tb, raw, authorKey)
	if b.proposal, err = json.Marshal(intentd.Proposal{Solution: "https://shop.example/p/tee-l"}); err != nil {
		tb.Fatal(err)
	}
	in, err := intentd.DecodeIntent(raw)
	if err != nil {
		tb.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(evidence))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		tb.Fatal(err)
	}
	b.receipt = crypto.Receipt{
		Version:  crypto.ReceiptVersion,
		IntentID: testIntentID,
		PolicyID: p.ID(),
		Outcome:  crypto.OutcomeSuccess,
		IssuedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
	}
	failures := p.Evaluate(*in.Attrs, ev)
	for _, f := range failures {
		b.receipt.Outcome = crypto.OutcomeFailure
		b.receipt.ConstraintFailures = append(b.receipt.ConstraintFailures,
			crypto.ConstraintFailure{Index: f.Index, PrettyExpr: f.PrettyExpr, Reason: f.Reason})
	}
	kind, missing := intentd.ClassifyFailures(failures)
	b.receipt.FailureKind, b.receipt.EvidenceMissing = string(kind), missing
	b.redigest(tb)
	return b
}

// setIntent makes the authored intent: raw in its canonical form, signed by author, or
// unsigned when author is nil.
func (b *bundle) setIntent(tb testing.TB, raw []byte, author ed25519.PrivateKey) {
	tb.Helper()
	var auth crypto.Authorship
	if author != nil {
		var err error
		if auth, err = crypto.SignEd25519(author, raw); err != nil {
			tb.Fatal(err)
		}
	}
	canon, err := crypto.Canonicalize(raw)
	if err != nil {
		tb.Fatal(err)
	}
	if b.authored, err = json.Marshal(intentd.AuthoredIntent{Intent: canon, Authorship: auth}); err != nil {
		tb.Fatal(err)
	}
}

// redigest binds the receipt to the parts as they are now, as a service would that
// signed them.
func (b *bundle) redigest(tb testing.TB) {
	tb.Helper()
	for _, d := range []struct {
		part json.RawMessage
		to   *string
	}{{b.authored, &b.receipt.AuthoredIntentDigest}, {b.proposal, &b.receipt.ProposalDigest}, {b.evidence, &b.receipt.EvidenceDigest}} {
		var err error
		if *d.to, err = crypto.Digest(d.part); err != nil {
			tb.Fatal(err)
		}
	}
}

// encode signs the receipt and writes the bundle's JSON.
func (b *bundle) encode(tb testing.TB) []byte {
	tb.Helper()
	signed, err := crypto.SignReceipt(b.key, b.receipt)
	if err != nil {
		tb.Fatal(err)
	}
	receipt, err := signed.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	bytecode, _ := json.Marshal(base64.StdEncoding.EncodeToString(b.bytecode))
	parts := map[string]json.RawMessage{"receipt": receipt, "authored_intent": b.authored, "proposal": b.proposal,
		"evidence": b.evidence, "policy_bytecode": bytecode}
	if b.edit != nil {
		b.edit(parts)
	}
	data, err := json.Marshal(parts)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func TestVerify(t *testing.T) {
	p, err := policy.Compile(testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	authorPub := crypto.EncodeBase58(authorKey.Public().(ed25519.PublicKey))
	failures := []policy.Failure{
		{Index: 0, PrettyExpr: "evidence.size == parameters.size", Reason: `evidence.size = "L", which is not == parameters.size = "M"`},
		{Index: 1, PrettyExpr: "evidence.price_cents <= parameters.max_price_cents", Reason: "evidence.price_cents = 9999, which is not <= parameters.max_price_cents = 2500"},
	}
	priceMissing := policy.Failure{Index: 1, PrettyExpr: "evidence.price_cents <= parameters.max_price_cents",
		Reason: "evidence.price_cents is missing from the evidence", MissingEvidence: []string{"price_cents"}}
	tests := []struct {
		name    string
		bundle  func(tb testing.TB) *bundle
		trusted ed25519.PublicKey
		want    proof.VerifyReport
		notes   []string // each is in one of the report's notes
	}{
		{"a constraint failure", newBundle, serviceKey.PublicKey(), proof.VerifyReport{
			Outcome: intentd.StateFailure, Failures: failures, FailureKind: intentd.FailureConstraints,
			KeyTrusted: true, Authorship: "Ed25519", AuthorKey: authorPub,
		}, []string{"evidence is the extractor's account"}},
		{"an evidence failure", func(tb testing.TB) *bundle { return newBundleFor(tb, `{"size":"M"}`) }, serviceKey.PublicKey(), proof.VerifyReport{
			Outcome: intentd.StateFailure, Failures: []policy.Failure{priceMissing}, FailureKind: intentd.FailureEvidence,
			EvidenceMissing: []string{"price_cents"}, KeyTrusted: true, Authorship: "Ed25519", AuthorKey: authorPub,
		}, nil},
		{"a violation beside missing evidence", func(tb testing.TB) *bundle { return newBundleFor(tb, `{"size":"L"}`) }, serviceKey.PublicKey(), proof.VerifyReport{
			Outcome: intentd.StateFailure, Failures: []policy.Failure{failures[0], priceMissing}, FailureKind: intentd.FailureConstraints,
			EvidenceMissing: []string{"price_cents"}, KeyTrusted: true, Authorship: "Ed25519", AuthorKey: authorPub,
		}, nil},
		{"a version 1 receipt", func(tb testing.TB) *bundle {
			b := newBundleFor(tb, `{"size":"M"}`)
			b.receipt.Version, b.receipt.FailureKind, b.receipt.EvidenceMissing = crypto.ReceiptVersion1, "", nil
			return b
		}, serviceKey.PublicKey(), proof.VerifyReport{
			Outcome: intentd.StateFailure, Failures: []policy.Failure{priceMissing}, FailureKind: intentd.FailureEvidence,
			EvidenceMissing: []string{"price_cents"}, KeyTrusted: true, Authorship: "Ed25519", AuthorKey: authorPub,
		}, []string{"a version 1 receipt does not state the failure's kind: evidence is the re-evaluation's"}},
		{"a success", func(tb testing.TB) *bundle { return newBundleFor(tb, `{"size":"M","price_cents":1999}`) }, serviceKey.PublicKey(), proof.VerifyReport{
			Outcome: intentd.StateSuccess, Failures: []policy.Failure{}, KeyTrusted: true, Authorship: "Ed25519", AuthorKey: authorPub,
		}, nil},
		{"no trusted key", newBundle, nil, proof.VerifyReport{
			Outcome: intentd.StateFailure, Failures: failures, FailureKind: intentd.FailureConstraints, KeyTrusted: false, Authorship: "Ed25519", AuthorKey: authorPub,
		}, []string{"no trusted key was given"}},
		{"an unsigned intent", func(tb testing.TB) *bundle {
			b := newBundle(tb)
			var a intentd.AuthoredIntent
			if err := json.Unmarshal(b.authored, &a); err != nil {
				tb.Fatal(err)
			}
			b.setIntent(tb, a.Intent, nil)
			b.redigest(tb)
			return b
		}, serviceKey.PublicKey(), proof.VerifyReport{
			Outcome: intentd.StateFailure, Failures: failures, FailureKind: intentd.FailureConstraints, KeyTrusted: true, Authorship: "Unsigned",
		}, []string{"the intent is unsigned"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := proof.Verify(tt.bundle(t).encode(t), tt.trusted)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			want := tt.want
			want.IntentID, want.PolicyID = testIntentID, p.ID()
			want.IssuedAt = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			want.KeyID, want.PublicKey = serviceKey.ID(), crypto.EncodeBase58(serviceKey.PublicKey())
			want.Notes = rep.Notes
			if !reflect.DeepEqual(*rep, want) {
				t.Fatalf("report:\n got %+v\nwant %+v", *rep, want)
			}
			notes := strings.Join(rep.Notes, "\n")
			for _, n := range tt.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes %q do not say %q", rep.Notes, n)
				}
			}
		})
	}
}

// TestVerifyTampering changes one thing in a bundle at a time: each is found, by the
// check that covers it.
func TestVerifyTampering(t *testing.T) {
	other, err := policy.Compile(strings.Replace(testPolicy, "test_tshirt", "other_tshirt", 1))
	if err != nil {
		t.Fatal(err)
	}
	service := serviceKey.PublicKey()
	tests := slices.Concat(shapeTamperings(service), keyTamperings(service), boundTamperings(service), signedTamperings(service, other))
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// tampering is a bundle changed by change, or left whole when change is nil, and the
// check that Verify must refuse it at, with message in what it says, given trusted as
// the service's key.
type tampering struct {
	name    string
	trusted ed25519.PublicKey
	change  func(t *testing.T, b *bundle)
	check   string
	message string
}

func (tt tampering) run(t *testing.T) {
	b := newBundle(t)
	if tt.change != nil {
		tt.change(t, b)
	}
	rep, err := proof.Verify(b.encode(t), tt.trusted)
	if err == nil {
		t.Fatalf("Verify succeeded (%+v), want check %s: %s", rep, tt.check, tt.message)
	}
	var ve *proof.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("Verify: %v (%T), want a *proof.VerifyError", err, err)
	}
	if ve.Check != tt.check || !strings.Contains(ve.Message, tt.message) {
		t.Fatalf("Verify: check %s: %q\nwant check %s with %q", ve.Check, ve.Message, tt.check, tt.message)
	}
}

// replacePart replaces the first old in a part of a bundle, which must hold it.
func replacePart(t *testing.T, part *json.RawMessage, old, new string) {
	t.Helper()
	if !bytes.Contains(*part, []byte(old)) {
		t.Fatalf("%s is not in %s", old, *part)
	}
	*part = bytes.Replace(*part, []byte(old), []byte(new), 1)
}

// shapeTamperings change the bundle's shape.
func shapeTamperings(service ed25519.PublicKey) []tampering {
	return []tampering{
		{"an unknown member", service, func(t *testing.T, b *bundle) {
			b.edit = func(p map[string]json.RawMessage) { p["note"] = json.RawMessage(`"trust me"`) }
		}, proof.CheckBundle, `unknown field "note"`},
		{"no evidence", service, func(t *testing.T, b *bundle) {
			b.edit = func(p map[string]json.RawMessage) { delete(p, "evidence") }
		}, proof.CheckBundle, "evidence is missing"},
		{"no bytecode", service, func(t *testing.T, b *bundle) {
			b.edit = func(p map[string]json.RawMessage) { delete(p, "policy_bytecode") }
		}, proof.CheckBundle, "policy_bytecode is missing"},
		{"a receipt that is not one", service, func(t *testing.T, b *bundle) {
			b.edit = func(p map[string]json.RawMessage) { p["receipt"] = json.RawMessage(`{"receipt":{}}`) }
		}, proof.CheckBundle, "receipt"},
	}
}

// keyTamperings are what the receipt's key and signature catch.
func keyTamperings(service ed25519.PublicKey) []tampering {
	return []tampering{
		{"another trusted key", otherKey.PublicKey(), nil, proof.CheckKey,
			"receipt is signed by key " + serviceKey.ID() + ", not by the trusted key " + otherKey.ID()},
		{"signed by another key", service, func(t *testing.T, b *bundle) { b.key = otherKey }, proof.CheckKey,
			"receipt is signed by key " + otherKey.ID() + ", not by the trusted key " + serviceKey.ID()},
		{"a trusted key of 31 bytes", service[:31], nil, proof.CheckKey, "trusted key is 31 bytes"},
		{"the bundle's key swapped, no trusted key", nil, func(t *testing.T, b *bundle) {
			b.edit = func(p map[string]json.RawMessage) {
				r := p["receipt"]
				replacePart(t, &r, crypto.EncodeBase58(service), crypto.EncodeBase58(otherKey.PublicKey()))
				p["receipt"] = r
			}
		}, proof.CheckKey, "receipt names key " + serviceKey.ID() + ", but the bundle's public key is " + otherKey.ID()},
		{"a failure's reason after signing", service, func(t *testing.T, b *bundle) {
			b.edit = func(p map[string]json.RawMessage) {
				r := p["receipt"]
				replacePart(t, &r, "price_cents = 9999,", "price_cents = 9998,")
				p["receipt"] = r
			}
		}, proof.CheckSignature, "signature does not verify under key " + serviceKey.ID()},
		{"a bit of the signature", service, func(t *testing.T, b *bundle) {
			b.edit = func(p map[string]json.RawMessage) {
				var s crypto.SignedReceipt
				if err := json.Unmarshal(p["receipt"], &s); err != nil {
					t.Fatal(err)
				}
				s.Signature[10] ^= 4
				p["receipt"], _ = s.MarshalJSON()
			}
		}, proof.CheckSignature, "signature does not verify"},
	}
}

// boundTamperings change what the receipt's digests and policy id bind.
func boundTamperings(service ed25519.PublicKey) []tampering {
	return []tampering{
		{"an attribute", service, func(t *testing.T, b *bundle) {
			replacePart(t, &b.authored, `{"Int":2500}`, `{"Int":9999}`)
		}, proof.CheckAuthoredIntentDigest, "authored intent digest does not match"},
		{"the solution", service, func(t *testing.T, b *bundle) {
			replacePart(t, &b.proposal, "tee-l", "tee-m")
		}, proof.CheckProposalDigest, "proposal digest does not match"},
		{"a byte of the evidence", service, func(t *testing.T, b *bundle) {
			replacePart(t, &b.evidence, "9999", "9998")
		}, proof.CheckEvidenceDigest, "evidence digest does not match"},
		{"evidence with a number JCS would round", service, func(t *testing.T, b *bundle) {
			replacePart(t, &b.evidence, "9999", "9007199254740993")
		}, proof.CheckEvidenceDigest, "evidence digest cannot be computed"},

		{"a byte of the bytecode", service, func(t *testing.T, b *bundle) {
			b.bytecode = bytes.Clone(b.bytecode)
			b.bytecode[len(b.bytecode)/2] ^= 1
		}, proof.CheckPolicy, "policy bytecode hashes to"},
		{"bytecode that does not load, signed", service, func(t *testing.T, b *bundle) {
			b.bytecode = []byte("not bytecode")
			sum := sha256.Sum256(b.bytecode)
			b.receipt.PolicyID = crypto.EncodeBase58(sum[:])
		}, proof.CheckPolicy, "policy bytecode does not load"},
	}
}

// signedTamperings are what a service could sign that the parts do not say: the checks
// behind the signature. other is a policy other than the intent's.
func signedTamperings(service ed25519.PublicKey, other *policy.Policy) []tampering {
	return []tampering{
		{"another intent id, signed", service, func(t *testing.T, b *bundle) {
			b.receipt.IntentID = "00000000-0000-4000-8000-000000000001"
		}, proof.CheckIntent, "the authored intent's id is " + testIntentID},
		{"another policy, signed", service, func(t *testing.T, b *bundle) {
			b.bytecode, b.receipt.PolicyID = other.Bytecode(), other.ID()
		}, proof.CheckIntent, "the receipt names " + other.ID()},
		{"an attribute, signed", service, func(t *testing.T, b *bundle) {
			replacePart(t, &b.authored, `{"Int":2500}`, `{"Int":9999}`)
			b.redigest(t)
		}, proof.CheckAuthorship, "intent authorship does not verify"},
		{"success, signed", service, func(t *testing.T, b *bundle) {
			b.receipt.Outcome, b.receipt.ConstraintFailures, b.receipt.FailureKind = crypto.OutcomeSuccess, nil, ""
		}, proof.CheckEvaluation, "re-evaluation gives failure, the receipt says success"},
		{"a failure's reason, signed", service, func(t *testing.T, b *bundle) {
			b.receipt.ConstraintFailures[1].Reason = "too dear"
		}, proof.CheckEvaluation, `constraint failure 1: re-evaluation gives reason`},
		{"a failure dropped, signed", service, func(t *testing.T, b *bundle) {
			b.receipt.ConstraintFailures = b.receipt.ConstraintFailures[:1]
		}, proof.CheckEvaluation, "re-evaluation gives 2 constraint failures, the receipt lists 1"},
		{"the failure kind, signed", service, func(t *testing.T, b *bundle) {
			b.receipt.FailureKind, b.receipt.EvidenceMissing = crypto.FailureKindEvidence, []string{"size"}
		}, proof.CheckEvaluation, `re-evaluation gives failure kind "constraints", the receipt says "evidence"`},
		{"evidence called missing, signed", service, func(t *testing.T, b *bundle) {
			b.receipt.EvidenceMissing = []string{"price_cents"}
		}, proof.CheckEvaluation, `re-evaluation finds evidence missing [], the receipt says ["price_cents"]`},
		{"missing evidence left unsaid, signed", service, func(t *testing.T, b *bundle) {
			b.evidence = json.RawMessage(`{"size":"L"}`)
			b.receipt.ConstraintFailures[1].Reason = "evidence.price_cents is missing from the evidence"
			b.redigest(t)
		}, proof.CheckEvaluation, `re-evaluation finds evidence missing ["price_cents"], the receipt says []`},
		{"evidence that is not an object, signed", service, func(t *testing.T, b *bundle) {
			b.evidence = json.RawMessage(`["L",9999]`)
			b.redigest(t)
		}, proof.CheckBundle, "evidence is not a JSON object"},
		{"an empty solution, signed", service, func(t *testing.T, b *bundle) {
			b.proposal = json.RawMessage(`{"solution":""}`)
			b.redigest(t)
		}, proof.CheckBundle, "proposal is not"},
	}
}

// FuzzVerify checks that any input gives a report or a *proof.VerifyError, never a
// panic, and that a bundle that verifies under the service key says what its receipt
// says.
func FuzzVerify(f *testing.F) {
	good := newBundle(f).encode(f)
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`9999`), []byte(`9998`), 1))
	f.Add(bytes.Replace(good, []byte(`"failure"`), []byte(`"success"`), 1))
	f.Add(newBundleFor(f, `{"size":"M","price_cents":1999}`).encode(f))
	f.Add(newBundleFor(f, `{"size":"M"}`).encode(f))
	f.Add([]byte(`{"receipt":null,"authored_intent":{},"proposal":{},"evidence":{},"policy_bytecode":""}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := proof.Verify(data, serviceKey.PublicKey())
		if err != nil {
			var ve *proof.VerifyError
			if !errors.As(err, &ve) || ve.Check == "" || ve.Message == "" {
				t.Fatalf("error %v (%T) is not a *proof.VerifyError naming its check", err, err)
			}
			return
		}
		if rep.KeyID != serviceKey.ID() || !rep.KeyTrusted || (rep.Outcome == intentd.StateSuccess) != (len(rep.Failures) == 0) {
			t.Fatalf("inconsistent report %+v", rep)
		}
	})
}

// BenchmarkVerify checks a whole bundle offline against a trusted key, the policy's
// decode and re-evaluation included.
func BenchmarkVerify(b *testing.B) {
	data := newBundle(b).encode(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := proof.Verify(data, serviceKey.PublicKey()); err != nil {
			b.Fatal(err)
		}
	}
}
