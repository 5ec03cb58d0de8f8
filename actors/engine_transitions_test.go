package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/storetest"
)

// TestTransitions covers each row of the state table of spec part 3 and each refusal.
func TestTransitions(t *testing.T) {
	tests := slices.Concat(submitTransitions(), outcomeTransitions(), proposalTransitions(), policyTransitions())
	eachStore(t, func(t *testing.T, backend storetest.Backend) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tt.run(t, newHarnessOn(t, backend, tt.cfg))
			})
		}
	})
}

// submitTransitions are the rows of a submission: stored as an open intent, or refused.
func submitTransitions() []harnessCase {
	ctx := context.Background()
	return []harnessCase{
		{"submit makes an open intent and no event", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			if s := h.status(id); s.State != intentd.StateOpen {
				t.Fatalf("state = %s, want open", s.State)
			}
			if _, last, _ := h.store.EventBounds(ctx); last != 0 {
				t.Fatalf("an event was written for a submission")
			}
			raw, err := h.e.GetIntent(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var got intentd.AuthoredIntent
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("stored intent is not an AuthoredIntent: %v", err)
			}
			if err := crypto.Verify(got.Intent, got.Authorship, crypto.VerifyOptions{}); err != nil {
				t.Fatalf("the stored intent no longer verifies: %v", err)
			}
		}},
		{"same id twice is a conflict", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			raw := h.intentJSON(id, "L", 1)
			auth, _ := crypto.SignEd25519(h.key, raw)
			wantCode(t, submitRaw(ctx, h.e, raw, auth), intentd.KindConflict, intentd.CodeIntentExists)
			raw, _ = h.e.GetIntent(ctx, id)
			if !strings.Contains(string(raw), `"M"`) {
				t.Fatalf("the first intent was overwritten: %s", raw)
			}
		}},
		{"unknown policy", nil, func(t *testing.T, h *harness) {
			raw := []byte(fmt.Sprintf(`{"id":%q,"policy_id":"11111111111111111111111111111111"}`, uuid.NewString()))
			auth, _ := crypto.SignEd25519(h.key, raw)
			wantCode(t, submitRaw(ctx, h.e, raw, auth), intentd.KindInvalid, intentd.CodePolicyNotFound)
		}},
		{"bad signature", nil, func(t *testing.T, h *harness) {
			raw := h.intentJSON(uuid.NewString(), "M", 2500)
			auth, _ := crypto.SignEd25519(h.key, h.intentJSON(uuid.NewString(), "M", 2500))
			err := submitRaw(ctx, h.e, raw, auth)
			wantCode(t, err, intentd.KindInvalid, intentd.CodeAuthorshipInvalid)
			// The message reads as docs/authorship.md shows it, with no second prefix.
			var e *intentd.Error
			if !errors.As(err, &e) || e.Message != "authorship invalid: ed25519: signature does not verify" {
				t.Fatalf("message %q, want %q", e.Message, "authorship invalid: ed25519: signature does not verify")
			}
		}},
		{"unsigned refused by default", nil, func(t *testing.T, h *harness) {
			raw := h.intentJSON(uuid.NewString(), "M", 2500)
			wantCode(t, submitRaw(ctx, h.e, raw, crypto.Authorship{}), intentd.KindInvalid, intentd.CodeUnsignedNotPermitted)
		}},
		{"unsigned accepted when permitted", func(c *Config) { c.Verify.AllowUnsigned = true }, func(t *testing.T, h *harness) {
			raw := h.intentJSON(uuid.NewString(), "M", 2500)
			if err := submitRaw(ctx, h.e, raw, crypto.Authorship{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"attrs that do not match the parameters", nil, func(t *testing.T, h *harness) {
			raw := []byte(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"Int":3},"max_price_cents":{"Int":1}}}}`, uuid.NewString(), h.policy))
			auth, _ := crypto.SignEd25519(h.key, raw)
			wantCode(t, submitRaw(ctx, h.e, raw, auth), intentd.KindUnprocessable, intentd.CodeAttrsMismatch)
		}},
		{"integers JCS cannot carry exactly", func(c *Config) { c.Verify.AllowUnsigned = true }, func(t *testing.T, h *harness) {
			for _, tc := range []struct {
				attr string
				ok   bool
			}{
				{`{"Int":9007199254740991}`, true},
				{`{"Int":-9007199254740991}`, true},
				{`{"Int":9007199254740992}`, false},
				{`{"Int":-9007199254740993}`, false},
			} {
				raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":%s}}}`, uuid.NewString(), h.policy, tc.attr)
				err := submitRaw(ctx, h.e, raw, crypto.Authorship{})
				if tc.ok && err != nil {
					t.Errorf("%s: %v", tc.attr, err)
				}
				if !tc.ok {
					wantCode(t, err, intentd.KindUnprocessable, intentd.CodeInvalidIntent)
				}
			}
		}},
		{"malformed intent", nil, func(t *testing.T, h *harness) {
			for _, raw := range []string{
				`{"id":"not-a-uuid","policy_id":"11111111111111111111111111111111"}`,
				`{"id":"` + uuid.NewString() + `","policy_id":"11111111111111111111111111111111","attrs":null}`,
				`{"id":"` + uuid.NewString() + `","policy_id":"11111111111111111111111111111111","extra":1}`,
				`{"id":"` + uuid.NewString() + `"}`,
				`[]`,
			} {
				wantCode(t, submitRaw(ctx, h.e, []byte(raw), crypto.Authorship{}), intentd.KindUnprocessable, intentd.CodeInvalidIntent)
			}
		}},
	}
}

// outcomeTransitions are the rows of a proposal proved: to success or to each kind of
// failure.
func outcomeTransitions() []harnessCase {
	return []harnessCase{
		{"open to processing to success", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			if err := proposeTo(h, id, "M-cheap"); err != nil {
				t.Fatal(err)
			}
			s := h.waitState(id, intentd.StateSuccess)
			if s.Proposal == nil || s.Proposal.Solution != "M-cheap" || !strings.Contains(string(s.Evidence), `"price_cents":1999`) {
				t.Fatalf("success status = %+v", s)
			}
			evs := h.events(0, 1)
			if evs[0].Type != intentd.StateSuccess || evs[0].IntentID != id || evs[0].ID == 0 {
				t.Fatalf("event = %+v", evs[0])
			}
		}},
		{"constraint violation fails with every failure", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			if err := proposeTo(h, id, "L-dear"); err != nil {
				t.Fatal(err)
			}
			s := h.waitState(id, intentd.StateFailure)
			if s.FailureKind != intentd.FailureConstraints || len(s.Failures) != 2 || s.Failures[0].Index != 0 || s.Failures[1].Index != 1 {
				t.Fatalf("failure status = %+v", s)
			}
			if len(s.Evidence) == 0 {
				t.Fatal("a constraint failure must carry the evidence")
			}
		}},
		{"missing evidence fails closed, of kind evidence", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			proposeTo(h, id, "M-no-size")
			s := h.waitState(id, intentd.StateFailure)
			if s.FailureKind != intentd.FailureEvidence || len(s.Failures) != 1 || s.Failures[0].Index != 0 ||
				!reflect.DeepEqual(s.EvidenceMissing, []string{"size"}) || !strings.HasPrefix(s.Reason, "the evidence lacks what the policy reads (size): ") {
				t.Fatalf("failure status = %+v", s)
			}
			evs := h.events(0, 1)
			if !strings.Contains(string(evs[0].Data), `"failure_kind":"evidence","proposal":{"solution":"M-no-size"},"constraint_failures":[{"index":0,`) ||
				!strings.Contains(string(evs[0].Data), `"evidence_missing":["size"]`) {
				t.Fatalf("event = %s", evs[0].Data)
			}
		}},
		{"every field missing names each", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			proposeTo(h, id, "no-evidence")
			s := h.waitState(id, intentd.StateFailure)
			if s.FailureKind != intentd.FailureEvidence || len(s.Failures) != 2 || !reflect.DeepEqual(s.EvidenceMissing, []string{"price_cents", "size"}) {
				t.Fatalf("failure status = %+v", s)
			}
		}},
		{"a violation beside missing evidence is of kind constraints and names the missing field", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			proposeTo(h, id, "L-no-price")
			s := h.waitState(id, intentd.StateFailure)
			if s.FailureKind != intentd.FailureConstraints || len(s.Failures) != 2 || !reflect.DeepEqual(s.EvidenceMissing, []string{"price_cents"}) ||
				!strings.HasPrefix(s.Reason, "2 constraints not satisfied: ") {
				t.Fatalf("failure status = %+v", s)
			}
		}},
		{"a violation names no missing evidence", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			proposeTo(h, id, "L-dear")
			s := h.waitState(id, intentd.StateFailure)
			if s.FailureKind != intentd.FailureConstraints || s.EvidenceMissing != nil {
				t.Fatalf("failure status = %+v", s)
			}
			if data, _ := json.Marshal(s); strings.Contains(string(data), "evidence_missing") {
				t.Fatalf("status JSON %s names missing evidence", data)
			}
		}},
		{"extraction failure", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			proposeTo(h, id, "fail:x")
			s := h.waitState(id, intentd.StateFailure)
			if s.FailureKind != intentd.FailureExtraction || !strings.Contains(s.Reason, "404") || len(s.Evidence) != 0 {
				t.Fatalf("failure status = %+v", s)
			}
			raw, _ := json.Marshal(s)
			if strings.Contains(string(raw), `"evidence"`) || !strings.Contains(string(raw), `"constraint_failures":[]`) {
				t.Fatalf("failure JSON = %s", raw)
			}
		}},
		{"a panicking extractor fails the proof, not the service", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			proposeTo(h, id, "panic:x")
			if s := h.waitState(id, intentd.StateFailure); s.FailureKind != intentd.FailureProof {
				t.Fatalf("failure status = %+v", s)
			}
		}},
	}
}

// proposalTransitions are the rows of a proposal refused, or held until proving has room.
func proposalTransitions() []harnessCase {
	return []harnessCase{
		{"second proposal is a conflict", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			proposeTo(h, id, "M-cheap")
			wantCode(t, proposeTo(h, id, "M-cheap"), intentd.KindConflict, intentd.CodeProposalExists)
			h.waitState(id, intentd.StateSuccess)
			wantCode(t, proposeTo(h, id, "M-cheap"), intentd.KindConflict, intentd.CodeProposalExists)
		}},
		{"proposal for no intent", nil, func(t *testing.T, h *harness) {
			wantCode(t, proposeTo(h, uuid.NewString(), "M-cheap"), intentd.KindNotFound, intentd.CodeIntentNotFound)
			wantCode(t, proposeTo(h, "nope", "M-cheap"), intentd.KindInvalid, intentd.CodeInvalidID)
		}},
		{"bad solutions", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			wantCode(t, proposeTo(h, id, ""), intentd.KindUnprocessable, intentd.CodeInvalidProposal)
			wantCode(t, proposeTo(h, id, strings.Repeat("x", intentd.MaxSolutionBytes+1)), intentd.KindUnprocessable, intentd.CodeInvalidProposal)
			if s := h.status(id); s.State != intentd.StateOpen {
				t.Fatalf("a refused proposal changed the state to %s", s.State)
			}
		}},
		{"open to expired, then proposals refused", func(c *Config) { c.IntentTTL = 30 * time.Millisecond }, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			h.waitState(id, intentd.StateExpired)
			wantCode(t, proposeTo(h, id, "M-cheap"), intentd.KindConflict, intentd.CodeIntentExpired)
			evs := h.events(0, 1)
			if evs[0].Type != intentd.StateExpired || string(evs[0].Data) != fmt.Sprintf(`{"type":"expired","intent_id":%q}`, id) {
				t.Fatalf("event = %+v %s", evs[0], evs[0].Data)
			}
		}},
		{"capacity full is busy and changes nothing", func(c *Config) { c.MaxProving = 1; c.ProvingQueue = 0 }, func(t *testing.T, h *harness) {
			first, second := h.submit("M", 2500), h.submit("M", 2500)
			if err := proposeTo(h, first, "block:M-cheap"); err != nil {
				t.Fatal(err)
			}
			<-h.ext.started
			wantCode(t, proposeTo(h, second, "M-cheap"), intentd.KindBusy, intentd.CodeCapacityExceeded)
			if s := h.status(second); s.State != intentd.StateOpen {
				t.Fatalf("a refused proposal moved the intent to %s", s.State)
			}
			close(h.ext.release)
			h.waitState(first, intentd.StateSuccess)
			// Whoever sees the outcome finds the place free.
			if err := proposeTo(h, second, "M-cheap"); err != nil {
				t.Fatalf("proposal after the first outcome: %v", err)
			}
			h.waitState(second, intentd.StateSuccess)
		}},
		{"queued proposals wait for a slot", func(c *Config) { c.MaxProving = 1; c.ProvingQueue = 2 }, func(t *testing.T, h *harness) {
			ids := []string{h.submit("M", 2500), h.submit("M", 2500), h.submit("M", 2500), h.submit("M", 2500)}
			for _, id := range ids[:3] {
				if err := proposeTo(h, id, "block:M-cheap"); err != nil {
					t.Fatal(err)
				}
			}
			wantCode(t, proposeTo(h, ids[3], "M-cheap"), intentd.KindBusy, intentd.CodeCapacityExceeded)
			for _, id := range ids[:3] {
				if s := h.status(id); s.State != intentd.StateProcessing {
					t.Fatalf("queued intent is %s, want processing", s.State)
				}
			}
			close(h.ext.release)
			for _, id := range ids[:3] {
				h.waitState(id, intentd.StateSuccess)
			}
		}},
	}
}

// policyTransitions are the rows of deleting a policy that intents use.
func policyTransitions() []harnessCase {
	ctx := context.Background()
	return []harnessCase{
		{"policy delete refused while in use", nil, func(t *testing.T, h *harness) {
			id := h.submit("M", 2500)
			wantCode(t, h.e.DeletePolicy(ctx, h.policy), intentd.KindConflict, intentd.CodePolicyInUse)
			proposeTo(h, id, "block:M-cheap")
			wantCode(t, h.e.DeletePolicy(ctx, h.policy), intentd.KindConflict, intentd.CodePolicyInUse)
			close(h.ext.release)
			h.waitState(id, intentd.StateSuccess)
			if err := h.e.DeletePolicy(ctx, h.policy); err != nil {
				t.Fatalf("delete after the intent finished: %v", err)
			}
			wantCode(t, h.e.DeletePolicy(ctx, h.policy), intentd.KindNotFound, intentd.CodePolicyNotFound)
			if _, err := h.e.GetIntent(ctx, id); err != nil {
				t.Fatalf("intent unreadable after its policy was deleted: %v", err)
			}
			if s := h.status(id); s.State != intentd.StateSuccess {
				t.Fatalf("status after policy delete = %s", s.State)
			}
			again, err := h.e.PutPolicy(ctx, testPolicy)
			if err != nil || again != h.policy {
				t.Fatalf("re-posting the source = %s, %v; want the same id %s", again, err, h.policy)
			}
		}},
	}
}

// TestRestartMidProcessing closes the engine while proposals are being proved and checks
// that, re-opened on the same store, each reaches a terminal state with exactly one event.
func TestRestartMidProcessing(t *testing.T) { eachStore(t, testRestartMidProcessing) }

func testRestartMidProcessing(t *testing.T, backend storetest.Backend) {
	h := newHarnessOn(t, backend, func(c *Config) { c.MaxProving = 4 })
	const n = 20
	ids := h.interruptProposals(n)
	h.open()
	for _, id := range ids {
		h.waitState(id, intentd.StateSuccess)
	}
	evs := h.events(0, n)
	wantIncreasing(t, evs)
	seen := map[string]int{}
	for _, ev := range evs {
		seen[ev.IntentID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Fatalf("intent %s has %d events, want 1", id, seen[id])
		}
	}
}

// interruptProposals submits n intents and proposes to each, closes the engine while
// their proving is under way, and lets proving go on once the engine is opened again.
func (h *harness) interruptProposals(n int) []string {
	h.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.submit("M", 2500)
		if err := proposeTo(h, ids[i], "block:M-cheap"); err != nil {
			h.t.Fatal(err)
		}
	}
	<-h.ext.started
	h.close()
	h.ext.release = make(chan struct{})
	close(h.ext.release)
	return ids
}

// TestVersion1Snapshot serves an intent whose state an earlier version wrote as JSON:
// read, proposed to and decided as any other, and written in the binary form at its
// change.
func TestVersion1Snapshot(t *testing.T) { eachStore(t, testVersion1Snapshot) }

func testVersion1Snapshot(t *testing.T, backend storetest.Backend) {
	h := newHarnessOn(t, backend, withProver)
	ctx := context.Background()
	id := uuid.NewString()
	raw := h.intentJSON(id, "M", 2500)
	auth, err := crypto.SignEd25519(h.key, raw)
	if err != nil {
		t.Fatal(err)
	}
	in, err := intentd.DecodeIntent(raw)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := intentd.NewSubmission(in, raw, auth)
	if err != nil {
		t.Fatal(err)
	}
	authored, err := encodeAuthored(sub.Canonical, auth)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old, err := intentd.MarshalJSON(&snapshot{V: 1, ID: id, PolicyID: h.policy, Authored: authored,
		State: intentd.StateOpen, CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.CreateIntent(ctx, id, h.policy, old, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	if got, err := h.e.GetIntent(ctx, id); err != nil || !bytes.Equal(got, authored) {
		t.Fatalf("GetIntent = %s, %v; want %s", got, err, authored)
	}
	if st := h.status(id); st.State != intentd.StateOpen {
		t.Fatalf("status %+v, want open", st)
	}
	if err := proposeTo(h, id, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, intentd.StateSuccess)
	data, err := h.store.Intent(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if data[0] == '{' {
		t.Fatalf("the decided intent is still kept as JSON: %.60s", data)
	}
	if s, err := decodeSnapshot(data); err != nil || s.State != intentd.StateSuccess || !bytes.Equal(s.Authored, authored) {
		t.Fatalf("stored %+v, %v", s, err)
	}
	if _, err := h.e.Proof(ctx, id); err != nil {
		t.Fatalf("Proof: %v", err)
	}
	if _, err := h.e.Receipt(ctx, id); err != nil {
		t.Fatalf("Receipt: %v", err)
	}
}

// TestTimelineInUTC reads an intent's times in UTC whether its actor is live or its
// snapshot was read back from the store, on a server whose clock is in another zone.
func TestTimelineInUTC(t *testing.T) {
	paris := time.FixedZone("Paris", 3600)
	h := newHarness(t, func(c *Config) { c.Now = func() time.Time { return time.Now().In(paris) } })
	id := h.submit("M", 2500)
	live, err := h.e.Timeline(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	h.close()
	h.open()
	back, err := h.e.Timeline(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range []intentd.Timeline{live, back} {
		if tl.CreatedAt.Location() != time.UTC || tl.ExpiresAt.Location() != time.UTC {
			t.Fatalf("timeline %+v, want its times in UTC", tl)
		}
	}
	if !live.CreatedAt.Equal(back.CreatedAt) {
		t.Fatalf("created at %v live, %v read back", live.CreatedAt, back.CreatedAt)
	}
}

// TestExpiryWhileDown expires, at start-up, intents whose time passed while the engine
// was closed.
func TestExpiryWhileDown(t *testing.T) { eachStore(t, testExpiryWhileDown) }

func testExpiryWhileDown(t *testing.T, backend storetest.Backend) {
	h := newHarnessOn(t, backend, func(c *Config) { c.IntentTTL = 100 * time.Millisecond; c.ExpiryInterval = time.Hour })
	id := h.submit("M", 2500)
	h.close()
	time.Sleep(150 * time.Millisecond)
	h.open()
	data, err := h.store.Intent(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := decodeSnapshot(data); err != nil || s.State != intentd.StateExpired {
		t.Fatalf("after start-up the intent is %+v, %v; want expired before Ready", s, err)
	}
	if evs := h.events(0, 1); evs[0].Type != intentd.StateExpired {
		t.Fatalf("event = %+v", evs[0])
	}
}
