package actors

import (
	"errors"
	"strconv"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/strictjson"
)

// encodeAuthored builds the stored AuthoredIntent around the canonical intent without
// re-reading it: encoding/json would validate and compact bytes that JCS has just written,
// and the authorship's own compact encoding.
func encodeAuthored(canon []byte, a crypto.Authorship) ([]byte, error) {
	auth, err := a.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(`{"intent":,"authorship":}`)+len(canon)+len(auth))
	b = append(b, `{"intent":`...)
	b = append(b, canon...)
	b = append(b, `,"authorship":`...)
	b = append(b, auth...)
	return append(b, '}'), nil
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

// encode writes the snapshot as JSON. A new intent's snapshot, written once for every
// intent submitted, is built by hand: the reflection of encoding/json, and its second
// pass over the authored intent, cost more than the rest of the encoding. The bytes are
// those marshalJSON would write; a test holds the two together.
func (s *snapshot) encode() ([]byte, error) {
	if !s.isNew() {
		return intentd.MarshalJSON(s)
	}
	b := make([]byte, 0, 320+len(s.Authored))
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(s.V), 10)
	b = append(b, `,"id":`...)
	b, ok := appendPlainString(b, s.ID)
	if !ok {
		return intentd.MarshalJSON(s)
	}
	b = append(b, `,"policy_id":`...)
	if b, ok = appendPlainString(b, s.PolicyID); !ok {
		return intentd.MarshalJSON(s)
	}
	b = append(b, `,"authored":`...)
	b = append(b, s.Authored...)
	b = append(b, `,"state":`...)
	if b, ok = appendPlainString(b, string(s.State)); !ok {
		return intentd.MarshalJSON(s)
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{{`,"created_at":`, s.CreatedAt}, {`,"expires_at":`, s.ExpiresAt}} {
		if y := f.t.Year(); y < 0 || y > 9999 {
			return intentd.MarshalJSON(s) // for the error encoding/json gives
		}
		b = append(b, f.name...)
		b = append(b, '"')
		b = f.t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if s.Request != "" {
		b = append(b, `,"request":`...)
		if b, ok = appendPlainString(b, s.Request); !ok {
			return intentd.MarshalJSON(s)
		}
	}
	return append(b, '}'), nil
}

// isNew reports whether the snapshot has only the fields of a new open intent, the shape
// encode builds by hand; Authored must be the compact JSON encodeAuthored made.
func (s *snapshot) isNew() bool {
	return s.Proposal == nil && s.ProposedAt.IsZero() && len(s.Evidence) == 0 && s.Reason == "" &&
		s.FailureKind == "" && len(s.Failures) == 0 && len(s.EvidenceMissing) == 0 && len(s.Receipt) == 0 && s.FinishedAt.IsZero()
}

// appendPlainString quotes s when it needs no escaping (printable ASCII without quote or
// backslash, as ids and states are); otherwise it reports false.
func appendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
