package actors

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protowire"
)

// A mandate's record is written as a protobuf message with protowire, as a snapshot is
// (encode.go): each decision of a purchase rewrites it whole, and the record of fifty
// purchases in JSON, with its times as text, cost a purchase more to encode than its
// decision did. Times are Unix nanoseconds; integers are varints.
const (
	mrecVersion   protowire.Number = 1  // varint
	mrecID        protowire.Number = 2  // bytes
	mrecPolicyID  protowire.Number = 3  // bytes
	mrecAuthored  protowire.Number = 4  // bytes: the AuthoredMandate's JSON
	mrecCreatedAt protowire.Number = 5  // varint: Unix nanoseconds, zigzag
	mrecExpiresAt protowire.Number = 6  // varint
	mrecRevoked   protowire.Number = 7  // message: revAt, revAuthored
	mrecSpent     protowire.Number = 8  // varint
	mrecCount     protowire.Number = 9  // varint
	mrecPurchase  protowire.Number = 10 // message, repeated: purIntent, purTakenAt, purSuccess

	revAt       protowire.Number = 1 // varint
	revAuthored protowire.Number = 2 // bytes

	purIntent  protowire.Number = 1 // bytes: the intent's id, the 16 bytes of its UUID
	purTakenAt protowire.Number = 2 // varint
	purSuccess protowire.Number = 3 // message: the decision's fields below

	decAt              protowire.Number = 1 // varint
	decAmount          protowire.Number = 2 // varint
	decSpent           protowire.Number = 3 // varint
	decPurchases       protowire.Number = 4 // varint
	decPeriodSpent     protowire.Number = 5 // varint
	decPeriodPurchases protowire.Number = 6 // varint
	decEvidence        protowire.Number = 7 // bytes: the SHA-256 of the evidence decided on, in JCS
)

// encode writes the record.
func (r *mandateRecord) encode() ([]byte, error) {
	n := 64 + len(r.ID) + len(r.PolicyID) + len(r.Authored) + 96*len(r.Purchases)
	if r.Revoked != nil {
		n += 16 + len(r.Revoked.Authored)
	}
	b := make([]byte, 0, n)
	b = protowire.AppendTag(b, mrecVersion, protowire.VarintType)
	b = protowire.AppendVarint(b, mandateRecordVersion)
	b = appendBytes(b, mrecID, r.ID)
	b = appendBytes(b, mrecPolicyID, r.PolicyID)
	b = appendBytes(b, mrecAuthored, r.Authored)
	var err error
	if b, err = appendTime(b, mrecCreatedAt, r.CreatedAt); err != nil {
		return nil, err
	}
	if b, err = appendTime(b, mrecExpiresAt, r.ExpiresAt); err != nil {
		return nil, err
	}
	if v := r.Revoked; v != nil {
		var m []byte
		if m, err = appendTime(m, revAt, v.At); err != nil {
			return nil, err
		}
		m = appendBytes(m, revAuthored, v.Authored)
		b = protowire.AppendTag(b, mrecRevoked, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	b = appendVarint(b, mrecSpent, uint64(r.Spent))
	b = appendVarint(b, mrecCount, uint64(r.Count))
	var m []byte
	for i := range r.Purchases {
		if m, err = r.Purchases[i].append(m[:0]); err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, mrecPurchase, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}

// append writes the purchase's message.
func (p *mandatePurchase) append(m []byte) ([]byte, error) {
	id, err := uuid.Parse(p.IntentID)
	if err != nil {
		return nil, fmt.Errorf("purchase %q: %w", p.IntentID, err)
	}
	m = appendBytes(m, purIntent, id[:])
	m, err = appendTime(m, purTakenAt, p.TakenAt)
	if err != nil || p.Success == nil {
		return m, err
	}
	s := p.Success
	d := make([]byte, 0, 80)
	if d, err = appendTime(d, decAt, s.At); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		num protowire.Number
		v   int64
	}{{decAmount, s.Amount}, {decSpent, s.Before.Spent}, {decPurchases, s.Before.Purchases},
		{decPeriodSpent, s.Before.PeriodSpent}, {decPeriodPurchases, s.Before.PeriodPurchases}} {
		d = appendVarint(d, f.num, uint64(f.v))
	}
	d = appendBytes(d, decEvidence, s.EvidenceSum[:])
	m = protowire.AppendTag(m, purSuccess, protowire.BytesType)
	return protowire.AppendBytes(m, d), nil
}

// appendVarint writes a varint field, or nothing for 0.
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// decodeMandateRecord reads a record encode wrote. A field it does not know, or one
// twice, is an error: only this package writes records.
func decodeMandateRecord(data []byte) (*mandateRecord, error) {
	r := &mandateRecord{}
	var seen uint32
	varint := func(num protowire.Number) bool {
		return num == mrecVersion || num == mrecCreatedAt || num == mrecExpiresAt || num == mrecSpent || num == mrecCount
	}
	repeated := func(num protowire.Number) bool { return num == mrecPurchase }
	for len(data) > 0 {
		f, rest, err := nextField(data, mrecVersion, mrecPurchase, &seen, varint, repeated)
		if err != nil {
			return nil, fmt.Errorf("mandate record: %w", err)
		}
		data = rest
		switch f.num {
		case mrecVersion:
			r.V = int(f.u)
		case mrecID:
			r.ID = string(f.v)
		case mrecPolicyID:
			r.PolicyID = string(f.v)
		case mrecAuthored:
			r.Authored = bytes.Clone(f.v)
		case mrecCreatedAt:
			r.CreatedAt = wireTime(f.u)
		case mrecExpiresAt:
			r.ExpiresAt = wireTime(f.u)
		case mrecRevoked:
			if r.Revoked, err = decodeRevoked(f.v); err != nil {
				return nil, fmt.Errorf("mandate record %s: revocation: %w", r.ID, err)
			}
		case mrecSpent:
			r.Spent = int64(f.u)
		case mrecCount:
			r.Count = int64(f.u)
		case mrecPurchase:
			p, err := decodePurchase(f.v)
			if err != nil {
				return nil, fmt.Errorf("mandate record %s: purchase %d: %w", r.ID, len(r.Purchases), err)
			}
			r.Purchases = append(r.Purchases, p)
		}
	}
	if r.V != mandateRecordVersion {
		return nil, fmt.Errorf("mandate record %s: version %d, want %d", r.ID, r.V, mandateRecordVersion)
	}
	if r.ID == "" || r.PolicyID == "" || len(r.Authored) == 0 {
		return nil, errors.New("mandate record: no id, policy or authored mandate")
	}
	return r, nil
}

func decodeRevoked(data []byte) (*mandateRevocation, error) {
	v := &mandateRevocation{}
	var seen uint32
	for len(data) > 0 {
		f, rest, err := nextField(data, revAt, revAuthored, &seen, func(n protowire.Number) bool { return n == revAt }, nil)
		if err != nil {
			return nil, err
		}
		data = rest
		if f.num == revAt {
			v.At = wireTime(f.u)
		} else {
			v.Authored = bytes.Clone(f.v)
		}
	}
	return v, nil
}

func decodePurchase(data []byte) (mandatePurchase, error) {
	var p mandatePurchase
	var seen uint32
	for len(data) > 0 {
		f, rest, err := nextField(data, purIntent, purSuccess, &seen, func(n protowire.Number) bool { return n == purTakenAt }, nil)
		if err != nil {
			return p, err
		}
		data = rest
		switch f.num {
		case purIntent:
			id, err := uuid.FromBytes(f.v)
			if err != nil {
				return p, fmt.Errorf("intent: %w", err)
			}
			p.IntentID = id.String()
		case purTakenAt:
			p.TakenAt = wireTime(f.u)
		case purSuccess:
			if p.Success, err = decodeDecision(f.v); err != nil {
				return p, fmt.Errorf("success: %w", err)
			}
		}
	}
	if p.IntentID == "" {
		return p, errors.New("no intent")
	}
	return p, nil
}

func decodeDecision(data []byte) (*mandateDecision, error) {
	d := &mandateDecision{}
	var seen uint32
	for len(data) > 0 {
		f, rest, err := nextField(data, decAt, decEvidence, &seen, func(n protowire.Number) bool { return n != decEvidence }, nil)
		if err != nil {
			return nil, err
		}
		data = rest
		switch f.num {
		case decAt:
			d.At = wireTime(f.u)
		case decAmount:
			d.Amount = int64(f.u)
		case decSpent:
			d.Before.Spent = int64(f.u)
		case decPurchases:
			d.Before.Purchases = int64(f.u)
		case decPeriodSpent:
			d.Before.PeriodSpent = int64(f.u)
		case decPeriodPurchases:
			d.Before.PeriodPurchases = int64(f.u)
		case decEvidence:
			if len(f.v) != len(d.EvidenceSum) {
				return nil, fmt.Errorf("evidence digest of %d bytes", len(f.v))
			}
			copy(d.EvidenceSum[:], f.v)
		}
	}
	return d, nil
}
