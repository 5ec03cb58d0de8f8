package crypto

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/intentd/intentd/internal/strictjson"
)

// ReceiptVersion is the version of the receipt format this package writes. Version 2
// states a failure's kind and the evidence fields its evaluation found missing, so that
// "the evidence breaks the policy" and "the evidence did not say" are both signed.
const ReceiptVersion = 2

// ReceiptVersion1 is the earlier format, without failure_kind and evidence_missing. It
// is still read and verified, so that receipts issued before version 2 stay checkable.
const ReceiptVersion1 = 1

// The outcomes a receipt can state. Expiry and failures of extraction or proof have no
// receipt: nothing was evaluated.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
)

// The failure kinds a version 2 receipt of outcome failure states: a constraint failed
// on evidence that was there, or every failed constraint failed on evidence that was
// absent or ill-typed.
const (
	FailureKindConstraints = "constraints"
	FailureKindEvidence    = "evidence"
)

// Receipt is what the service attests about one decided proposal. The parts it rests on
// (the authored intent, the proposal, the evidence) are bound by their digests, the
// policy by its id, which is itself the digest of its bytecode; see Digest.
type Receipt struct {
	Version              int    `json:"version"`
	IntentID             string `json:"intent_id"`
	PolicyID             string `json:"policy_id"`
	AuthoredIntentDigest string `json:"authored_intent_digest"`
	ProposalDigest       string `json:"proposal_digest"`
	EvidenceDigest       string `json:"evidence_digest"`
	// Outcome is OutcomeSuccess or OutcomeFailure (constraints not satisfied).
	Outcome string `json:"outcome"`
	// ConstraintFailures is empty on success and lists the failed constraints otherwise.
	ConstraintFailures []ConstraintFailure `json:"constraint_failures"`
	// FailureKind is FailureKindConstraints or FailureKindEvidence on a failure of a
	// version 2 receipt, and absent otherwise.
	FailureKind string `json:"failure_kind,omitempty"`
	// EvidenceMissing names the evidence fields the evaluation found absent or
	// ill-typed, sorted and each once; absent when there are none, and always in a
	// version 1 receipt. A failure of kind evidence names at least one.
	EvidenceMissing []string `json:"evidence_missing,omitempty"`
	// IssuedAt is written in RFC 3339 in UTC.
	IssuedAt time.Time `json:"issued_at"`
	// KeyID is KeyID of the key that signed the receipt.
	KeyID string `json:"key_id"`
	// Agent is the agent that signed the proposal, in a version 3 receipt, and absent
	// otherwise (receiptagent.go).
	Agent *ReceiptAgent `json:"agent,omitempty"`
	// Mandate is the mandate a purchase was decided under, in a version 4 receipt, and
	// absent otherwise (receiptmandate.go).
	Mandate *ReceiptMandate `json:"mandate,omitempty"`
}

// ConstraintFailure is a constraint that did not hold, as the wire's ConstraintFailure
// (the policy package's Failure has the same fields; this package imports nothing of
// the project, so it has its own).
type ConstraintFailure struct {
	Index      int    `json:"index"`
	PrettyExpr string `json:"pretty_expr"`
	Reason     string `json:"reason"`
}

// SignedReceipt is a receipt with the service's Ed25519 signature over the JCS bytes of
// the receipt object, and the public key that made it. Wire form:
// {"receipt": {...}, "signature": Base58 (64 bytes), "public_key": Base58 (32 bytes)}.
// The public key travels along for convenience only; see VerifyReceipt.
type SignedReceipt struct {
	Receipt   Receipt
	Signature []byte
	PublicKey ed25519.PublicKey
}

type signedReceiptWire struct {
	Receipt   json.RawMessage `json:"receipt"`
	Signature string          `json:"signature"`
	PublicKey string          `json:"public_key"`
}

// Digest returns Base58(SHA-256(JCS(jsonText))), the form receipts bind their parts by.
// A number beyond ±(2^53-1) is refused: JCS would round it, and two texts that say
// different things would share a digest.
func Digest(jsonText []byte) (string, error) {
	sum, err := DigestSum(jsonText)
	if err != nil {
		return "", err
	}
	return EncodeBase58(sum[:]), nil
}

// DigestSum is Digest before its Base58: the SHA-256 of the JCS bytes, for a caller
// that keeps digests in 32 bytes rather than their 44 characters.
func DigestSum(jsonText []byte) ([sha256.Size]byte, error) {
	canon, err := canonicalIntent(jsonText)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(canon), nil
}

// canonicalReceipt returns the bytes a receipt's signature covers.
func canonicalReceipt(r *Receipt) ([]byte, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("crypto: encode receipt: %w", err)
	}
	return Canonicalize(raw)
}

// SignReceipt signs r with key. It fills in r.KeyID from the key, writes IssuedAt in
// UTC and an absent failure list as an empty one, and refuses a receipt that Validate
// refuses.
func SignReceipt(key *SigningKey, r Receipt) (*SignedReceipt, error) {
	s, _, err := signReceipt(key, r)
	return s, err
}

// SignReceiptJSON is SignReceipt followed by the signed receipt's MarshalJSON, with the
// receipt canonicalized once for both: a service signs a receipt for every decision and
// stores its JSON.
func SignReceiptJSON(key *SigningKey, r Receipt) ([]byte, error) {
	s, canon, err := signReceipt(key, r)
	if err != nil {
		return nil, err
	}
	return s.encode(canon), nil
}

// signReceipt signs r and returns the signed receipt with its canonical bytes.
func signReceipt(key *SigningKey, r Receipt) (*SignedReceipt, []byte, error) {
	r.KeyID = key.ID()
	r.IssuedAt = r.IssuedAt.UTC()
	if r.ConstraintFailures == nil {
		r.ConstraintFailures = []ConstraintFailure{}
	}
	if err := r.Validate(); err != nil {
		return nil, nil, fmt.Errorf("crypto: receipt: %w", err)
	}
	canon, err := canonicalReceipt(&r)
	if err != nil {
		return nil, nil, err
	}
	return &SignedReceipt{Receipt: r, Signature: key.Sign(canon), PublicKey: key.PublicKey()}, canon, nil
}

// VerifyReceipt checks that s.Receipt is signed by pub: the receipt names pub's key id,
// and the signature verifies under pub over the receipt's JCS bytes. pub must come
// from somewhere the verifier trusts; passing s.PublicKey only shows that the receipt
// is whole, not who made it.
func VerifyReceipt(s *SignedReceipt, pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("public key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	id := KeyID(pub)
	if s.Receipt.KeyID != id {
		return fmt.Errorf("receipt names key %s, the key given is %s", s.Receipt.KeyID, id)
	}
	if len(s.Signature) != ed25519.SignatureSize {
		return fmt.Errorf("signature is %d bytes, want %d", len(s.Signature), ed25519.SignatureSize)
	}
	canon, err := canonicalReceipt(&s.Receipt)
	if err != nil {
		return err
	}
	if !verifyEd25519(pub, canon, s.Signature) {
		return fmt.Errorf("signature does not verify under key %s", id)
	}
	return nil
}

// Validate checks the receipt's values: the version, ids and digests of the right form,
// an outcome that agrees with the failure list, an issue time, a key id. Errors are
// *FieldError values naming the field.
func (r *Receipt) Validate() error {
	if r.Version != ReceiptVersion && r.Version != ReceiptVersion1 && r.Version != ReceiptVersionAgent && r.Version != ReceiptVersionMandate {
		return &FieldError{Field: "version", Reason: fmt.Sprintf("is %d, want %d, %d, %d or %d", r.Version, ReceiptVersionMandate, ReceiptVersionAgent, ReceiptVersion, ReceiptVersion1)}
	}
	if err := r.validateAgent(); err != nil {
		return err
	}
	if err := r.validateMandate(); err != nil {
		return err
	}
	if r.IntentID == "" {
		return &FieldError{Field: "intent_id", Reason: "empty"}
	}
	for _, d := range []struct{ field, value string }{
		{"policy_id", r.PolicyID},
		{"authored_intent_digest", r.AuthoredIntentDigest},
		{"proposal_digest", r.ProposalDigest},
		{"evidence_digest", r.EvidenceDigest},
		{"key_id", r.KeyID},
	} {
		if err := checkDigest(d.value); err != nil {
			return &FieldError{Field: d.field, Reason: err.Error()}
		}
	}
	switch r.Outcome {
	case OutcomeSuccess:
		if len(r.ConstraintFailures) > 0 {
			return &FieldError{Field: "constraint_failures", Reason: fmt.Sprintf("has %d entries, want none for outcome success", len(r.ConstraintFailures))}
		}
	case OutcomeFailure:
		if len(r.ConstraintFailures) == 0 {
			return &FieldError{Field: "constraint_failures", Reason: "empty, want the failed constraints for outcome failure"}
		}
	default:
		return &FieldError{Field: "outcome", Reason: fmt.Sprintf("%q, want %q or %q", r.Outcome, OutcomeSuccess, OutcomeFailure)}
	}
	if r.ConstraintFailures == nil {
		return &FieldError{Field: "constraint_failures", Reason: "missing or null, want an array"}
	}
	if err := r.validateKind(); err != nil {
		return err
	}
	if r.IssuedAt.IsZero() {
		return &FieldError{Field: "issued_at", Reason: "missing"}
	}
	if _, offset := r.IssuedAt.Zone(); offset != 0 {
		return &FieldError{Field: "issued_at", Reason: "not in UTC"}
	}
	return nil
}

// validateKind checks failure_kind and evidence_missing against the version and the
// outcome. The list is held to one spelling (sorted, each once) because the signature
// covers its order.
func (r *Receipt) validateKind() error {
	if r.Version == ReceiptVersion1 {
		if r.FailureKind != "" {
			return &FieldError{Field: "failure_kind", Reason: "present, but a version 1 receipt has none"}
		}
		if r.EvidenceMissing != nil {
			return &FieldError{Field: "evidence_missing", Reason: "present, but a version 1 receipt has none"}
		}
		return nil
	}
	switch {
	case r.Outcome == OutcomeSuccess && r.FailureKind != "":
		return &FieldError{Field: "failure_kind", Reason: fmt.Sprintf("%q, want none for outcome success", r.FailureKind)}
	case r.Outcome == OutcomeSuccess && r.EvidenceMissing != nil:
		return &FieldError{Field: "evidence_missing", Reason: "present, want none for outcome success"}
	case r.Outcome == OutcomeFailure && r.FailureKind != FailureKindConstraints && r.FailureKind != FailureKindEvidence:
		return &FieldError{Field: "failure_kind", Reason: fmt.Sprintf("%q, want %q or %q for outcome failure", r.FailureKind, FailureKindConstraints, FailureKindEvidence)}
	case r.FailureKind == FailureKindEvidence && len(r.EvidenceMissing) == 0:
		return &FieldError{Field: "evidence_missing", Reason: "empty, want the missing fields for failure_kind evidence"}
	case r.EvidenceMissing != nil && len(r.EvidenceMissing) == 0:
		return &FieldError{Field: "evidence_missing", Reason: "empty, want it left out when no field is missing"}
	}
	for i, name := range r.EvidenceMissing {
		if name == "" {
			return &FieldError{Field: fmt.Sprintf("evidence_missing[%d]", i), Reason: "empty"}
		}
		if i > 0 && name <= r.EvidenceMissing[i-1] {
			return &FieldError{Field: fmt.Sprintf("evidence_missing[%d]", i), Reason: fmt.Sprintf("%q is not after %q: want the names sorted, each once", name, r.EvidenceMissing[i-1])}
		}
	}
	return nil
}

// checkDigest accepts the Base58 of exactly 32 bytes, written canonically (no leading
// '1's beyond the zero bytes they stand for), so that one digest has one spelling.
func checkDigest(s string) error {
	b, err := DecodeBase58(s)
	if err != nil {
		return err
	}
	if len(b) != sha256.Size || EncodeBase58(b) != s {
		return fmt.Errorf("%q is not the Base58 of a 32-byte digest", s)
	}
	return nil
}

// MarshalJSON writes the wire form, the receipt object in its JCS form: the bytes the
// signature covers, for a reader to see. (An enclosing json.Marshal may still escape
// '<', '>' and '&' in it; JCS undoes that, so the signature is unaffected.)
func (s SignedReceipt) MarshalJSON() ([]byte, error) {
	canon, err := canonicalReceipt(&s.Receipt)
	if err != nil {
		return nil, err
	}
	return s.encode(canon), nil
}

// encode writes the wire form around the receipt's canonical bytes.
func (s SignedReceipt) encode(canon []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(canon) + 200)
	b.WriteString(`{"receipt":`)
	b.Write(canon)
	b.WriteString(`,"signature":`)
	writeBase58(&b, s.Signature)
	b.WriteString(`,"public_key":`)
	writeBase58(&b, s.PublicKey)
	b.WriteByte('}')
	return b.Bytes()
}

// UnmarshalJSON decodes with DecodeSignedReceipt.
func (s *SignedReceipt) UnmarshalJSON(data []byte) error {
	got, err := DecodeSignedReceipt(data)
	if err != nil {
		return err
	}
	*s = *got
	return nil
}

// DecodeSignedReceipt decodes the wire form strictly: no unknown or duplicate keys,
// every field present, values Validate accepts, a 64-byte signature and a 32-byte key.
// The receipt object must also be exactly what this package writes for the values it
// holds (JCS of its own encoding), so that the values decoded are the values signed:
// a receipt re-spelled (a time with an offset, a number with an exponent) is refused
// rather than verified against bytes that differ from what it says. Errors are
// *FieldError values with paths such as "receipt.outcome". The signature is not checked
// here; that is VerifyReceipt's work.
func DecodeSignedReceipt(data []byte) (*SignedReceipt, error) {
	// Canonicalize refuses duplicate keys, which encoding/json would let through with
	// the last value winning.
	if _, err := Canonicalize(data); err != nil {
		return nil, &FieldError{Reason: "not valid JSON: " + err.Error()}
	}
	var w signedReceiptWire
	if err := strictjson.Unmarshal(data, &w); err != nil {
		return nil, &FieldError{Reason: err.Error()}
	}
	switch {
	case w.Receipt == nil || bytes.Equal(w.Receipt, []byte("null")):
		return nil, &FieldError{Field: "receipt", Reason: "missing"}
	case w.Signature == "":
		return nil, &FieldError{Field: "signature", Reason: "missing"}
	case w.PublicKey == "":
		return nil, &FieldError{Field: "public_key", Reason: "missing"}
	}
	var s SignedReceipt
	if err := strictjson.Unmarshal(w.Receipt, &s.Receipt); err != nil {
		return nil, &FieldError{Field: "receipt", Reason: err.Error()}
	}
	if err := s.Receipt.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, &FieldError{Field: join("receipt", fe.Field), Reason: fe.Reason}
		}
		return nil, err
	}
	got, err := Canonicalize(w.Receipt)
	if err != nil {
		return nil, &FieldError{Field: "receipt", Reason: err.Error()}
	}
	want, err := canonicalReceipt(&s.Receipt)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(got, want) {
		return nil, &FieldError{Field: "receipt", Reason: "not in the form the service writes (a value is spelled differently)"}
	}
	sig, err := decodeKey(w.Signature, ed25519.SignatureSize)
	if err != nil {
		return nil, &FieldError{Field: "signature", Reason: err.Error()}
	}
	pub, err := decodeKey(w.PublicKey, ed25519.PublicKeySize)
	if err != nil {
		return nil, &FieldError{Field: "public_key", Reason: err.Error()}
	}
	s.Signature, s.PublicKey = sig, pub
	return &s, nil
}
