package actors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/strictjson"
	"github.com/intentd/intentd/policy"
)

// setAuthored builds the stored AuthoredIntent around the canonical intent without
// re-reading it: encoding/json would validate and compact bytes that JCS has just written,
// and the authorship's own compact encoding.
func (s *snapshot) setAuthored(canon []byte, a crypto.Authorship) error {
	auth, err := a.MarshalJSON()
	if err != nil {
		return err
	}
	s.joinAuthored(canon, auth)
	return nil
}

// joinAuthored sets the authored intent from its two parts, and remembers where they
// are in it.
func (s *snapshot) joinAuthored(intent, authorship []byte) {
	s.Authored = joinAuthored(intent, authorship)
	s.intentLen = len(intent)
}

// authoredParts returns the intent and the authorship of the authored intent: from
// where joinAuthored put them, or cut from a snapshot read as JSON.
func (s *snapshot) authoredParts() (intent, authorship []byte, ok bool) {
	start := len(authoredOpen)
	if n := s.intentLen; n > 0 && len(s.Authored) > start+n+len(authoredAfter) {
		return s.Authored[start : start+n], s.Authored[start+n+len(authoredAfter) : len(s.Authored)-1], true
	}
	return cutAuthored(s.Authored)
}

// The fixed parts of an authored intent as joinAuthored writes it.
const (
	authoredOpen  = `{"intent":`
	authoredAfter = `,"authorship":`
)

// joinAuthored writes the authored intent of a canonical intent and its authorship's
// JSON.
func joinAuthored(intent, authorship []byte) []byte {
	b := make([]byte, 0, len(authoredOpen)+len(intent)+len(authoredAfter)+len(authorship)+1)
	b = append(b, authoredOpen...)
	b = append(b, intent...)
	b = append(b, authoredAfter...)
	b = append(b, authorship...)
	return append(b, '}')
}

// splitAuthored returns the two members of an authored intent as encodeAuthored wrote them, or false when
// it is not an object of exactly those two.
func splitAuthored(authored []byte) (intent, authorship []byte, ok bool) {
	err := strictjson.Members(authored, "", 2, func(m strictjson.Member) error {
		switch m.Name {
		case "intent":
			intent = m.Value
		case "authorship":
			authorship = m.Value
		default:
			return errors.New("unknown member")
		}
		return nil
	})
	return intent, authorship, err == nil && intent != nil && authorship != nil
}

// cutAuthored splits an authored intent written by joinAuthored without parsing it. The
// authorship's JSON, written compact by crypto, never holds `,"authorship":` (its names
// are fixed and a quote inside its strings is escaped), so the last one ends the
// intent. Anything else is split by parsing.
func cutAuthored(authored []byte) (intent, authorship []byte, ok bool) {
	if bytes.HasPrefix(authored, []byte(authoredOpen)) && bytes.HasSuffix(authored, []byte("}")) {
		if i := bytes.LastIndex(authored, []byte(authoredAfter)); i > len(authoredOpen) {
			return authored[len(authoredOpen):i], authored[i+len(authoredAfter) : len(authored)-1], true
		}
	}
	return splitAuthored(authored)
}

// The snapshot's binary form (version 2) is a protobuf message, written and read with
// protowire rather than generated code so that the fields are written in one pass
// into one buffer. Its first byte is the tag of field 1, never '{', which begins every
// snapshot of version 1 (JSON): decodeSnapshot reads both. The binary form keeps the
// authored intent as its two parts, the ids only where the intent lacks them, and the
// times as Unix nanoseconds. What the store writes for an intent, in its log, its
// tables and again in each compaction, costs intake in proportion to its size: a new
// intent's snapshot of 660 bytes in JSON is 440 in the binary form.
const (
	fieldVersion         protowire.Number = 1  // varint
	fieldID              protowire.Number = 2  // bytes
	fieldPolicyID        protowire.Number = 3  // bytes
	fieldIntent          protowire.Number = 4  // bytes: the canonical intent
	fieldAuthorship      protowire.Number = 5  // bytes: the authorship's JSON
	fieldState           protowire.Number = 6  // bytes
	fieldCreatedAt       protowire.Number = 7  // varint: Unix nanoseconds, zigzag
	fieldExpiresAt       protowire.Number = 8  // varint
	fieldRequest         protowire.Number = 9  // bytes
	fieldProposal        protowire.Number = 10 // bytes: the solution; present when there is a proposal
	fieldProposedAt      protowire.Number = 11 // varint
	fieldEvidence        protowire.Number = 12 // bytes: JSON
	fieldReason          protowire.Number = 13 // bytes
	fieldFailureKind     protowire.Number = 14 // bytes
	fieldFailure         protowire.Number = 15 // message, repeated: failIndex, failExpr, failReason
	fieldEvidenceMissing protowire.Number = 16 // bytes, repeated
	fieldReceipt         protowire.Number = 17 // bytes: JSON
	fieldFinishedAt      protowire.Number = 18 // varint
	fieldAgent           protowire.Number = 19 // message: the agent's signature of the proposal (agent.go)
	fieldMandate         protowire.Number = 20 // bytes: the id of the mandate the intent is a purchase of

	failIndex  protowire.Number = 1 // varint
	failExpr   protowire.Number = 2 // bytes
	failReason protowire.Number = 3 // bytes
)

// Unix nanoseconds hold the times from 1678 to 2262; a time outside them cannot be
// written, as the JSON of version 1 could not write a year past 9999.
var (
	minSnapshotTime = time.Unix(0, math.MinInt64)
	maxSnapshotTime = time.Unix(0, math.MaxInt64)
)

// encode writes the snapshot in its binary form (version 2), whatever version it was
// read from.
func (s *snapshot) encode() ([]byte, error) {
	intent, authorship, ok := s.authoredParts()
	if !ok {
		return nil, fmt.Errorf("encode snapshot %s: the authored intent is not an intent and its authorship", s.ID)
	}
	n := 64 + len(s.ID) + len(s.PolicyID) + len(intent) + len(authorship) + len(s.State) + len(s.Request) +
		len(s.Evidence) + len(s.Reason) + len(s.FailureKind) + len(s.Receipt) + len(s.Mandate)
	if s.Agent != nil {
		n += 64 + len(s.Agent.Key) + len(s.Agent.Tag) + len(s.Agent.Nonce) + len(s.Agent.Base) + len(s.Agent.Signature) + len(s.Agent.Body)
	}
	if s.Proposal != nil {
		n += 3 + len(s.Proposal.Solution)
	}
	for _, f := range s.Failures {
		n += 16 + len(f.PrettyExpr) + len(f.Reason)
	}
	for _, f := range s.EvidenceMissing {
		n += 3 + len(f)
	}
	b := make([]byte, 0, n)
	b = protowire.AppendTag(b, fieldVersion, protowire.VarintType)
	b = protowire.AppendVarint(b, snapshotVersion)
	// The ids are written only where the intent does not give them as they are (an id
	// sent in capitals, which the service keeps in lower case): the snapshot of every
	// other intent is 80 bytes smaller.
	id, policyID, found := intentIDBytes(intent)
	if !found || string(id) != s.ID {
		b = appendPresent(b, fieldID, s.ID)
	}
	if !found || string(policyID) != s.PolicyID {
		b = appendPresent(b, fieldPolicyID, s.PolicyID)
	}
	b = appendBytes(b, fieldIntent, intent)
	b = appendBytes(b, fieldAuthorship, authorship)
	b = appendBytes(b, fieldState, s.State)
	var err error
	for _, t := range []struct {
		num protowire.Number
		at  time.Time
	}{{fieldCreatedAt, s.CreatedAt}, {fieldExpiresAt, s.ExpiresAt}, {fieldProposedAt, s.ProposedAt}, {fieldFinishedAt, s.FinishedAt}} {
		if b, err = appendTime(b, t.num, t.at); err != nil {
			return nil, fmt.Errorf("encode snapshot %s: %w", s.ID, err)
		}
	}
	b = appendBytes(b, fieldRequest, s.Request)
	if s.Proposal != nil {
		b = appendPresent(b, fieldProposal, s.Proposal.Solution)
	}
	b = appendBytes(b, fieldEvidence, s.Evidence)
	b = appendBytes(b, fieldReason, s.Reason)
	b = appendBytes(b, fieldFailureKind, s.FailureKind)
	for _, f := range s.Failures {
		if f.Index < 0 || f.Index > math.MaxInt32 {
			return nil, fmt.Errorf("encode snapshot %s: failure index %d", s.ID, f.Index)
		}
		size := 1 + protowire.SizeVarint(uint64(f.Index))
		for _, v := range []string{f.PrettyExpr, f.Reason} {
			if len(v) > 0 {
				size += 1 + protowire.SizeBytes(len(v))
			}
		}
		b = protowire.AppendTag(b, fieldFailure, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		b = protowire.AppendTag(b, failIndex, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(f.Index))
		b = appendBytes(b, failExpr, f.PrettyExpr)
		b = appendBytes(b, failReason, f.Reason)
	}
	for _, f := range s.EvidenceMissing {
		b = appendPresent(b, fieldEvidenceMissing, f)
	}
	b = appendAgent(b, s.Agent, s.State.Terminal())
	b = appendBytes(b, fieldMandate, s.Mandate)
	return appendBytes(b, fieldReceipt, s.Receipt), nil
}

// appendBytes writes a bytes field, or nothing for an empty value: a missing field
// reads back empty.
func appendBytes[T ~string | ~[]byte](b []byte, num protowire.Number, v T) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(v)))
	return append(b, v...)
}

// appendPresent writes a bytes field even when it is empty, so that its presence
// tells.
func appendPresent(b []byte, num protowire.Number, v string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, v)
}

// intentIDs reads the id and the policy id from the end of a canonical intent, where
// JCS puts them, `..."id":"ID","policy_id":"POLICY"}`, when both are there as plain
// strings (nothing escaped); found is false otherwise. A snapshot leaves out an id
// that intentIDs gives as it is, and decodeSnapshotWire takes it from intentIDs again:
// the two agree whatever the intent holds.
func intentIDs(intent []byte) (id, policyID string, found bool) {
	idText, policyText, found := intentIDBytes(intent)
	return string(idText), string(policyText), found
}

// intentIDBytes is intentIDs without the copies, for the encoder, which only compares
// them.
func intentIDBytes(intent []byte) (id, policyID []byte, found bool) {
	const idName, policyName = `"id":"`, `","policy_id":"`
	if !bytes.HasSuffix(intent, []byte(`"}`)) {
		return nil, nil, false
	}
	p := bytes.LastIndex(intent, []byte(policyName))
	if p < 0 || p+len(policyName) > len(intent)-2 {
		return nil, nil, false
	}
	i := bytes.LastIndex(intent[:p], []byte(idName))
	if i < 1 || (intent[i-1] != ',' && intent[i-1] != '{') {
		return nil, nil, false
	}
	idText, policyText := intent[i+len(idName):p], intent[p+len(policyName):len(intent)-2]
	if bytes.ContainsAny(idText, `"\`) || bytes.ContainsAny(policyText, `"\`) {
		return nil, nil, false
	}
	return idText, policyText, true
}

// appendTime writes a time as Unix nanoseconds, or nothing for the zero time.
func appendTime(b []byte, num protowire.Number, t time.Time) ([]byte, error) {
	if t.IsZero() {
		return b, nil
	}
	if t.Before(minSnapshotTime) || t.After(maxSnapshotTime) {
		return nil, fmt.Errorf("time %v is outside of the years 1678 to 2262", t)
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeZigZag(t.UnixNano())), nil
}

// snapshotIsJSON tells a snapshot of version 1 (JSON, written before the binary form)
// from one of version 2 by its first byte.
func snapshotIsJSON(data []byte) bool { return len(data) > 0 && data[0] == '{' }

// decodeSnapshot reads a snapshot of either version.
func decodeSnapshot(data []byte) (*snapshot, error) {
	if snapshotIsJSON(data) {
		return decodeSnapshotJSON(data)
	}
	s, err := decodeSnapshotWire(data)
	if err != nil {
		return nil, intentd.Internal("decode snapshot: %w", err)
	}
	return s, nil
}

// decodeSnapshotJSON reads a snapshot of version 1.
func decodeSnapshotJSON(data []byte) (*snapshot, error) {
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, intentd.Internal("decode snapshot: %w", err)
	}
	if s.V != 1 {
		return nil, intentd.Internal("decode snapshot: %w", fmt.Errorf("%s has version %d in JSON, want 1", s.ID, s.V))
	}
	return &s, nil
}

// decodeSnapshotWire reads a snapshot of version 2. Each field may appear once, but
// for the repeated ones; a field it does not know is an error, since a snapshot is
// written only by this package and an unknown field means a newer writer or damage.
func decodeSnapshotWire(data []byte) (*snapshot, error) {
	s := &snapshot{}
	var intent, authorship []byte
	var seen uint32
	var hasID, hasPolicyID bool
	for len(data) > 0 {
		f, rest, err := nextField(data, fieldVersion, fieldMandate, &seen, snapshotVarint, snapshotRepeated)
		if err != nil {
			return nil, err
		}
		data = rest
		num, v, u := f.num, f.v, f.u
		switch num {
		case fieldVersion:
			if u != snapshotVersion {
				return nil, fmt.Errorf("version %d, want %d", u, snapshotVersion)
			}
			s.V = snapshotVersion
		case fieldID:
			s.ID, hasID = string(v), true
		case fieldPolicyID:
			s.PolicyID, hasPolicyID = string(v), true
		case fieldIntent:
			intent = v
		case fieldAuthorship:
			authorship = v
		case fieldState:
			s.State = intentd.State(v)
		case fieldCreatedAt:
			s.CreatedAt = wireTime(u)
		case fieldExpiresAt:
			s.ExpiresAt = wireTime(u)
		case fieldProposedAt:
			s.ProposedAt = wireTime(u)
		case fieldFinishedAt:
			s.FinishedAt = wireTime(u)
		case fieldRequest:
			s.Request = string(v)
		case fieldProposal:
			s.Proposal = &intentd.Proposal{Solution: string(v)}
		case fieldEvidence:
			s.Evidence = json.RawMessage(bytes.Clone(v))
		case fieldReason:
			s.Reason = string(v)
		case fieldFailureKind:
			s.FailureKind = intentd.FailureKind(v)
		case fieldFailure:
			f, err := decodeFailure(v)
			if err != nil {
				return nil, fmt.Errorf("failure %d: %w", len(s.Failures), err)
			}
			s.Failures = append(s.Failures, f)
		case fieldEvidenceMissing:
			s.EvidenceMissing = append(s.EvidenceMissing, string(v))
		case fieldReceipt:
			s.Receipt = json.RawMessage(bytes.Clone(v))
		case fieldAgent:
			by, err := decodeAgent(v)
			if err != nil {
				return nil, fmt.Errorf("agent: %w", err)
			}
			s.Agent = by
		case fieldMandate:
			s.Mandate = string(v)
		}
	}
	if s.V != snapshotVersion {
		return nil, errors.New("no version")
	}
	if intent == nil || authorship == nil {
		return nil, fmt.Errorf("%s has no authored intent", s.ID)
	}
	if !hasID || !hasPolicyID {
		id, policyID, found := intentIDs(intent)
		if !found {
			return nil, errors.New("no id, and none in the intent")
		}
		if !hasID {
			s.ID = id
		}
		if !hasPolicyID {
			s.PolicyID = policyID
		}
	}
	s.joinAuthored(intent, authorship)
	return s, nil
}

// snapshotVarint and snapshotRepeated say which fields of a snapshot are varints and
// which may appear more than once.
func snapshotVarint(num protowire.Number) bool {
	return num == fieldVersion || num == fieldCreatedAt || num == fieldExpiresAt || num == fieldProposedAt || num == fieldFinishedAt
}

func snapshotRepeated(num protowire.Number) bool {
	return num == fieldFailure || num == fieldEvidenceMissing
}

// wireField is one field of a message written with protowire: its number and its
// value, a varint's or a bytes field's.
type wireField struct {
	num protowire.Number
	v   []byte
	u   uint64
}

// nextField reads the field data starts with and returns it with what follows. A
// message of this package holds only the fields lo to hi, each once unless repeated
// says otherwise, each a varint if varint says so and bytes otherwise: anything else
// means a newer writer or damage, and is refused. seen keeps the fields read so far.
func nextField(data []byte, lo, hi protowire.Number, seen *uint32, varint, repeated func(protowire.Number) bool) (wireField, []byte, error) {
	num, typ, n := protowire.ConsumeTag(data)
	if n < 0 {
		return wireField{}, nil, protowire.ParseError(n)
	}
	data = data[n:]
	if num < lo || num > hi {
		return wireField{}, nil, fmt.Errorf("unknown field %d", num)
	}
	if repeated == nil || !repeated(num) {
		if *seen&(1<<num) != 0 {
			return wireField{}, nil, fmt.Errorf("field %d appears twice", num)
		}
		*seen |= 1 << num
	}
	f := wireField{num: num}
	if varint(num) {
		if typ != protowire.VarintType {
			return wireField{}, nil, fmt.Errorf("field %d has wire type %d, want a varint", num, typ)
		}
		f.u, n = protowire.ConsumeVarint(data)
	} else {
		if typ != protowire.BytesType {
			return wireField{}, nil, fmt.Errorf("field %d has wire type %d, want bytes", num, typ)
		}
		f.v, n = protowire.ConsumeBytes(data)
	}
	if n < 0 {
		return wireField{}, nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
	}
	return f, data[n:], nil
}

// wireTime reads a time written by appendTime, in UTC.
func wireTime(u uint64) time.Time {
	return time.Unix(0, protowire.DecodeZigZag(u)).UTC()
}

// decodeFailure reads one failed constraint.
func decodeFailure(data []byte) (policy.Failure, error) {
	var f policy.Failure
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return f, protowire.ParseError(n)
		}
		data = data[n:]
		switch {
		case num == failIndex && typ == protowire.VarintType:
			u, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return f, protowire.ParseError(n)
			}
			if u > math.MaxInt32 {
				return f, fmt.Errorf("index %d", u)
			}
			f.Index, data = int(u), data[n:]
		case (num == failExpr || num == failReason) && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return f, protowire.ParseError(n)
			}
			if num == failExpr {
				f.PrettyExpr = string(v)
			} else {
				f.Reason = string(v)
			}
			data = data[n:]
		default:
			return f, fmt.Errorf("unknown field %d of wire type %d", num, typ)
		}
	}
	return f, nil
}
