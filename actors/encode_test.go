package actors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// TestSnapshotEncode holds the hand-built encoding of snapshots to the bytes
// encoding/json writes, and checks that every snapshot reads back as it was.
func TestSnapshotEncode(t *testing.T) {
	canon := []byte(`{"attrs":{"fields":{"note":{"String":"<b>&\"ü\u2028"}}},"id":"x","policy_id":"p"}`)
	authored, err := encodeAuthored(canon, crypto.Authorship{})
	if err != nil {
		t.Fatal(err)
	}
	paris := time.FixedZone("Paris", 3600)
	at := time.Date(2026, 11, 22, 15, 4, 5, 123456789, time.UTC)
	newSnap := func(change func(*snapshot)) *snapshot {
		s := &snapshot{V: snapshotVersion, ID: "0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f", PolicyID: "8Xk2pQ",
			Authored: authored, State: intentd.StateOpen, CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
		if change != nil {
			change(s)
		}
		return s
	}
	tests := []struct {
		name string
		snap *snapshot
	}{
		{"new", newSnap(nil)},
		{"whole seconds", newSnap(func(s *snapshot) { s.CreatedAt = at.Truncate(time.Second) })},
		{"other zone", newSnap(func(s *snapshot) { s.ExpiresAt = at.In(paris) })},
		{"zero times", newSnap(func(s *snapshot) { s.CreatedAt, s.ExpiresAt = time.Time{}, time.Time{} })},
		{"id to escape", newSnap(func(s *snapshot) { s.ID = "a\"b\\c\u00e9" })},
		{"cluster request", newSnap(func(s *snapshot) { s.Request = "5f0e8a42-9b1c-4d3e-8f7a-6b5c4d3e2f1a" })},
		{"request to escape", newSnap(func(s *snapshot) { s.Request = "a\"b" })},
		{"proposed", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt = intentd.StateProcessing, &intentd.Proposal{Solution: "<M>\u2028\t\x01"}, at
		})},
		{"failed", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt = intentd.StateFailure, &intentd.Proposal{Solution: "M"}, at
			s.Evidence, s.Reason, s.FailureKind, s.FinishedAt = json.RawMessage(`{"price_cents":3000}`), "price_cents <= 2500", intentd.FailureConstraints, at
			s.Failures = []policy.Failure{
				{Index: 0, PrettyExpr: `evidence.size == intent.size`, Reason: `evidence.size is "L", not "M"`},
				{Index: 3, PrettyExpr: "evidence.price_cents <= 2500", Reason: "3000 > 2500\n\u2029"},
			}
			s.EvidenceMissing = []string{"colour", "\"odd\""}
		})},
		{"succeeded", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt = intentd.StateSuccess, &intentd.Proposal{Solution: "M"}, at
			s.Evidence, s.FinishedAt = json.RawMessage(`{"price_cents":2000,"size":"M"}`), at.Add(time.Millisecond)
			s.Receipt = json.RawMessage(`{"version":1,"signature":"5Kd"}`)
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.snap.encode()
			if err != nil {
				t.Fatal(err)
			}
			want, err := intentd.MarshalJSON(tc.snap)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encode:\n got %s\nwant %s", got, want)
			}
			back, err := decodeSnapshot(got)
			if err != nil {
				t.Fatal(err)
			}
			if !back.CreatedAt.Equal(tc.snap.CreatedAt) || !back.ExpiresAt.Equal(tc.snap.ExpiresAt) {
				t.Fatalf("times read back as %v, %v", back.CreatedAt, back.ExpiresAt)
			}
			back.CreatedAt, back.ExpiresAt, back.ProposedAt, back.FinishedAt = tc.snap.CreatedAt, tc.snap.ExpiresAt, tc.snap.ProposedAt, tc.snap.FinishedAt
			if !reflect.DeepEqual(back, tc.snap) {
				t.Fatalf("read back as %+v, want %+v", back, tc.snap)
			}
		})
	}

	t.Run("intent kept as signed", func(t *testing.T) {
		var a intentd.AuthoredIntent
		if err := json.Unmarshal(authored, &a); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Intent, canon) {
			t.Fatalf("stored intent %s, want the canonical bytes %s", a.Intent, canon)
		}
	})
	t.Run("year out of range", func(t *testing.T) {
		s := newSnap(func(s *snapshot) { s.ExpiresAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) })
		if _, err := s.encode(); err == nil {
			t.Fatal("a year past 9999 has no RFC 3339 form and must fail to encode")
		}
	})
}

// FuzzAppendString holds the hand-built quoting of strings to encoding/json's.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "\x00\x1f\b\f\n\r\t", "<&>", "é\u2028\u2029", "\xff\xfe", "\xed\xa0\x80", "ok\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := intentd.MarshalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// BenchmarkSnapshotEncode measures the encoding of a new intent's snapshot and of a
// failed one's (17 failures), beside encoding/json's of the same.
func BenchmarkSnapshotEncode(b *testing.B) {
	authored, _ := encodeAuthored([]byte(`{"attrs":{"fields":{"max_price_cents":{"Int":2500},"size":{"String":"M"}}},"id":"0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f","policy_id":"8Xk2pQ"}`), crypto.Authorship{})
	now := time.Now()
	open := &snapshot{V: snapshotVersion, ID: "0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f", PolicyID: "8Xk2pQ",
		Authored: authored, State: intentd.StateOpen, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	failed := open.clone()
	failed.State, failed.Proposal, failed.ProposedAt, failed.FinishedAt = intentd.StateFailure, &intentd.Proposal{Solution: "https://shop.example/tee?variant=M-navy"}, now, now
	failed.Evidence = json.RawMessage(`{"brand":"Acme","colour":"navy","price_cents":3000,"size":"M","stock":12}`)
	failed.Reason, failed.FailureKind = "17 constraints do not hold", intentd.FailureConstraints
	for i := range 17 {
		failed.Failures = append(failed.Failures, policy.Failure{Index: i, PrettyExpr: "evidence.price_cents <= intent.max_price_cents",
			Reason: `evidence.price_cents is 3000, above intent.max_price_cents, 2500 ("M")`})
	}
	failed.Receipt = json.RawMessage(`{"version":1,"intent_id":"0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f","signature":"5KdQvXo3"}`)
	for _, s := range []struct {
		name string
		snap *snapshot
	}{{"new", open}, {"failed", failed}} {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.snap.encode(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := intentd.MarshalJSON(s.snap); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSnapshotEncodeCoversEveryField guards the hand-built encoding against a field
// added to snapshot later: with every field set, its bytes must still be those of
// encoding/json, which would show a field encode does not write.
func TestSnapshotEncodeCoversEveryField(t *testing.T) {
	var s snapshot
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(int64(i + 1))
		case reflect.String:
			f.SetString(fmt.Sprintf("s%d", i))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			switch f.Type() {
			case reflect.TypeFor[json.RawMessage]():
				f.SetBytes(fmt.Appendf(nil, `{"f":%d}`, i))
			case reflect.TypeFor[[]policy.Failure]():
				f.Set(reflect.ValueOf([]policy.Failure{{Index: i, PrettyExpr: "e", Reason: "r"}}))
			case reflect.TypeFor[[]string]():
				f.Set(reflect.ValueOf([]string{"a", "b"}))
			default:
				t.Fatalf("field %s: no value known for a %s", v.Type().Field(i).Name, f.Type())
			}
		case reflect.Struct:
			if f.Type() != reflect.TypeFor[time.Time]() {
				t.Fatalf("field %s: no value known for a %s", v.Type().Field(i).Name, f.Type())
			}
			f.Set(reflect.ValueOf(time.Unix(int64(i), 0).UTC()))
		default:
			t.Fatalf("field %s: no value known for a %s", v.Type().Field(i).Name, f.Type())
		}
	}
	got, err := s.encode()
	if err != nil {
		t.Fatal(err)
	}
	want, err := intentd.MarshalJSON(&s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encode:\n got %s\nwant %s", got, want)
	}
}
