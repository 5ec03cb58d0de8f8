package intentd

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/strictjson"
	"github.com/intentd/intentd/policy"
)

// A mandate is one signed authorization for many purchases (docs/mandates.md): a
// policy and its attrs, as an intent names them, and a deadline. Each purchase under
// it is an ordinary intent of that policy and those attrs, created and proposed to in
// one step; the policy decides each against the mandate's running totals, which the
// engine keeps, one decision of a mandate at a time.

// Mandate is a mandate as decoded.
type Mandate struct {
	ID       string
	PolicyID string
	// Attrs are the attribute values every purchase's intent carries; nil for none.
	Attrs *policy.Attrs
	// ExpiresAt is when purchases stop being taken: a purchase asked at or after it is
	// refused. Purchases taken before it end as decided.
	ExpiresAt time.Time
}

// MandateSubmission is a mandate as submitted: the mandate, its canonical form (JCS,
// the bytes its authorship signs and the form stored) and its authorship.
type MandateSubmission struct {
	Mandate    Mandate
	Canonical  []byte
	Authorship crypto.Authorship
}

// AuthoredMandate is a stored mandate with its authorship: the body of GET
// /mandates/{id}. Mandate holds the mandate's JSON in its JCS form.
type AuthoredMandate struct {
	Mandate    json.RawMessage   `json:"mandate"`
	Authorship crypto.Authorship `json:"authorship"`
}

// Revocation ends a mandate: signed by the mandate's author over the JCS bytes of
// {"mandate_id": ID}, it stops purchases for good. It carries nothing else, so one
// revocation is as good as another: sending it twice changes nothing.
type Revocation struct {
	Canonical  []byte
	Authorship crypto.Authorship
}

// Purchase is what an agent asks under a mandate: the id of the intent to make, and
// its one proposal.
type Purchase struct {
	IntentID string `json:"intent_id"`
	Solution string `json:"solution"`
}

// MandateState is where a mandate is in its life.
type MandateState string

// The states. Active takes purchases; the others take none, for good.
const (
	// MandateActive takes purchases.
	MandateActive MandateState = "active"
	// MandateExhausted: a constraint of the policy that reads nothing but the attrs and
	// the mandate's overall totals fails on them. The totals change only by a success,
	// which that constraint forbids, so it fails for good (docs/mandates.md).
	MandateExhausted MandateState = "exhausted"
	// MandateExpired: the mandate's expires_at has passed.
	MandateExpired MandateState = "expired"
	// MandateRevoked: its author revoked it.
	MandateRevoked MandateState = "revoked"
)

// MandateStatus is the body of GET /mandates/{id}/status.
type MandateStatus struct {
	Status    MandateState `json:"status"`
	MandateID string       `json:"mandate_id"`
	// Spent is the sum of the amounts of the successful purchases, Purchases their
	// number.
	Spent     int64 `json:"spent"`
	Purchases int64 `json:"purchases"`
	// Intents are the ids of the purchases taken, in the order they were taken.
	Intents   []string  `json:"intents"`
	ExpiresAt time.Time `json:"expires_at"`
	// Period is the totals of the calendar period that holds now, when the policy
	// names one.
	Period *MandatePeriod `json:"period,omitempty"`
	// RevokedAt is when the revocation was taken, on a revoked mandate.
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// MandatePeriod is a mandate's totals within one calendar period, [Start, End) in UTC.
type MandatePeriod struct {
	Unit      string    `json:"unit"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Spent     int64     `json:"spent"`
	Purchases int64     `json:"purchases"`
}

// MandateEngine is the engine of mandates, beside Engine: an engine that has none
// (a server's routes answer 404 then) does not implement it. Errors are *Error values.
type MandateEngine interface {
	// CreateMandate verifies and stores a new mandate: its policy must exist and take
	// its attrs, and its authorship verify over its canonical form. KindConflict
	// (CodeMandateExists) for a taken id.
	CreateMandate(ctx context.Context, s MandateSubmission) error
	// GetMandate returns a stored mandate as the JSON of an AuthoredMandate.
	// KindNotFound (CodeMandateNotFound).
	GetMandate(ctx context.Context, id string) (json.RawMessage, error)
	// MandateStatus returns a mandate's status. KindNotFound (CodeMandateNotFound).
	MandateStatus(ctx context.Context, id string) (MandateStatus, error)
	// Purchase creates the intent p names under the mandate and makes its one
	// proposal, in one step; from there it is an intent like any other, whose status
	// names the mandate. by is the agent's signature, as for Engine.Propose. A mandate
	// that is not active refuses it (KindConflict: CodeMandateRevoked,
	// CodeMandateExpired, CodeMandateExhausted). Asked again with the same intent id,
	// after an answer that was lost, it answers as the first time did.
	Purchase(ctx context.Context, mandateID string, p Purchase, by *AgentSignature) error
	// RevokeMandate takes the mandate author's revocation: KindForbidden
	// (CodeRevocationForbidden) when it is signed by another author.
	RevokeMandate(ctx context.Context, mandateID string, r Revocation) error
}

// MandateStore is what a Store that keeps mandates has besides Store. A mandate is one
// record, opaque to the store, replaced whole by each write; its revision, which every
// write advances, fences the writes, so that of two writers that read one revision
// exactly one writes the next: what serializes the decisions of a mandate across the
// members of a cluster.
type MandateStore interface {
	// CreateMandate stores a new mandate's record: ErrExists for a taken id.
	CreateMandate(ctx context.Context, id string, record []byte) error
	// Mandate returns a mandate's record and its revision, or ErrNotFound.
	Mandate(ctx context.Context, id string) (record []byte, rev uint64, err error)
	// UpdateMandate replaces the record of revision rev and returns the new revision:
	// ErrStale, with nothing written, when the record is at another revision, or when
	// no mandate of that id is stored (no record is at revision 0). With sync, the
	// record is durable when the call returns; without, no later than the next outcome
	// the store makes durable (Finish), and within about a second when none comes: a
	// purchase's decision is followed by its intent's outcome, which cannot be durable
	// without it, so the decision costs no write of its own. Reads see the record at
	// once either way.
	UpdateMandate(ctx context.Context, id string, record []byte, rev uint64, sync bool) (uint64, error)
}

// Error codes of mandates.
const (
	// CodeMandateNotFound: no mandate of that id (404).
	CodeMandateNotFound = "mandate_not_found"
	// CodeMandateExists: a mandate of that id is stored (409).
	CodeMandateExists = "mandate_exists"
	// CodeInvalidMandate: the mandate does not match its schema (422).
	CodeInvalidMandate = "invalid_mandate"
	// CodeInvalidPurchase: the purchase does not match its schema (422).
	CodeInvalidPurchase = "invalid_purchase"
	// CodeInvalidRevocation: the revocation does not match its schema or names another
	// mandate (422).
	CodeInvalidRevocation = "invalid_revocation"
	// CodeMandateRevoked, CodeMandateExpired, CodeMandateExhausted: the mandate takes no
	// purchase (409).
	CodeMandateRevoked   = "mandate_revoked"
	CodeMandateExpired   = "mandate_expired"
	CodeMandateExhausted = "mandate_exhausted"
	// CodeRevocationForbidden: the revocation is not signed by the mandate's author
	// (403).
	CodeRevocationForbidden = "revocation_forbidden"
	// CodeMandatePurchase: a proposal sent to a purchase's intent, which takes its
	// proposal through its mandate's purchases alone (409).
	CodeMandatePurchase = "mandate_purchase"
)

// CodeForMandateState is the code of a refused purchase of a mandate in state s.
func CodeForMandateState(s MandateState) string {
	switch s {
	case MandateRevoked:
		return CodeMandateRevoked
	case MandateExpired:
		return CodeMandateExpired
	}
	return CodeMandateExhausted
}

// maxMandateMembers bounds the members of a mandate read, as maxIntentMembers does.
const maxMandateMembers = 16

// DecodeMandate decodes the JSON of a mandate strictly: exactly the members id (a
// UUID), policy_id (a Base58 SHA-256 digest), an optional attrs (never null) and
// expires_at (RFC 3339), each once. Errors are unprocessable (CodeInvalidMandate) and
// name the member.
func DecodeMandate(raw []byte) (Mandate, error) {
	var id, policyID, rawAttrs, expires jsontext.Value
	err := strictjson.Members(raw, "mandate", maxMandateMembers, func(m strictjson.Member) error {
		switch m.Name {
		case "id":
			id = m.Value
		case "policy_id":
			policyID = m.Value
		case "attrs":
			rawAttrs = m.Value
		case "expires_at":
			expires = m.Value
		default:
			return Errorf(KindUnprocessable, CodeInvalidMandate, "mandate.%s: unknown field", m.Name)
		}
		return nil
	})
	if err != nil {
		return Mandate{}, objectError(err, "mandate", CodeInvalidMandate)
	}
	in, err := decodeIntentParts("mandate", CodeInvalidMandate, id, policyID, rawAttrs)
	if err != nil {
		return Mandate{}, err
	}
	md := Mandate{ID: in.ID, PolicyID: in.PolicyID, Attrs: in.Attrs}
	at, err := stringField(expires, "mandate", CodeInvalidMandate, "expires_at")
	if err != nil {
		return Mandate{}, err
	}
	if md.ExpiresAt, err = time.Parse(time.RFC3339, at); err != nil {
		return Mandate{}, Errorf(KindUnprocessable, CodeInvalidMandate, "mandate.expires_at: %q is not an RFC 3339 time", at)
	}
	return md, nil
}

// NewMandateSubmission makes the submission of a decoded mandate: raw is the mandate's
// JSON as received, which is canonicalized.
func NewMandateSubmission(md Mandate, raw []byte, a crypto.Authorship) (MandateSubmission, error) {
	if err := checkExactInts(md.Attrs, "mandate", CodeInvalidMandate); err != nil {
		return MandateSubmission{}, err
	}
	canon, err := crypto.Canonicalize(raw)
	if err != nil {
		return MandateSubmission{}, Errorf(KindUnprocessable, CodeInvalidMandate, "mandate: cannot be canonicalized: %v", err)
	}
	return MandateSubmission{Mandate: md, Canonical: canon, Authorship: a}, nil
}

// DecodeRevocation decodes the JSON of a revocation's object strictly: exactly the
// member mandate_id, which must be id. It returns the object's canonical form, the
// bytes its authorship signs.
func DecodeRevocation(raw []byte, id string) ([]byte, error) {
	var mid jsontext.Value
	err := strictjson.Members(raw, "revocation", maxMandateMembers, func(m strictjson.Member) error {
		if m.Name != "mandate_id" {
			return Errorf(KindUnprocessable, CodeInvalidRevocation, "revocation.%s: unknown field", m.Name)
		}
		mid = m.Value
		return nil
	})
	if err != nil {
		return nil, objectError(err, "revocation", CodeInvalidRevocation)
	}
	got, err := stringField(mid, "revocation", CodeInvalidRevocation, "mandate_id")
	if err != nil {
		return nil, err
	}
	if want, ok := CanonicalIntentID(id); !ok || !eqFoldID(got, want) {
		return nil, Errorf(KindUnprocessable, CodeInvalidRevocation, "revocation.mandate_id: %q is not the mandate of the path, %s", got, id)
	}
	canon, err := crypto.Canonicalize(raw)
	if err != nil {
		return nil, Errorf(KindUnprocessable, CodeInvalidRevocation, "revocation: cannot be canonicalized: %v", err)
	}
	return canon, nil
}

// eqFoldID reports whether got is the UUID want in any case.
func eqFoldID(got, want string) bool {
	c, ok := CanonicalIntentID(got)
	return ok && c == want
}

// SameAuthor reports whether two authorships are by the same author: both unsigned,
// or signatures of one kind under the same public key (for a multisig, the same
// signers, weights and threshold).
func SameAuthor(a, b crypto.Authorship) bool {
	if a.Unsigned() || b.Unsigned() {
		return a.Unsigned() && b.Unsigned()
	}
	ka, errA := authorKey(a)
	kb, errB := authorKey(b)
	return errA == nil && errB == nil && ka == kb
}

// authorKey is the kind of an authorship's signature and its pub_key member, in JCS.
func authorKey(a crypto.Authorship) (string, error) {
	raw, err := json.Marshal(a.Signature)
	if err != nil {
		return "", err
	}
	var sig map[string]struct {
		PubKey json.RawMessage `json:"pub_key"`
	}
	if err := json.Unmarshal(raw, &sig); err != nil {
		return "", err
	}
	for kind, s := range sig {
		canon, err := crypto.Canonicalize(s.PubKey)
		if err != nil {
			return "", err
		}
		return kind + ":" + string(canon), nil
	}
	return "", errNoSignature
}

var errNoSignature = errors.New("no signature")
