package actors

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// mandateRecordCases are records of each shape: new, revoked, with purchases decided
// each way.
func mandateRecordCases() map[string]*mandateRecord {
	at := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)
	base := func() *mandateRecord {
		return &mandateRecord{V: mandateRecordVersion, ID: "0b6f8f0e-8f59-4b5e-9a51-1b2b8a3c4d5e",
			PolicyID:  "CrFDsxazphhX6ZqKVc6tG99XBat4jPr92xYE2eiNBKE9",
			Authored:  json.RawMessage(`{"mandate":{"expires_at":"2030-06-01T00:00:00Z","id":"0b6f8f0e-8f59-4b5e-9a51-1b2b8a3c4d5e","policy_id":"CrFDsxazphhX6ZqKVc6tG99XBat4jPr92xYE2eiNBKE9"},"authorship":"Unsigned"}`),
			CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	}
	revoked := base()
	revoked.Revoked = &mandateRevocation{At: at.Add(time.Minute), Authored: json.RawMessage(`{"revocation":{"mandate_id":"0b6f8f0e-8f59-4b5e-9a51-1b2b8a3c4d5e"},"authorship":"Unsigned"}`)}
	bought := base()
	bought.Spent, bought.Count = 4996, 2
	for i := range 3 {
		p := mandatePurchase{IntentID: uuid.NewString(), TakenAt: at.Add(time.Duration(i) * time.Second)}
		if i < 2 {
			p.Success = &mandateDecision{At: p.TakenAt.Add(time.Millisecond), Amount: 2498,
				Before:      mandateTotals{Spent: int64(i) * 2498, Purchases: int64(i), PeriodSpent: int64(i) * 2498, PeriodPurchases: int64(i)},
				EvidenceSum: [32]byte{byte(i), 1, 2, 3}}
		}
		bought.Purchases = append(bought.Purchases, p)
	}
	return map[string]*mandateRecord{"new": base(), "revoked": revoked, "bought": bought}
}

// TestMandateRecordRoundTrip encodes records of each shape and reads them back as
// they were, and refuses what only damage or another version writes.
func TestMandateRecordRoundTrip(t *testing.T) {
	for name, r := range mandateRecordCases() {
		t.Run(name, func(t *testing.T) {
			data, err := r.encode()
			if err != nil {
				t.Fatal(err)
			}
			back, err := decodeMandateRecord(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, r) {
				t.Fatalf("read back as %+v, want %+v", back, r)
			}
		})
	}
	good, err := mandateRecordCases()["bought"].encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "version 0"},
		{"cut short", good[:len(good)-3], "field 10: unexpected EOF"},
		{"another version", append([]byte{0x08, 0x02}, good[2:]...), "version 2"},
		{"an unknown field", append(bytes.Clone(good), 0x58, 0x01), "unknown field 11"},
		{"a field twice", append(bytes.Clone(good), good[:2]...), "field 1 appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeMandateRecord(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decode = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// FuzzDecodeMandateRecord reads what a damaged store may hold: never a panic, and a
// record that reads encodes to bytes that read back the same.
func FuzzDecodeMandateRecord(f *testing.F) {
	for _, r := range mandateRecordCases() {
		data, err := r.encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeMandateRecord(data)
		if err != nil {
			return
		}
		again, err := r.encode()
		if err != nil {
			return // a time the binary form cannot hold
		}
		back, err := decodeMandateRecord(again)
		if err != nil {
			t.Fatalf("re-encoded record does not read: %v", err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("read back as %+v, want %+v", back, r)
		}
	})
}
