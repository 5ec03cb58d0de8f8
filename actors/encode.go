package actors

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

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

// encode writes the snapshot as JSON, built by hand: the reflection of encoding/json,
// and its second pass over the raw members (the authored intent, the evidence, the
// receipt), cost a proposal more than the rest of its encoding, twice, for a snapshot
// written at each transition. The bytes are those intentd.MarshalJSON would write; a
// test holds the two together for every field. The raw members are written as they
// are: each comes from one of the service's own encoders, compact and valid.
func (s *snapshot) encode() ([]byte, error) {
	// The names, numbers and times take under 400 bytes; strings to escape may take
	// more, and the slice grows for them.
	n := 400 + len(s.ID) + len(s.PolicyID) + len(s.Request) + len(s.Authored) + len(s.Evidence) + len(s.Receipt) + len(s.Reason)
	if s.Proposal != nil {
		n += len(s.Proposal.Solution)
	}
	for _, f := range s.Failures {
		n += 48 + len(f.PrettyExpr) + len(f.Reason)
	}
	for _, f := range s.EvidenceMissing {
		n += 3 + len(f)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(s.V), 10)
	b = append(b, `,"id":`...)
	b = appendString(b, s.ID)
	b = append(b, `,"policy_id":`...)
	b = appendString(b, s.PolicyID)
	b = appendRaw(b, `,"authored":`, s.Authored)
	b = append(b, `,"state":`...)
	b = appendString(b, string(s.State))
	var err error
	if b, err = appendTime(b, `,"created_at":`, s.CreatedAt); err != nil {
		return nil, err
	}
	if b, err = appendTime(b, `,"expires_at":`, s.ExpiresAt); err != nil {
		return nil, err
	}
	if s.Request != "" {
		b = append(b, `,"request":`...)
		b = appendString(b, s.Request)
	}
	if s.Proposal != nil {
		b = append(b, `,"proposal":{"solution":`...)
		b = appendString(b, s.Proposal.Solution)
		b = append(b, '}')
	}
	if !s.ProposedAt.IsZero() {
		if b, err = appendTime(b, `,"proposed_at":`, s.ProposedAt); err != nil {
			return nil, err
		}
	}
	if len(s.Evidence) > 0 {
		b = appendRaw(b, `,"evidence":`, s.Evidence)
	}
	if s.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendString(b, s.Reason)
	}
	if s.FailureKind != "" {
		b = append(b, `,"failure_kind":`...)
		b = appendString(b, string(s.FailureKind))
	}
	if len(s.Failures) > 0 {
		b = append(b, `,"failures":[`...)
		for i, f := range s.Failures {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(f.Index), 10)
			b = append(b, `,"pretty_expr":`...)
			b = appendString(b, f.PrettyExpr)
			b = append(b, `,"reason":`...)
			b = appendString(b, f.Reason)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(s.EvidenceMissing) > 0 {
		b = append(b, `,"evidence_missing":[`...)
		for i, f := range s.EvidenceMissing {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, f)
		}
		b = append(b, ']')
	}
	if len(s.Receipt) > 0 {
		b = appendRaw(b, `,"receipt":`, s.Receipt)
	}
	if !s.FinishedAt.IsZero() {
		if b, err = appendTime(b, `,"finished_at":`, s.FinishedAt); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendRaw writes a member whose value is JSON already; an empty one is written as
// null, as encoding/json writes an empty json.RawMessage.
func appendRaw(b []byte, name string, raw []byte) []byte {
	b = append(b, name...)
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendTime writes a member holding t as time.Time's MarshalJSON does, and fails as it
// does for a year that RFC 3339 cannot write.
func appendTime(b []byte, name string, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("encode snapshot: time %v: year outside of range [0,9999]", t)
	}
	b = append(b, name...)
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendString quotes s as encoding/json does with HTML escaping off: quote, backslash
// and control characters escaped, \b \f \n \r \t by name, U+2028 and U+2029 escaped for
// JavaScript, and each byte of invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
