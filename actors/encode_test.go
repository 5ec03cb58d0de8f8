package actors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// encodeAuthored is the authored intent of canon and a, as a new intent's snapshot
// holds it.
func encodeAuthored(canon []byte, a crypto.Authorship) ([]byte, error) {
	var s snapshot
	err := s.setAuthored(canon, a)
	return s.Authored, err
}

// snapshotCases are snapshots of every state and of the values that are easy to get
// wrong, for the encoding's tests.
func snapshotCases(t testing.TB) (authored []byte, cases []struct {
	name string
	snap *snapshot
}) {
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
	return authored, []struct {
		name string
		snap *snapshot
	}{
		{"new", newSnap(nil)},
		{"ids from the intent", newSnap(func(s *snapshot) { s.ID, s.PolicyID = "x", "p" })},
		{"empty ids", newSnap(func(s *snapshot) { s.ID, s.PolicyID = "", "" })},
		{"whole seconds", newSnap(func(s *snapshot) { s.CreatedAt = at.Truncate(time.Second) })},
		{"other zone", newSnap(func(s *snapshot) { s.ExpiresAt = at.In(paris) })},
		{"before 1970", newSnap(func(s *snapshot) { s.CreatedAt = time.Date(1969, 7, 20, 20, 17, 40, 1, time.UTC) })},
		{"zero times", newSnap(func(s *snapshot) { s.CreatedAt, s.ExpiresAt = time.Time{}, time.Time{} })},
		{"id to escape", newSnap(func(s *snapshot) { s.ID = "a\"b\\c\u00e9" })},
		{"cluster request", newSnap(func(s *snapshot) { s.Request = "5f0e8a42-9b1c-4d3e-8f7a-6b5c4d3e2f1a" })},
		{"request to escape", newSnap(func(s *snapshot) { s.Request = "a\"b" })},
		{"proposed", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt = intentd.StateProcessing, &intentd.Proposal{Solution: "<M>\u2028\t\x01"}, at
		})},
		{"signed by an agent", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt = intentd.StateProcessing, &intentd.Proposal{Solution: "M"}, at
			s.Agent = &intentd.AgentSignature{Key: "6YqbznDofanj9iShu3oWBb9PUQk9qPhKAenguN2j2xYr", Tag: "agent-payer-auth",
				Nonce: "n\"1", Created: at.Add(-time.Second), Expires: at.Add(time.Minute),
				Base: []byte("\"@method\": POST\n"), Signature: bytes.Repeat([]byte{7}, 64), Body: []byte(`{"solution":"M"}`)}
		})},
		{"signed by an agent, no tag", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt = intentd.StateProcessing, &intentd.Proposal{Solution: "M"}, at
			s.Agent = &intentd.AgentSignature{Key: "k"}
		})},
		{"decided, signed by an agent", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt, s.FinishedAt = intentd.StateSuccess, &intentd.Proposal{Solution: "M"}, at, at
			s.Evidence, s.Receipt = json.RawMessage(`{"size":"M"}`), json.RawMessage(`{"version":3}`)
			s.Agent = &intentd.AgentSignature{Key: "6YqbznDofanj9iShu3oWBb9PUQk9qPhKAenguN2j2xYr", Tag: "agent-payer-auth",
				Nonce: "n1", Created: at.Add(-time.Second), Expires: at.Add(time.Minute),
				Base: []byte("\"@method\": POST\n"), Signature: bytes.Repeat([]byte{7}, 64), Body: []byte(`{"solution":"M"}`)}
		})},
		{"empty solution", newSnap(func(s *snapshot) {
			s.State, s.Proposal, s.ProposedAt = intentd.StateProcessing, &intentd.Proposal{}, at
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
}

// kept is s as its snapshot keeps it: an agent's signature without its nonce and
// times, which are not stored, and without the signature itself once the proposal is
// decided (appendAgent).
func kept(s *snapshot) *snapshot {
	if s.Agent == nil {
		return s
	}
	k, a := s.clone(), *s.Agent
	a.Nonce, a.Created, a.Expires = "", time.Time{}, time.Time{}
	if s.State.Terminal() {
		a.Signature = nil
	}
	k.Agent = &a
	return k
}

// sameSnapshot fails the test unless got holds what want does: the same instants, in
// any zone, the same parts of the authored intent, and every other field equal.
func sameSnapshot(t *testing.T, got, want *snapshot) {
	t.Helper()
	g, w := *got, *want
	for _, p := range []struct{ g, w *time.Time }{{&g.CreatedAt, &w.CreatedAt}, {&g.ExpiresAt, &w.ExpiresAt}, {&g.ProposedAt, &w.ProposedAt}, {&g.FinishedAt, &w.FinishedAt}} {
		if !p.g.Equal(*p.w) {
			t.Fatalf("time read back as %v, want %v", *p.g, *p.w)
		}
		*p.g = *p.w
	}
	// Where the intent ends in Authored is known or found; either way the parts are the
	// same.
	gi, ga, gok := g.authoredParts()
	wi, wa, wok := w.authoredParts()
	if gok != wok || !bytes.Equal(gi, wi) || !bytes.Equal(ga, wa) {
		t.Fatalf("authored parts read back as %s, %s, %v; want %s, %s, %v", gi, ga, gok, wi, wa, wok)
	}
	g.intentLen, w.intentLen = 0, 0
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("read back as\n%+v\nwant\n%+v", g, w)
	}
}

// TestSnapshotEncode checks that every snapshot reads back as it was, in a binary form
// smaller than the JSON it replaced, and that snapshots written as JSON (version 1)
// still read.
func TestSnapshotEncode(t *testing.T) {
	authored, tests := snapshotCases(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.snap.encode()
			if err != nil {
				t.Fatal(err)
			}
			back, err := decodeSnapshot(got)
			if err != nil {
				t.Fatal(err)
			}
			sameSnapshot(t, back, kept(tc.snap))

			// What version 1 wrote: the JSON of the snapshot, as encoding/json writes it.
			v1 := tc.snap.clone()
			v1.V, v1.Agent = 1, nil // version 1 was written before agents signed proposals
			old, err := intentd.MarshalJSON(v1)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) >= len(old) {
				t.Errorf("binary form takes %d bytes, the JSON %d", len(got), len(old))
			}
			back, err = decodeSnapshot(old)
			if err != nil {
				t.Fatal(err)
			}
			sameSnapshot(t, back, v1)
			if receipt := tc.snap.Receipt; receipt != nil {
				v, state, r, err := snapshotReceipt(old)
				if err != nil || v != 1 || state != tc.snap.State || !bytes.Equal(r, receipt) {
					t.Fatalf("snapshotReceipt = %d, %s, %s, %v; want 1, %s, %s", v, state, r, err, tc.snap.State, receipt)
				}
			}
			again, err := back.encode()
			if err != nil {
				t.Fatal(err)
			}
			if tc.snap.Agent == nil && !bytes.Equal(again, got) {
				t.Fatalf("a snapshot read from JSON encodes as\n%x\nnot\n%x", again, got)
			}
		})
	}

	t.Run("ids left to the intent", func(t *testing.T) {
		own, err := tests[0].snap.encode()
		if err != nil {
			t.Fatal(err)
		}
		left, err := tests[1].snap.encode()
		if err != nil {
			t.Fatal(err)
		}
		if want := len(own) - len(tests[0].snap.ID) - len(tests[0].snap.PolicyID) - 4; len(left) != want {
			t.Fatalf("a snapshot whose intent gives its ids takes %d bytes, want %d", len(left), want)
		}
	})
	t.Run("intent kept as signed", func(t *testing.T) {
		data, err := tests[0].snap.encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeSnapshot(data)
		if err != nil {
			t.Fatal(err)
		}
		var a intentd.AuthoredIntent
		if err := json.Unmarshal(back.Authored, &a); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back.Authored, authored) {
			t.Fatalf("stored authored intent %s, want %s", back.Authored, authored)
		}
	})
	t.Run("failure index out of range", func(t *testing.T) {
		s := tests[len(tests)-2].snap.clone()
		s.Failures = []policy.Failure{{Index: -1, PrettyExpr: "e", Reason: "r"}}
		if _, err := s.encode(); err == nil {
			t.Fatal("a negative failure index encoded; it would not read back")
		}
	})
	for _, year := range []int{1677, 2263, 10000} {
		t.Run(fmt.Sprintf("year %d", year), func(t *testing.T) {
			s := tests[0].snap.clone()
			s.ExpiresAt = time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
			if _, err := s.encode(); err == nil {
				t.Fatal("a time outside of Unix nanoseconds must fail to encode")
			}
		})
	}
}

// TestSnapshotVersion1 reads a snapshot as version 1 wrote it to disk.
func TestSnapshotVersion1(t *testing.T) {
	const old = `{"v":1,"id":"00000a7d-4e93-4d5e-bb10-38e661739d69","policy_id":"93kcNXu64iv6i5ZNxZLZRaTJwgxZzBeLiKNK3kb6KdUb",` +
		`"authored":{"intent":{"attrs":{"fields":{"size":{"String":"M"}}},"id":"00000a7d-4e93-4d5e-bb10-38e661739d69","policy_id":"93kcNXu64iv6i5ZNxZLZRaTJwgxZzBeLiKNK3kb6KdUb"},` +
		`"authorship":{"Signed":{"Ed25519":{"pub_key":"EXaytkb91qHD38ddMWnRipf5MYEVPrRKWrEcsAP7Wfik","signature":"65jKzbHP11oQhYtjqUkGNBYdXLe8zgoTf63edMTJYkBKVTdkHbjqJYQBtB1PVCz9TV2eSPY9FuEUxgNdzrVFky2H"}}}},` +
		`"state":"open","created_at":"2026-11-28T03:01:52.231138761+01:00","expires_at":"2026-12-28T02:01:52.231138761Z"}`
	s, err := decodeSnapshot([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 28, 2, 1, 52, 231138761, time.UTC)
	if s.ID != "00000a7d-4e93-4d5e-bb10-38e661739d69" || s.State != intentd.StateOpen || !s.CreatedAt.Equal(created) ||
		!s.ExpiresAt.Equal(created.AddDate(0, 1, 0)) || !strings.HasPrefix(string(s.Authored), `{"intent":{"attrs"`) {
		t.Fatalf("read %+v", s)
	}
	intent, auth, ok := cutAuthored(s.Authored)
	if !ok || !strings.HasSuffix(string(intent), `KdUb"}`) || !strings.HasPrefix(string(auth), `{"Signed"`) {
		t.Fatalf("cutAuthored = %s, %s, %v", intent, auth, ok)
	}
	if _, err := decodeSnapshot([]byte(strings.Replace(old, `"v":1`, `"v":2`, 1))); err == nil {
		t.Fatal("JSON of version 2 read; only version 1 was ever JSON")
	}
}

// TestCutAuthored splits authored intents whose intent holds the separator itself.
func TestCutAuthored(t *testing.T) {
	passkey := crypto.Authorship{Signature: &crypto.Signature{Passkey: &crypto.PasskeySignature{
		PubKey: bytes.Repeat([]byte{2}, crypto.P256CompressedLen), Signature: bytes.Repeat([]byte{1}, crypto.P256RawSignatureLen),
		ClientData: `{"x":1,"authorship":{}}`, AuthenticatorData: []byte{5}}}}
	for _, tc := range []struct {
		name   string
		intent string
		a      crypto.Authorship
	}{
		{"plain", `{"id":"x"}`, crypto.Authorship{}},
		{"member named authorship", `{"attrs":{"fields":{"a":{"Int":1},"authorship":{"Int":2}}},"id":"x"}`, crypto.Authorship{}},
		{"passkey client data", `{"id":"x","policy_id":"p"}`, passkey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			authored, err := encodeAuthored([]byte(tc.intent), tc.a)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tc.a.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			intent, auth, ok := cutAuthored(authored)
			if !ok || string(intent) != tc.intent || !bytes.Equal(auth, want) {
				t.Fatalf("cutAuthored = %s, %s, %v", intent, auth, ok)
			}
			// A snapshot built from the parts finds them where it put them, and
			// encodes as one read from JSON, which cuts them.
			var built snapshot
			if err := built.setAuthored([]byte(tc.intent), tc.a); err != nil {
				t.Fatal(err)
			}
			intent, auth, ok = built.authoredParts()
			if !ok || string(intent) != tc.intent || !bytes.Equal(auth, want) || !bytes.Equal(built.Authored, authored) {
				t.Fatalf("authoredParts = %s, %s, %v", intent, auth, ok)
			}
			built.V, built.ID, built.PolicyID, built.State = snapshotVersion, "x", "p", intentd.StateOpen
			cut := built
			cut.intentLen = 0
			a, errA := built.encode()
			b, errB := cut.encode()
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Fatalf("encoded with the parts known: %x, %v; cut: %x, %v", a, errA, b, errB)
			}
		})
	}
	if _, _, ok := cutAuthored([]byte(`{"intent":{}}`)); ok {
		t.Fatal("an authored intent without its authorship split")
	}
}

// TestIntentIDs reads the ids from the end of canonical intents, and gives nothing
// where they are not there as plain strings.
func TestIntentIDs(t *testing.T) {
	for _, tc := range []struct {
		intent, id, policyID string
		found                bool
	}{
		{`{"attrs":{"fields":{"size":{"String":"M"}}},"id":"0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f","policy_id":"8Xk2pQ"}`, "0b7c2d1e-5f3a-4c8b-9d0e-1a2b3c4d5e6f", "8Xk2pQ", true},
		{`{"id":"x","policy_id":"p"}`, "x", "p", true},
		{`{"attrs":{"fields":{"id":{"String":"y"}}},"id":"x","policy_id":"p"}`, "x", "p", true},
		{`{"id":"","policy_id":""}`, "", "", true},
		{`{"id":"a\"b","policy_id":"p"}`, "", "", false},
		{`{"id":"x","policy_id":"p\u0041"}`, "", "", false},
		{`{"id":"x"}`, "", "", false},
		{`{"policy_id":"p"}`, "", "", false},
		{`{"xid":"x","policy_id":"p"}`, "", "", false},
		{`{"id":"x","policy_id":"p","z":1}`, "", "", false},
		{`0,"id":"0","policy_id":"}`, "", "", false},
		{``, "", "", false},
	} {
		t.Run(tc.intent, func(t *testing.T) {
			id, policyID, found := intentIDs([]byte(tc.intent))
			if id != tc.id || policyID != tc.policyID || found != tc.found {
				t.Fatalf("intentIDs = %q, %q, %v; want %q, %q, %v", id, policyID, found, tc.id, tc.policyID, tc.found)
			}
		})
	}
}

// TestSnapshotDecodeRefuses checks that damaged binary snapshots are errors, never a
// snapshot with fields missing or misread.
func TestSnapshotDecodeRefuses(t *testing.T) {
	_, cases := snapshotCases(t)
	good, err := cases[len(cases)-1].snap.encode()
	if err != nil {
		t.Fatal(err)
	}
	field := func(num protowire.Number, typ protowire.Type, v []byte) []byte {
		b := protowire.AppendTag(nil, num, typ)
		if typ == protowire.BytesType {
			return protowire.AppendBytes(b, v)
		}
		return protowire.AppendVarint(b, 7)
	}
	head := field(fieldVersion, protowire.VarintType, nil)[:1]
	head = protowire.AppendVarint(head, snapshotVersion)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"cut short", good[:len(good)-3]},
		{"unknown field", append(bytes.Clone(good), field(40, protowire.BytesType, []byte("x"))...)},
		{"field twice", append(bytes.Clone(good), field(fieldState, protowire.BytesType, []byte("open"))...)},
		{"wrong wire type", append(bytes.Clone(head), field(fieldState, protowire.VarintType, nil)...)},
		{"no version", good[len(head):]},
		{"version 3", append(protowire.AppendVarint(bytes.Clone(head[:1]), 3), good[len(head):]...)},
		{"no authored intent", append(bytes.Clone(head), field(fieldID, protowire.BytesType, []byte("x"))...)},
		{"no id anywhere", append(append(bytes.Clone(head), field(fieldIntent, protowire.BytesType, []byte("{}"))...),
			field(fieldAuthorship, protowire.BytesType, []byte(`"Unsigned"`))...)},
		{"failure cut short", append(bytes.Clone(good), field(fieldFailure, protowire.BytesType, []byte{0x08})...)},
		{"JSON cut short", []byte(`{"v":1,"id":`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := decodeSnapshot(tc.data); err == nil {
				t.Fatalf("decoded %+v", s)
			}
		})
	}
}

// FuzzDecodeSnapshot feeds the decoder damaged and made-up records: it must not panic,
// and whatever it reads must encode and read back the same.
func FuzzDecodeSnapshot(f *testing.F) {
	_, cases := snapshotCases(f)
	for _, tc := range cases {
		data, err := tc.snap.encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		again, err := s.encode()
		if err != nil {
			return // read from JSON: an authored intent or a time the binary form cannot hold
		}
		back, err := decodeSnapshot(again)
		if err != nil {
			t.Fatalf("re-encoded snapshot does not read: %v", err)
		}
		if third, err := back.encode(); err != nil || !bytes.Equal(third, again) {
			t.Fatalf("encoded again as %x, %v; want %x", third, err, again)
		}
		if data[0] != '{' && (back.ID != s.ID || back.State != s.State || !bytes.Equal(back.Authored, s.Authored) || len(back.Failures) != len(s.Failures)) {
			t.Fatalf("read back as %+v, want %+v", back, s)
		}
	})
}

// BenchmarkSnapshotEncode measures the encoding and decoding of a new intent's snapshot
// and of a failed one's (17 failures), beside those of the JSON of version 1.
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
		b.Run(s.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := intentd.MarshalJSON(s.snap); err != nil {
					b.Fatal(err)
				}
			}
		})
		data, err := s.snap.encode()
		if err != nil {
			b.Fatal(err)
		}
		old, err := intentd.MarshalJSON(s.snap)
		if err != nil {
			b.Fatal(err)
		}
		old = bytes.Replace(old, []byte(`"v":2`), []byte(`"v":1`), 1)
		for _, d := range []struct {
			name string
			data []byte
		}{{"decode", data}, {"decode/json", old}} {
			b.Run(s.name+"/"+d.name, func(b *testing.B) {
				b.ReportAllocs()
				b.ReportMetric(float64(len(d.data)), "bytes")
				for b.Loop() {
					if _, err := decodeSnapshot(d.data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestSnapshotEncodeCoversEveryField guards the encoding against a field added to
// snapshot later: with every field set, the snapshot must read back whole, which would
// show a field encode does not write.
func TestSnapshotEncodeCoversEveryField(t *testing.T) {
	var s snapshot
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue // derived from the stored fields, not stored
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(snapshotVersion)
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
	// The authored intent must be one, an intent and its authorship.
	authored, err := encodeAuthored([]byte(`{"id":"x"}`), crypto.Authorship{})
	if err != nil {
		t.Fatal(err)
	}
	s.Authored = authored
	got, err := s.encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeSnapshot(got)
	if err != nil {
		t.Fatal(err)
	}
	sameSnapshot(t, back, &s)
}
