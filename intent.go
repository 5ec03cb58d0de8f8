package intentd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/google/uuid"
	"github.com/mr-tron/base58"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/strictjson"
	"github.com/intentd/intentd/policy"
)

// State is where an intent is in its life (spec part 3).
type State string

// The states. Success, failure and expired are terminal.
const (
	StateOpen       State = "open"
	StateProcessing State = "processing"
	StateSuccess    State = "success"
	StateFailure    State = "failure"
	StateExpired    State = "expired"
)

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool {
	return s == StateSuccess || s == StateFailure || s == StateExpired
}

// FailureKind tells a violated policy from evidence that did not say enough to decide,
// from evidence that could not be had and from a proof that could not be made.
type FailureKind string

// The failure kinds.
const (
	// FailureConstraints: a constraint fails on evidence that is there; the solution
	// breaks the policy.
	FailureConstraints FailureKind = "constraints"
	// FailureEvidence: every failed constraint failed because evidence it reads is
	// absent or of another type than the policy's; nothing was shown to break the
	// policy, and a person may look at the solution.
	FailureEvidence   FailureKind = "evidence"
	FailureExtraction FailureKind = "extraction"
	FailureProof      FailureKind = "proof"
)

// ClassifyFailures is the kind of failure an evaluation's failures make, and the
// evidence fields they found missing or ill-typed, sorted and each once. The kind is
// FailureEvidence when every failure names missing evidence, FailureConstraints when
// at least one failed on evidence that was there: a violation is a violation whatever
// else could not be checked, and the fields missing are named all the same. With no
// failures the kind is "" (success). The engine and an offline verifier both decide
// with it, so that they cannot disagree.
func ClassifyFailures(failures []policy.Failure) (FailureKind, []string) {
	if len(failures) == 0 {
		return "", nil
	}
	kind := FailureEvidence
	var missing []string
	for _, f := range failures {
		if len(f.MissingEvidence) == 0 {
			kind = FailureConstraints
		}
		missing = append(missing, f.MissingEvidence...)
	}
	slices.Sort(missing)
	return kind, slices.Compact(missing)
}

// Intent is the caller's intent as decoded (spec 2.2).
type Intent struct {
	ID       string
	PolicyID string
	// Attrs are the attribute values; nil when the intent carries none.
	Attrs *policy.Attrs
}

// AuthoredIntent is a stored intent with its authorship (spec 2.4), as submitted and as
// returned by GetIntent. Intent holds the intent's JSON in its JCS form, the bytes the
// signature covers.
type AuthoredIntent struct {
	Intent     json.RawMessage   `json:"intent"`
	Authorship crypto.Authorship `json:"authorship"`
}

// Proposal is an agent's proposed solution (spec 2.7).
type Proposal struct {
	Solution string `json:"solution"`
}

// Status is an intent's current status (spec 2.10 and failure_kind). Its JSON carries
// exactly the fields of its form.
type Status struct {
	State       State
	IntentID    string
	Proposal    *Proposal
	Evidence    json.RawMessage
	Reason      string
	FailureKind FailureKind
	Failures    []policy.Failure
	// EvidenceMissing names the evidence fields the policy's evaluation found absent or
	// ill-typed, sorted; written as evidence_missing on a failure when not empty.
	EvidenceMissing []string
	// Agent is the agent whose signed proposal the intent took, nil when it was
	// unsigned; written as agent on processing, success and failure.
	Agent *Agent
	// MandateID names the mandate the intent is a purchase of; written as mandate_id
	// in every state when not empty.
	MandateID string
}

// MarshalJSON writes the form of spec 2.10 that the state selects.
func (s Status) MarshalJSON() ([]byte, error) {
	return s.marshal("status", string(s.State))
}

func (s Status) marshal(discriminator, value string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	field := func(name string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + name + `":`)
		raw, err := MarshalJSON(v)
		if err != nil {
			return fmt.Errorf("marshal %s: %w", name, err)
		}
		b.Write(raw)
		return nil
	}
	if err := field(discriminator, value); err != nil {
		return nil, err
	}
	var err error
	switch s.State {
	case StateOpen:
	case StateProcessing:
		err = field("proposal", s.Proposal)
	case StateSuccess:
		err = firstErr(field("intent_id", s.IntentID), field("proposal", s.Proposal), field("evidence", evidenceOrEmpty(s.Evidence)))
	case StateFailure:
		failures := s.Failures
		if failures == nil {
			failures = []policy.Failure{}
		}
		err = firstErr(field("intent_id", s.IntentID), field("reason", s.Reason), field("failure_kind", s.FailureKind),
			field("proposal", s.Proposal), field("constraint_failures", failures))
		if err == nil && len(s.EvidenceMissing) > 0 {
			err = field("evidence_missing", s.EvidenceMissing)
		}
		if err == nil && len(s.Evidence) > 0 {
			err = field("evidence", s.Evidence)
		}
	case StateExpired:
		err = field("intent_id", s.IntentID)
	default:
		return nil, fmt.Errorf("status has unknown state %q", s.State)
	}
	if err == nil && s.Agent != nil && s.State != StateOpen && s.State != StateExpired {
		err = field("agent", s.Agent)
	}
	if err == nil && s.MandateID != "" {
		err = field("mandate_id", s.MandateID)
	}
	if err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func evidenceOrEmpty(ev json.RawMessage) json.RawMessage {
	if len(ev) == 0 {
		return json.RawMessage("{}")
	}
	return ev
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// DefaultSolutionBytes is the solution limit of a server that sets none: room for an
// order or a cart proposed whole (decisions.md, 16 KiB), not just a URL.
const DefaultSolutionBytes = 16 << 10

// MaxSolutionBytes is the longest solution the engine takes, whatever the server in
// front of it allows: 1 MiB, the default request body limit. A server's own limit
// (--max-solution) is at most this and at most its body limit, which a solution has to
// fit in anyway; the engine's cap keeps a server with a larger body limit, or a caller
// that is not a server, from storing and extracting solutions of any size.
const MaxSolutionBytes = 1 << 20

// CanonicalIntentID checks that id is a UUID in its hyphenated 36-character form and
// returns it in lower case, the form intents are stored and looked up under, so that
// the case a caller uses does not make two intents of one id.
func CanonicalIntentID(id string) (string, bool) {
	if len(id) != 36 {
		return "", false
	}
	if _, err := uuid.Parse(id); err != nil {
		return "", false
	}
	return strings.ToLower(id), true
}

// ValidPolicyID reports whether id is a Base58 SHA-256 digest.
func ValidPolicyID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	b, err := base58.Decode(id)
	return err == nil && len(b) == 32 && base58.Encode(b) == id
}

// DecodeIntent decodes the JSON of an intent strictly: exactly the fields id, policy_id and
// an optional attrs (never null), each once, an id that is a UUID, a policy id that is a
// Base58 SHA-256 digest. Errors are unprocessable and name the field.
func DecodeIntent(raw []byte) (Intent, error) {
	var id, policyID, rawAttrs jsontext.Value
	err := strictjson.Members(raw, "intent", maxIntentMembers, func(m strictjson.Member) error {
		switch m.Name {
		case "id":
			id = m.Value
		case "policy_id":
			policyID = m.Value
		case "attrs":
			rawAttrs = m.Value
		default:
			return Errorf(KindUnprocessable, CodeInvalidIntent, "intent.%s: unknown field", m.Name)
		}
		return nil
	})
	if err != nil {
		return Intent{}, objectError(err, "intent", CodeInvalidIntent)
	}
	return decodeIntentParts("intent", CodeInvalidIntent, id, policyID, rawAttrs)
}

// decodeIntentParts reads the members an intent and a mandate (what, refused with code)
// share: an id that is a UUID, a policy id that is a Base58 SHA-256 digest, and
// optional attrs, never null.
func decodeIntentParts(what, code string, id, policyID, rawAttrs jsontext.Value) (Intent, error) {
	var in Intent
	var err error
	if in.ID, err = stringField(id, what, code, "id"); err != nil {
		return Intent{}, err
	}
	if _, ok := CanonicalIntentID(in.ID); !ok {
		return Intent{}, Errorf(KindUnprocessable, code, "%s.id: %q is not a UUID (want the 36-character hyphenated form)", what, in.ID)
	}
	if in.PolicyID, err = stringField(policyID, what, code, "policy_id"); err != nil {
		return Intent{}, err
	}
	if !ValidPolicyID(in.PolicyID) {
		return Intent{}, Errorf(KindUnprocessable, code, "%s.policy_id: %q is not a Base58 SHA-256 digest", what, in.PolicyID)
	}
	if rawAttrs != nil {
		if rawAttrs.Kind() == 'n' {
			return Intent{}, Errorf(KindUnprocessable, code, "%s.attrs: must be omitted, not null", what)
		}
		attrs, err := policy.DecodeAttrs(rawAttrs)
		if err != nil {
			return Intent{}, Errorf(KindUnprocessable, code, "%s.attrs.%v", what, err)
		}
		in.Attrs = &attrs
	}
	return in, nil
}

// maxIntentMembers bounds the members of an intent read. Each member is checked as it
// is read, so the fourth one is named as an unknown field long before the bound; the
// bound is that of the other objects of a request body (see the http package).
const maxIntentMembers = 16

// objectError words a refusal of the reader of object what (an intent, a mandate, a
// revocation) for the client, with code.
func objectError(err error, what, code string) error {
	var e *strictjson.Error
	if !errors.As(err, &e) {
		return err
	}
	switch {
	case e.Fault == strictjson.NotObject:
		return Errorf(KindUnprocessable, code, "%s: must be a JSON object", what)
	case e.Fault == strictjson.Trailing:
		return Errorf(KindUnprocessable, code, "%s: invalid JSON: unexpected data after the object", what)
	case e.NotJSON():
		return Errorf(KindUnprocessable, code, "%s: invalid JSON: %s", what, e.Detail)
	}
	return Errorf(KindUnprocessable, code, "%s: %s", e.Path, e.Reason())
}

// stringField reads member name of object what as a string, refused with code.
func stringField(raw jsontext.Value, what, code, name string) (string, error) {
	if raw == nil {
		return "", Errorf(KindUnprocessable, code, "%s.%s: missing", what, name)
	}
	if raw.Kind() != '"' {
		return "", Errorf(KindUnprocessable, code, "%s.%s: must be a string", what, name)
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return "", Errorf(KindUnprocessable, code, "%s.%s: must be a string", what, name)
	}
	return string(s), nil
}

// MarshalJSON is json.Marshal without HTML escaping: reasons such as "which is not <= 3000"
// must read as written, in statuses, events and the evidence a proof digests.
// The buffer is pooled and the result copied out at its size: a snapshot or an event
// encoded into a fresh buffer grew it three or four times, and those copies were a sixth
// of what a proposal allocated.
func MarshalJSON(v any) ([]byte, error) {
	b := marshalBuffers.Get().(*bytes.Buffer)
	defer func() {
		if b.Cap() <= maxPooledMarshalBuffer {
			b.Reset()
			marshalBuffers.Put(b)
		}
	}()
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

var marshalBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledMarshalBuffer keeps a rare large value from pinning its buffer in the pool.
const maxPooledMarshalBuffer = 64 << 10
