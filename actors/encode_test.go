package actors

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

// TestSnapshotEncode holds the hand-built encoding of a new intent's snapshot to the
// bytes encoding/json writes, and checks that every snapshot reads back as it was.
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
		new  bool // built by hand
	}{
		{"new", newSnap(nil), true},
		{"whole seconds", newSnap(func(s *snapshot) { s.CreatedAt = at.Truncate(time.Second) }), true},
		{"other zone", newSnap(func(s *snapshot) { s.ExpiresAt = at.In(paris) }), true},
		{"zero times", newSnap(func(s *snapshot) { s.CreatedAt, s.ExpiresAt = time.Time{}, time.Time{} }), true},
		{"id to escape", newSnap(func(s *snapshot) { s.ID = "a\"b\\c\u00e9" }), true},
		{"cluster request", newSnap(func(s *snapshot) { s.Request = "5f0e8a42-9b1c-4d3e-8f7a-6b5c4d3e2f1a" }), true},
		{"request to escape", newSnap(func(s *snapshot) { s.Request = "a\"b" }), true},
		{"proposed", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt = intentd.StateProcessing, &intentd.Proposal{Solution: "<M>"}, at
		}), false},
		{"failed", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt = intentd.StateFailure, &intentd.Proposal{Solution: "M"}, at
			s.Evidence, s.Reason, s.FailureKind, s.FinishedAt = json.RawMessage(`{"price_cents":3000}`), "price_cents <= 2500", intentd.FailureConstraints, at
		}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.snap.isNew(); got != tc.new {
				t.Fatalf("isNew = %v, want %v", got, tc.new)
			}
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

func BenchmarkSnapshotEncode(b *testing.B) {
	authored, _ := encodeAuthored([]byte(`{"attrs":{"fields":{"max_price_cents":{"Int":2500},"size":{"String":"M"}}},"id":"0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f","policy_id":"8Xk2pQ"}`), crypto.Authorship{})
	now := time.Now()
	s := &snapshot{V: snapshotVersion, ID: "0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f", PolicyID: "8Xk2pQ",
		Authored: authored, State: intentd.StateOpen, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSnapshotIsNewCoversEveryField guards the hand-built encoding against a field added
// to snapshot later: unless encode writes it, setting it must make isNew false, or new
// snapshots would drop it without a word.
func TestSnapshotIsNewCoversEveryField(t *testing.T) {
	written := map[string]bool{"V": true, "ID": true, "PolicyID": true, "Authored": true, "State": true, "CreatedAt": true, "ExpiresAt": true, "Request": true}
	typ := reflect.TypeFor[snapshot]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if written[f.Name] {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			var s snapshot
			v := reflect.ValueOf(&s).Elem().Field(i)
			switch v.Kind() {
			case reflect.String:
				v.SetString("x")
			case reflect.Pointer:
				v.Set(reflect.New(v.Type().Elem()))
			case reflect.Slice:
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			case reflect.Struct:
				if v.Type() != reflect.TypeFor[time.Time]() {
					t.Fatalf("no non-zero value known for a %s", v.Type())
				}
				v.Set(reflect.ValueOf(time.Unix(1, 0)))
			default:
				t.Fatalf("no non-zero value known for a %s", v.Type())
			}
			if s.isNew() {
				t.Errorf("with %s set, isNew is still true: the hand-built encoding would drop it", f.Name)
			}
		})
	}
}
