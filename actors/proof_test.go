package actors

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/proof"
)

// testServiceKey is the service's signing key in these tests; otherServiceKey stands for
// any other key.
var testServiceKey, otherServiceKey = mustSigningKey("service"), mustSigningKey("other")

func mustSigningKey(label string) *crypto.SigningKey {
	seed := sha256.Sum256([]byte("proof test " + label))
	k, err := crypto.NewSigningKey(seed[:])
	if err != nil {
		panic(err)
	}
	return k
}

func withProver(c *Config) { c.Prover = ReceiptProver{Key: testServiceKey} }

// failingProver stands for a proof that cannot be made.
type failingProver struct{}

func (failingProver) Prove(context.Context, ProofInput) (json.RawMessage, error) {
	return nil, errors.New("the signer is unavailable")
}

// garbledProver answers a receipt cut short, as a faulty signer might.
type garbledProver struct{}

func (garbledProver) Prove(context.Context, ProofInput) (json.RawMessage, error) {
	return json.RawMessage(`{"receipt":`), nil
}

// decide submits an intent, proposes solution and waits for the terminal state.
func (h *harness) decide(size string, max int, solution string, want intentd.State) string {
	h.t.Helper()
	id := h.submit(size, max)
	if err := proposeTo(h, id, solution); err != nil {
		h.t.Fatal(err)
	}
	h.waitState(id, want)
	return id
}

// bundleJSON fetches an intent's proof bundle as the HTTP layer would send it.
func (h *harness) bundleJSON(id string) []byte {
	h.t.Helper()
	b, err := h.e.Proof(context.Background(), id)
	if err != nil {
		h.t.Fatalf("Proof(%s): %v", id, err)
	}
	data, err := json.Marshal(b)
	if err != nil {
		h.t.Fatal(err)
	}
	return data
}

// TestProof makes the proof of intents decided each way, and asks for the proof of
// intents that have none.
func TestProof(t *testing.T) {
	for _, tt := range slices.Concat(outcomeProofCases(), bundleProofCases(), unprovedCases()) {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, newHarness(t, tt.cfg))
		})
	}
}

// outcomeProofCases are intents decided each way, with a proof that verifies and reports
// the outcome.
func outcomeProofCases() []harnessCase {
	ctx := context.Background()
	return []harnessCase{
		{"success verifies", withProver, func(t *testing.T, h *harness) {
			id := h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
			rep, err := proof.Verify(h.bundleJSON(id), testServiceKey.PublicKey())
			if err != nil {
				t.Fatalf("VerifyProof: %v", err)
			}
			want := &proof.VerifyReport{
				IntentID: id, PolicyID: h.policy, Outcome: intentd.StateSuccess, Failures: []policy.Failure{},
				IssuedAt: rep.IssuedAt, KeyID: testServiceKey.ID(), PublicKey: crypto.EncodeBase58(testServiceKey.PublicKey()),
				KeyTrusted: true, Authorship: "Ed25519", AuthorKey: crypto.EncodeBase58(h.key.Public().(ed25519.PublicKey)), Notes: rep.Notes,
			}
			if !reflect.DeepEqual(rep, want) {
				t.Fatalf("report:\n got %+v\nwant %+v", rep, want)
			}
			if rep.IssuedAt.IsZero() || time.Since(rep.IssuedAt) > time.Minute {
				t.Errorf("issued_at %v, want about now", rep.IssuedAt)
			}
		}},
		{"constraint failure verifies with its failures", withProver, func(t *testing.T, h *harness) {
			id := h.decide("M", 2500, "L-dear", intentd.StateFailure)
			rep, err := proof.Verify(h.bundleJSON(id), testServiceKey.PublicKey())
			if err != nil {
				t.Fatalf("VerifyProof: %v", err)
			}
			if s := h.status(id); rep.Outcome != intentd.StateFailure || rep.FailureKind != intentd.FailureConstraints ||
				!reflect.DeepEqual(rep.Failures, s.Failures) || len(s.Failures) != 2 {
				t.Fatalf("report outcome %s failures %+v, want failure with the status's %+v", rep.Outcome, rep.Failures, s.Failures)
			}
		}},
		{"evidence failure has a receipt that states its kind and verifies", withProver, func(t *testing.T, h *harness) {
			id := h.decide("M", 2500, "M-no-size", intentd.StateFailure)
			b, err := h.e.Proof(ctx, id)
			if err != nil {
				t.Fatalf("Proof: %v", err)
			}
			r := b.Receipt.Receipt
			if r.Version != crypto.ReceiptVersion || r.Outcome != crypto.OutcomeFailure || r.FailureKind != crypto.FailureKindEvidence ||
				!reflect.DeepEqual(r.EvidenceMissing, []string{"size"}) {
				t.Fatalf("receipt %+v, want version %d, failure of kind evidence naming size", r, crypto.ReceiptVersion)
			}
			rep, err := proof.Verify(h.bundleJSON(id), testServiceKey.PublicKey())
			if err != nil {
				t.Fatalf("VerifyProof: %v", err)
			}
			if rep.FailureKind != intentd.FailureEvidence || !reflect.DeepEqual(rep.EvidenceMissing, []string{"size"}) {
				t.Fatalf("report kind %s missing %q, want evidence [size]", rep.FailureKind, rep.EvidenceMissing)
			}
		}},
		{"a violation beside missing evidence has a receipt of kind constraints", withProver, func(t *testing.T, h *harness) {
			id := h.decide("M", 2500, "L-no-price", intentd.StateFailure)
			rep, err := proof.Verify(h.bundleJSON(id), testServiceKey.PublicKey())
			if err != nil {
				t.Fatalf("VerifyProof: %v", err)
			}
			if rep.FailureKind != intentd.FailureConstraints || !reflect.DeepEqual(rep.EvidenceMissing, []string{"price_cents"}) {
				t.Fatalf("report kind %s missing %q, want constraints [price_cents]", rep.FailureKind, rep.EvidenceMissing)
			}
		}},
	}
}

// bundleProofCases are the bundle as served and kept, and what Verify reports of its
// authorship and key.
func bundleProofCases() []harnessCase {
	ctx := context.Background()
	return []harnessCase{
		{"the bundle carries the parts as stored", withProver, func(t *testing.T, h *harness) {
			id := h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
			b, err := h.e.Proof(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			authored, _ := h.e.GetIntent(ctx, id)
			s := h.status(id)
			p, _ := h.e.Policy(ctx, h.policy)
			if !bytes.Equal(b.AuthoredIntent, authored) || b.Proposal != *s.Proposal || !bytes.Equal(b.Evidence, s.Evidence) ||
				!bytes.Equal(b.PolicyBytecode, p.Bytecode()) {
				t.Fatalf("bundle %+v does not hold the stored parts", b)
			}
			data := h.bundleJSON(id)
			var wire map[string]json.RawMessage
			if err := json.Unmarshal(data, &wire); err != nil {
				t.Fatal(err)
			}
			if got := string(wire["policy_bytecode"]); got != `"`+base64.StdEncoding.EncodeToString(p.Bytecode())+`"` {
				t.Errorf("policy_bytecode %s, want standard Base64", got)
			}
			var back intentd.ProofBundle
			if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(&back, b) {
				t.Fatalf("the bundle does not decode back: %v\n got %+v\nwant %+v", err, back, b)
			}
		}},
		{"a proof survives a restart and a policy delete", withProver, func(t *testing.T, h *harness) {
			id := h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
			before := h.bundleJSON(id)
			if err := h.e.DeletePolicy(ctx, h.policy); err != nil {
				t.Fatal(err)
			}
			h.restart()
			after := h.bundleJSON(id)
			if !bytes.Equal(before, after) {
				t.Fatalf("bundle changed:\nbefore %s\n after %s", before, after)
			}
			if _, err := proof.Verify(after, testServiceKey.PublicKey()); err != nil {
				t.Fatalf("VerifyProof after the policy's delete: %v", err)
			}
		}},
		{"unsigned intent verifies and says so", func(c *Config) { withProver(c); c.Verify.AllowUnsigned = true }, func(t *testing.T, h *harness) {
			id := uuid.NewString()
			if err := submitRaw(ctx, h.e, h.intentJSON(id, "M", 2500), crypto.Authorship{}); err != nil {
				t.Fatal(err)
			}
			proposeTo(h, id, "M-cheap")
			h.waitState(id, intentd.StateSuccess)
			rep, err := proof.Verify(h.bundleJSON(id), testServiceKey.PublicKey())
			if err != nil {
				t.Fatalf("VerifyProof: %v", err)
			}
			if rep.Authorship != "Unsigned" || rep.AuthorKey != "" || !strings.Contains(strings.Join(rep.Notes, "\n"), "unsigned") {
				t.Fatalf("report %+v, want it to say the intent is unsigned", rep)
			}
		}},
		{"without a trusted key the bundle's key is used and the report says so", withProver, func(t *testing.T, h *harness) {
			id := h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
			rep, err := proof.Verify(h.bundleJSON(id), nil)
			if err != nil {
				t.Fatalf("VerifyProof: %v", err)
			}
			if rep.KeyTrusted || rep.KeyID != testServiceKey.ID() || !strings.Contains(strings.Join(rep.Notes, "\n"), "no trusted key") {
				t.Fatalf("report %+v, want an untrusted key %s and a note", rep, testServiceKey.ID())
			}
		}},
	}
}

// unprovedCases are intents with no proof, yet or ever, and the code that says which.
func unprovedCases() []harnessCase {
	ctx := context.Background()
	return []harnessCase{
		{"no intent", withProver, func(t *testing.T, h *harness) {
			_, err := h.e.Proof(ctx, uuid.NewString())
			wantCode(t, err, intentd.KindNotFound, intentd.CodeIntentNotFound)
			_, err = h.e.Proof(ctx, "not-a-uuid")
			wantCode(t, err, intentd.KindNotFound, intentd.CodeIntentNotFound)
		}},
		{"open is not ready", withProver, func(t *testing.T, h *harness) {
			_, err := h.e.Proof(ctx, h.submit("M", 2500))
			wantCode(t, err, intentd.KindNotFound, intentd.CodeProofNotReady)
		}},
		{"processing is not ready, then ready", withProver, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			proposeTo(h, id, "block:M-cheap")
			<-h.ext.started
			_, err := h.e.Proof(ctx, id)
			wantCode(t, err, intentd.KindNotFound, intentd.CodeProofNotReady)
			close(h.ext.release)
			h.waitState(id, intentd.StateSuccess)
			if _, err := h.e.Proof(ctx, id); err != nil {
				t.Fatalf("Proof after success: %v", err)
			}
		}},
		{"expired has none", func(c *Config) { withProver(c); c.IntentTTL = 20 * time.Millisecond; c.ExpiryInterval = time.Hour }, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			time.Sleep(30 * time.Millisecond)
			// Past its deadline but not yet swept: Proof expires it, as Status does.
			_, err := h.e.Proof(ctx, id)
			wantCode(t, err, intentd.KindNotFound, intentd.CodeNoProof)
			if s := h.status(id); s.State != intentd.StateExpired {
				t.Fatalf("state %s, want expired", s.State)
			}
		}},
		{"extraction failure has none", withProver, func(t *testing.T, h *harness) {
			_, err := h.e.Proof(ctx, h.decide("M", 2500, "fail:x", intentd.StateFailure))
			wantCode(t, err, intentd.KindNotFound, intentd.CodeNoProof)
		}},
		{"proof failure has none", func(c *Config) { c.Prover = failingProver{} }, func(t *testing.T, h *harness) {
			id := h.decide("M", 2500, "M-cheap", intentd.StateFailure)
			if s := h.status(id); s.FailureKind != intentd.FailureProof {
				t.Fatalf("failure kind %s, want proof", s.FailureKind)
			}
			_, err := h.e.Proof(ctx, id)
			wantCode(t, err, intentd.KindNotFound, intentd.CodeNoProof)
		}},
		{"a receipt that is not JSON is a proof failure, and the intent stays readable", func(c *Config) { c.Prover = garbledProver{} }, func(t *testing.T, h *harness) {
			id := h.decide("M", 2500, "M-cheap", intentd.StateFailure)
			if s := h.status(id); s.FailureKind != intentd.FailureProof {
				t.Fatalf("failure kind %s, want proof", s.FailureKind)
			}
			if _, err := h.e.GetIntent(ctx, id); err != nil {
				t.Fatalf("the intent after a garbled receipt: %v", err)
			}
			_, err := h.e.Proof(ctx, id)
			wantCode(t, err, intentd.KindNotFound, intentd.CodeNoProof)
		}},
		{"no signing key, no receipt", nil, func(t *testing.T, h *harness) {
			_, err := h.e.Proof(ctx, h.decide("M", 2500, "M-cheap", intentd.StateSuccess))
			wantCode(t, err, intentd.KindNotFound, intentd.CodeNoProof)
		}},
	}
}

// bundleParts is a proof bundle taken apart, for tests to change one part of.
type bundleParts map[string]json.RawMessage

func parseBundle(t *testing.T, data []byte) bundleParts {
	t.Helper()
	var p bundleParts
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p bundleParts) encode(t *testing.T) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]json.RawMessage(p))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// replace replaces the one occurrence of old in a part.
func (p bundleParts) replace(t *testing.T, part, old, new string) {
	t.Helper()
	if n := bytes.Count(p[part], []byte(old)); n != 1 {
		t.Fatalf("%s holds %q %d times, want once: %s", part, old, n, p[part])
	}
	p[part] = bytes.Replace(p[part], []byte(old), []byte(new), 1)
}

func (p bundleParts) bytecode(t *testing.T) []byte {
	t.Helper()
	var b []byte
	if err := json.Unmarshal(p["policy_bytecode"], &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func (p bundleParts) setBytecode(t *testing.T, b []byte) {
	t.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	p["policy_bytecode"] = raw
}

// resign makes the receipt again from the bundle's parts as they now are, changed by
// edit, and signs it with key: what a service that lies, or has a bug, would send. It
// reaches the checks behind the signature and the digests.
func (p bundleParts) resign(t *testing.T, key *crypto.SigningKey, edit func(*crypto.Receipt)) {
	t.Helper()
	s, err := crypto.DecodeSignedReceipt(p["receipt"])
	if err != nil {
		t.Fatal(err)
	}
	r := s.Receipt
	for _, d := range []struct {
		part string
		to   *string
	}{{"authored_intent", &r.AuthoredIntentDigest}, {"proposal", &r.ProposalDigest}, {"evidence", &r.EvidenceDigest}} {
		if *d.to, err = crypto.Digest(p[d.part]); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(p.bytecode(t))
	r.PolicyID = crypto.EncodeBase58(sum[:])
	if edit != nil {
		edit(&r)
	}
	again, err := crypto.SignReceipt(key, r)
	if err != nil {
		t.Fatal(err)
	}
	if p["receipt"], err = again.MarshalJSON(); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyProofDetectsChanges(t *testing.T) {
	h := newHarness(t, withProver)
	// M wanted for at most 2500; L for 9999 fails both constraints.
	base := h.bundleJSON(h.decide("M", 2500, "L-dear", intentd.StateFailure))
	otherPolicy, err := policy.Compile(strings.Replace(testPolicy, "test_tshirt", "other_tshirt", 1))
	if err != nil {
		t.Fatal(err)
	}
	service := testServiceKey.PublicKey()

	tests := slices.Concat(madeChanges(service), signedChanges(service, h.policy, otherPolicy), shapeChanges(service))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, base) })
	}

	t.Run("raw text", func(t *testing.T) {
		for _, tt := range []struct{ name, data string }{
			{"not JSON", `{"receipt":`},
			{"duplicate key", strings.Replace(string(base), `"evidence":`, `"evidence":{"size":"M","price_cents":1999},"evidence":`, 1)},
			{"data after the bundle", string(base) + ` {}`},
			{"null", `null`},
		} {
			_, err := proof.Verify([]byte(tt.data), service)
			var ve *proof.VerifyError
			if !errors.As(err, &ve) || ve.Check != proof.CheckBundle {
				t.Errorf("%s: %v, want a bundle error", tt.name, err)
			}
		}
	})

	t.Run("re-signed by another key, no trusted key", func(t *testing.T) {
		// Whole and consistent, so it verifies; only a trusted key tells it apart.
		p := parseBundle(t, base)
		p.resign(t, otherServiceKey, nil)
		rep, err := proof.Verify(p.encode(t), nil)
		if err != nil {
			t.Fatalf("VerifyProof: %v", err)
		}
		if rep.KeyTrusted || rep.KeyID != otherServiceKey.ID() {
			t.Fatalf("report %+v, want the other key, untrusted", rep)
		}
	})
}

// bundleChange is a bundle changed by change, or left whole when change is nil, and the
// check Verify must refuse it at with a message holding wantMsg, given trusted as the
// service's key (nil: no trusted key).
type bundleChange struct {
	name      string
	trusted   []byte
	change    func(t *testing.T, p bundleParts)
	wantCheck string
	wantMsg   string
}

// check changes base as tt says and wants Verify to refuse the result as tt says.
func (tt bundleChange) check(t *testing.T, base []byte) {
	data := base
	if tt.change != nil {
		p := parseBundle(t, base)
		tt.change(t, p)
		data = p.encode(t)
	}
	rep, err := proof.Verify(data, tt.trusted)
	if err == nil {
		t.Fatalf("VerifyProof succeeded (%+v), want %s: %s", rep, tt.wantCheck, tt.wantMsg)
	}
	var ve *proof.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("VerifyProof: %v (%T), want a *proof.VerifyError", err, err)
	}
	if ve.Check != tt.wantCheck || !strings.Contains(ve.Message, tt.wantMsg) {
		t.Fatalf("VerifyProof: check %s: %q\nwant check %s with %q", ve.Check, ve.Message, tt.wantCheck, tt.wantMsg)
	}
}

// madeChanges are changes to a bundle as the service made it, with service its key.
func madeChanges(service []byte) []bundleChange {
	return []bundleChange{
		{"a byte of the evidence", service, func(t *testing.T, p bundleParts) {
			p.replace(t, "evidence", "9999", "9998")
		}, proof.CheckEvidenceDigest, "evidence digest does not match"},
		{"the solution", service, func(t *testing.T, p bundleParts) {
			p.replace(t, "proposal", "L-dear", "M-cheap")
		}, proof.CheckProposalDigest, "proposal digest does not match"},
		{"an attribute", service, func(t *testing.T, p bundleParts) {
			p.replace(t, "authored_intent", `{"Int":2500}`, `{"Int":9999}`)
		}, proof.CheckAuthoredIntentDigest, "authored intent digest does not match"},
		{"the authorship", service, func(t *testing.T, p bundleParts) {
			p["authored_intent"] = []byte(`{"intent":` + string(intentOf(t, p)) + `,"authorship":"Unsigned"}`)
		}, proof.CheckAuthoredIntentDigest, "authored intent digest does not match"},
		{"the outcome", service, func(t *testing.T, p bundleParts) {
			var s crypto.SignedReceipt
			if err := json.Unmarshal(p["receipt"], &s); err != nil {
				t.Fatal(err)
			}
			s.Receipt.Outcome, s.Receipt.ConstraintFailures, s.Receipt.FailureKind = crypto.OutcomeSuccess, []crypto.ConstraintFailure{}, ""
			p["receipt"], _ = s.MarshalJSON()
		}, proof.CheckSignature, "signature does not verify under key " + testServiceKey.ID()},
		{"the outcome alone", service, func(t *testing.T, p bundleParts) {
			p.replace(t, "receipt", `"outcome":"failure"`, `"outcome":"success"`)
		}, proof.CheckBundle, "receipt.constraint_failures: has 2 entries, want none for outcome success"},
		{"a failure's reason", service, func(t *testing.T, p bundleParts) {
			p.replace(t, "receipt", `price_cents = 9999,`, `price_cents = 9998,`)
		}, proof.CheckSignature, "signature does not verify"},
		{"a byte of the bytecode", service, func(t *testing.T, p bundleParts) {
			b := p.bytecode(t)
			b[len(b)/2] ^= 1
			p.setBytecode(t, b)
		}, proof.CheckPolicy, "policy bytecode hashes to"},
		{"a bit of the signature", service, func(t *testing.T, p bundleParts) {
			var s crypto.SignedReceipt
			if err := json.Unmarshal(p["receipt"], &s); err != nil {
				t.Fatal(err)
			}
			s.Signature[10] ^= 4
			p["receipt"], _ = s.MarshalJSON()
		}, proof.CheckSignature, "signature does not verify"},
		{"another trusted key", otherServiceKey.PublicKey(), nil,
			proof.CheckKey, "receipt is signed by key " + testServiceKey.ID() + ", not by the trusted key " + otherServiceKey.ID()},
		{"re-signed by another key", service, func(t *testing.T, p bundleParts) {
			p.resign(t, otherServiceKey, nil)
		}, proof.CheckKey, "receipt is signed by key " + otherServiceKey.ID() + ", not by the trusted key " + testServiceKey.ID()},
		{"the public key swapped, no trusted key", nil, func(t *testing.T, p bundleParts) {
			p.replace(t, "receipt", crypto.EncodeBase58(service), crypto.EncodeBase58(otherServiceKey.PublicKey()))
		}, proof.CheckKey, "receipt names key " + testServiceKey.ID() + ", but the bundle's public key is " + otherServiceKey.ID()},
		{"a trusted key of 31 bytes", service[:31], nil, proof.CheckKey, "trusted key is 31 bytes"},
	}
}

// signedChanges are bundles signed by the service key that say something else than the
// parts: the checks behind the signature. policyID is the intent's policy; otherPolicy
// is another.
func signedChanges(service []byte, policyID string, otherPolicy *policy.Policy) []bundleChange {
	return []bundleChange{
		{"evidence that satisfies the policy, receipt says failure", service, func(t *testing.T, p bundleParts) {
			p["evidence"] = []byte(`{"size":"M","price_cents":1999}`)
			p.resign(t, testServiceKey, nil)
		}, proof.CheckEvaluation, "re-evaluation gives success, the receipt says failure"},
		{"receipt says success", service, func(t *testing.T, p bundleParts) {
			p.resign(t, testServiceKey, func(r *crypto.Receipt) {
				r.Outcome, r.ConstraintFailures, r.FailureKind = crypto.OutcomeSuccess, nil, ""
			})
		}, proof.CheckEvaluation, "re-evaluation gives failure, the receipt says success"},
		{"a failure's reason, signed", service, func(t *testing.T, p bundleParts) {
			p.resign(t, testServiceKey, func(r *crypto.Receipt) { r.ConstraintFailures[1].Reason = "too dear" })
		}, proof.CheckEvaluation, `constraint failure 1: re-evaluation gives reason "evidence.price_cents = 9999, which is not <= parameters.max_price_cents = 2500", the receipt says "too dear"`},
		{"a failure's expression, signed", service, func(t *testing.T, p bundleParts) {
			p.resign(t, testServiceKey, func(r *crypto.Receipt) { r.ConstraintFailures[0].PrettyExpr = "true" })
		}, proof.CheckEvaluation, "constraint failure 0: re-evaluation gives pretty_expr"},
		{"a failure's index, signed", service, func(t *testing.T, p bundleParts) {
			p.resign(t, testServiceKey, func(r *crypto.Receipt) { r.ConstraintFailures[1].Index = 7 })
		}, proof.CheckEvaluation, "constraint failure 1: re-evaluation gives index 1, the receipt says 7"},
		{"a failure dropped, signed", service, func(t *testing.T, p bundleParts) {
			p.resign(t, testServiceKey, func(r *crypto.Receipt) { r.ConstraintFailures = r.ConstraintFailures[:1] })
		}, proof.CheckEvaluation, "re-evaluation gives 2 constraint failures, the receipt lists 1"},
		{"an attribute, signed", service, func(t *testing.T, p bundleParts) {
			p.replace(t, "authored_intent", `{"Int":2500}`, `{"Int":9999}`)
			p.resign(t, testServiceKey, nil)
		}, proof.CheckAuthorship, "intent authorship does not verify"},
		{"another intent id, signed", service, func(t *testing.T, p bundleParts) {
			p.resign(t, testServiceKey, func(r *crypto.Receipt) { r.IntentID = uuid.NewString() })
		}, proof.CheckIntent, "the authored intent's id is"},
		{"another policy's bytecode, signed", service, func(t *testing.T, p bundleParts) {
			p.setBytecode(t, otherPolicy.Bytecode())
			p.resign(t, testServiceKey, nil)
		}, proof.CheckIntent, "the authored intent names policy " + policyID + ", the receipt names " + otherPolicy.ID()},
		{"bytecode that does not load, signed", service, func(t *testing.T, p bundleParts) {
			p.setBytecode(t, []byte("not bytecode"))
			p.resign(t, testServiceKey, nil)
		}, proof.CheckPolicy, "policy bytecode does not load"},
		{"evidence that is not an object, signed", service, func(t *testing.T, p bundleParts) {
			p["evidence"] = []byte(`["M",9999]`)
			p.resign(t, testServiceKey, nil)
		}, proof.CheckBundle, "evidence is not a JSON object"},
		{"evidence with a number JCS would round", service, func(t *testing.T, p bundleParts) {
			p.replace(t, "evidence", "9999", "9007199254740993")
		}, proof.CheckEvidenceDigest, "evidence digest cannot be computed"},
	}
}

// shapeChanges are bundles of the wrong shape.
func shapeChanges(service []byte) []bundleChange {
	return []bundleChange{
		{"an unknown field", service, func(t *testing.T, p bundleParts) {
			p["note"] = []byte(`"trust me"`)
		}, proof.CheckBundle, `unknown field "note"`},
		{"no evidence", service, func(t *testing.T, p bundleParts) { delete(p, "evidence") }, proof.CheckBundle, "evidence is missing"},
		{"no bytecode", service, func(t *testing.T, p bundleParts) { delete(p, "policy_bytecode") }, proof.CheckBundle, "policy_bytecode is missing"},
		{"bytecode not Base64", service, func(t *testing.T, p bundleParts) { p["policy_bytecode"] = []byte(`"***"`) }, proof.CheckBundle, "not valid"},
		{"no proposal solution", service, func(t *testing.T, p bundleParts) {
			p["proposal"] = []byte(`{"solution":""}`)
			p.resign(t, testServiceKey, nil)
		}, proof.CheckBundle, "proposal is not"},
	}
}

func intentOf(t *testing.T, p bundleParts) json.RawMessage {
	t.Helper()
	var a struct{ Intent json.RawMessage }
	if err := json.Unmarshal(p["authored_intent"], &a); err != nil {
		t.Fatal(err)
	}
	return a.Intent
}

// typicalProofInput is a constraint failure of the test policy, built without an engine.
func typicalProofInput(tb testing.TB) ProofInput {
	tb.Helper()
	p, err := policy.Compile(testPolicy)
	if err != nil {
		tb.Fatal(err)
	}
	raw := []byte(`{"id":"` + uuid.NewString() + `","policy_id":"` + p.ID() +
		`","attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":2500}}}}`)
	auth, err := crypto.SignEd25519(testAuthorKey, raw)
	if err != nil {
		tb.Fatal(err)
	}
	canon, _ := crypto.Canonicalize(raw)
	authored, err := json.Marshal(intentd.AuthoredIntent{Intent: canon, Authorship: auth})
	if err != nil {
		tb.Fatal(err)
	}
	in, err := intentd.DecodeIntent(raw)
	if err != nil {
		tb.Fatal(err)
	}
	ev := map[string]any{"size": "L", "price_cents": json.Number("9999")}
	evJSON, _ := json.Marshal(ev)
	return ProofInput{
		IntentID: in.ID, PolicyID: p.ID(), Authored: authored, Proposal: intentd.Proposal{Solution: "https://shop.example/p/tee-l"},
		Evidence: evJSON, Outcome: intentd.StateFailure, Failures: p.Evaluate(*in.Attrs, ev), At: time.Now(),
	}
}

// testAuthorKey signs the intents built without an engine.
var testAuthorKey = func() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("proof test author"))
	return ed25519.NewKeyFromSeed(seed[:])
}()

func TestReceiptProverRefuses(t *testing.T) {
	tests := []struct {
		name    string
		prover  ReceiptProver
		change  func(*ProofInput)
		wantErr string
	}{
		{"no key", ReceiptProver{}, nil, "no signing key"},
		{"an outcome with no receipt", ReceiptProver{Key: testServiceKey}, func(in *ProofInput) { in.Outcome = intentd.StateExpired }, "outcome"},
		{"success with failures", ReceiptProver{Key: testServiceKey}, func(in *ProofInput) { in.Outcome = intentd.StateSuccess }, "constraint_failures"},
		{"evidence JCS would round", ReceiptProver{Key: testServiceKey}, func(in *ProofInput) {
			in.Evidence = []byte(`{"size":"L","price_cents":9007199254740993}`)
		}, "digest of the evidence"},
		{"evidence that is not JSON", ReceiptProver{Key: testServiceKey}, func(in *ProofInput) { in.Evidence = []byte(`{`) }, "digest of the evidence"},
		{"no time", ReceiptProver{Key: testServiceKey}, func(in *ProofInput) { in.At = time.Time{} }, "issued_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := typicalProofInput(t)
			if tt.change != nil {
				tt.change(&in)
			}
			_, err := tt.prover.Prove(context.Background(), in)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Prove: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// BenchmarkReceiptProver is the proof step of a constraint failure: three digests, the
// receipt's JCS and an Ed25519 signature.
func BenchmarkReceiptProver(b *testing.B) {
	in := typicalProofInput(b)
	prover := ReceiptProver{Key: testServiceKey}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := prover.Prove(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReceiptIsTheProofs checks that Receipt, the transparency log's cheap read of a
// decided intent's receipt, gives the receipt its proof bundle holds, and nothing for
// an outcome without one.
func TestReceiptIsTheProofs(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name, solution string
		cfg            func(*Config)
		state          intentd.State
		receipt        bool
	}{
		{"success", "M-cheap", withProver, intentd.StateSuccess, true},
		{"constraint failure", "L-dear", withProver, intentd.StateFailure, true},
		{"no signing key", "M-cheap", nil, intentd.StateSuccess, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.cfg)
			id := h.decide("M", 2500, tt.solution, tt.state)
			raw, err := h.e.Receipt(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.receipt {
				if raw != nil {
					t.Fatalf("Receipt of an outcome without one: %s", raw)
				}
				return
			}
			b, err := h.e.Proof(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := b.Receipt.MarshalJSON()
			if string(raw) != string(want) {
				t.Fatalf("Receipt = %s\nthe proof's receipt is %s", raw, want)
			}
		})
	}
	h := newHarness(t, withProver)
	_, err := h.e.Receipt(ctx, h.submit("M", 2500))
	wantCode(t, err, intentd.KindNotFound, intentd.CodeProofNotReady)
}
