package actors

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/proof"
	"github.com/intentd/intentd/storetest"
)

// testMandatePolicy is a mandate's policy over the test catalog: one purchase of the
// size at most max_price_cents, all of them together at most budget_cents, at most
// max_purchases of them and per_week in a week.
const testMandatePolicy = `
name test_mandate
amount evidence.price_cents
period week
parameters { size: string  max_price_cents: int  budget_cents: int  max_purchases: int  per_week: int }
evidence { size: string  price_cents: int }
requires {
  evidence.size == parameters.size;
  evidence.price_cents <= parameters.max_price_cents;
  mandate.spent + purchase.amount <= parameters.budget_cents;
  mandate.purchases < parameters.max_purchases;
  mandate.period_purchases < parameters.per_week;
}
`

// mandateHarness is a harness with the mandate policy and a t-shirt of 24.98.
type mandateHarness struct {
	*harness
	policyID string
}

func newMandateHarness(t *testing.T, backend storetest.Backend, tweak func(*Config)) *mandateHarness {
	t.Helper()
	return asMandate(newHarnessOn(t, backend, tweak))
}

// asMandate stores the mandate policy through h's engine and puts the t-shirt in its
// catalog.
func asMandate(h *harness) *mandateHarness {
	h.t.Helper()
	id, err := h.e.PutPolicy(context.Background(), testMandatePolicy)
	if err != nil {
		h.t.Fatal(err)
	}
	h.ext.mu.Lock()
	h.ext.catalog["M-2498"] = evidence.Evidence{"size": "M", "price_cents": json.Number("2498")}
	h.ext.mu.Unlock()
	return &mandateHarness{harness: h, policyID: id}
}

// limits are a mandate's attrs.
type limits struct{ maxPrice, budget, maxPurchases, perWeek int }

// create stores a mandate of the limits, signed by key, expiring at expires.
func (h *mandateHarness) create(l limits, key ed25519.PrivateKey, expires time.Time) string {
	h.t.Helper()
	id := uuid.NewString()
	raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"expires_at":%q,"attrs":{"fields":{"size":{"String":"M"},`+
		`"max_price_cents":{"Int":%d},"budget_cents":{"Int":%d},"max_purchases":{"Int":%d},"per_week":{"Int":%d}}}}`,
		id, h.policyID, expires.UTC().Format(time.RFC3339), l.maxPrice, l.budget, l.maxPurchases, l.perWeek)
	md, err := intentd.DecodeMandate(raw)
	if err != nil {
		h.t.Fatal(err)
	}
	auth, err := crypto.SignEd25519(key, raw)
	if err != nil {
		h.t.Fatal(err)
	}
	sub, err := intentd.NewMandateSubmission(md, raw, auth)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.e.CreateMandate(context.Background(), sub); err != nil {
		h.t.Fatalf("CreateMandate: %v", err)
	}
	return id
}

// purchaseAll makes n purchases of solution at once and waits for each to end; it
// returns the intents taken by state, and the refusals by code.
func (h *mandateHarness) purchaseAll(mandateID string, n int, solution string) (map[intentd.State][]string, map[string]int) {
	h.t.Helper()
	return purchaseThrough([]*mandateHarness{h}, mandateID, n, solution)
}

// purchaseThrough is purchaseAll with the purchases sent through each of hs in turn,
// as to the members of a cluster.
func purchaseThrough(hs []*mandateHarness, mandateID string, n int, solution string) (map[intentd.State][]string, map[string]int) {
	hs[0].t.Helper()
	var mu sync.Mutex
	var taken []string
	refused := map[string]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := uuid.NewString()
			err := hs[i%len(hs)].e.Purchase(context.Background(), mandateID, intentd.Purchase{IntentID: id, Solution: solution}, nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused[intentd.ErrorCode(err)]++
				return
			}
			taken = append(taken, id)
		})
	}
	wg.Wait()
	byState := map[intentd.State][]string{}
	for i, id := range taken {
		st := hs[i%len(hs)].waitTerminal(id)
		byState[st.State] = append(byState[st.State], id)
	}
	return byState, refused
}

// waitTerminal waits for an intent to end and returns its status.
func (h *mandateHarness) waitTerminal(id string) intentd.Status {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := h.e.Status(context.Background(), id)
		if err == nil && st.State.Terminal() {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("intent %s did not end: %+v, %v", id, st, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *mandateHarness) mandateStatus(id string) intentd.MandateStatus {
	h.t.Helper()
	st, err := h.e.MandateStatus(context.Background(), id)
	if err != nil {
		h.t.Fatalf("MandateStatus: %v", err)
	}
	return st
}

// TestMandateLimits makes twenty purchases of a t-shirt of 24.98 at once under each of
// a mandate's limits, on every store: exactly the purchases the limit allows succeed,
// every other one fails naming the limit or is refused once the mandate is exhausted,
// and the totals are the successes'.
func TestMandateLimits(t *testing.T) {
	eachStore(t, func(t *testing.T, backend storetest.Backend) {
		for _, tt := range limitCases {
			t.Run(tt.name, func(t *testing.T) {
				h := newMandateHarness(t, backend, withProver)
				id := h.create(tt.l, h.key, time.Now().Add(time.Hour))
				byState, refused := h.purchaseAll(id, 20, "M-2498")
				h.verifyPurchases(id, byState)
				h.checkLimit(id, byState, refused, tt.successes, tt.names, tt.state)
			})
		}
	})
}

// limitCases are a mandate under each of its limits in turn, for twenty purchases of a
// t-shirt of 24.98: the successes the limit allows, what the failures name, and the
// state the mandate ends in.
var limitCases = []struct {
	name      string
	l         limits
	successes int
	names     string
	state     intentd.MandateState
}{
	{"budget", limits{maxPrice: 3000, budget: 5000, maxPurchases: 100, perWeek: 100}, 2, "parameters.budget_cents", intentd.MandateActive},
	{"count", limits{maxPrice: 3000, budget: 100000, maxPurchases: 2, perWeek: 100}, 2, "parameters.max_purchases", intentd.MandateExhausted},
	{"week", limits{maxPrice: 3000, budget: 100000, maxPurchases: 100, perWeek: 3}, 3, "parameters.per_week", intentd.MandateActive},
}

// checkLimit checks the end of twenty purchases under one limit: the successes it
// allows, every failure naming it, every refusal one of an exhausted mandate, and the
// totals the successes'.
func (h *mandateHarness) checkLimit(id string, byState map[intentd.State][]string, refused map[string]int,
	successes int, names string, state intentd.MandateState) {
	t := h.t
	t.Helper()
	if got := len(byState[intentd.StateSuccess]); got != successes {
		t.Fatalf("%d successes, want %d (%v, refused %v)", got, successes, byState, refused)
	}
	for _, fid := range byState[intentd.StateFailure] {
		if st := h.status(fid); !strings.Contains(st.Reason, names) || st.MandateID != id {
			t.Errorf("failure %s: %q (mandate %q), want it to name %s", fid, st.Reason, st.MandateID, names)
		}
	}
	for code, n := range refused {
		if code != intentd.CodeMandateExhausted {
			t.Errorf("%d purchases refused with %s", n, code)
		}
	}
	decided := len(byState[intentd.StateSuccess]) + len(byState[intentd.StateFailure])
	if n := decided + refused[intentd.CodeMandateExhausted]; n != 20 {
		t.Errorf("%d purchases accounted for, want 20: %v %v", n, byState, refused)
	}
	st := h.mandateStatus(id)
	if st.Spent != int64(2498*successes) || st.Purchases != int64(successes) || st.Status != state {
		t.Fatalf("status %+v, want spent %d in %d purchases, %s", st, 2498*successes, successes, state)
	}
	if len(st.Intents) != decided {
		t.Errorf("status lists %d intents, %d were taken", len(st.Intents), decided)
	}
}

// verifyPurchases checks the proof of every purchase decided: it verifies offline,
// binds the mandate, and the successes' totals before each are the sums of the
// successes before it, with no two alike.
func (h *mandateHarness) verifyPurchases(mandateID string, byState map[intentd.State][]string) {
	h.t.Helper()
	seen := map[int64]bool{}
	for _, state := range []intentd.State{intentd.StateSuccess, intentd.StateFailure} {
		for _, id := range byState[state] {
			rep, err := proof.Verify(h.bundleJSON(id), testServiceKey.PublicKey())
			if err != nil {
				h.t.Fatalf("verify %s (%s): %v", id, state, err)
			}
			m := rep.Mandate
			if m == nil || m.ID != mandateID || rep.Outcome != state {
				h.t.Fatalf("verify %s: outcome %s, mandate %+v", id, rep.Outcome, m)
			}
			if state != intentd.StateSuccess {
				continue
			}
			if m.Amount != 2498 || m.Spent != 2498*m.Purchases || seen[m.Purchases] {
				h.t.Fatalf("success %s decided against %+v", id, m)
			}
			seen[m.Purchases] = true
		}
	}
}

// TestMandateStates refuses purchases of a mandate revoked, expired and exhausted, on
// every store, with the code of each; a revocation by another key is refused.
func TestMandateStates(t *testing.T) {
	eachStore(t, func(t *testing.T, backend storetest.Backend) {
		t.Run("revoked", func(t *testing.T) {
			h := newMandateHarness(t, backend, nil)
			id := h.create(limits{3000, 5000, 10, 10}, h.key, time.Now().Add(time.Hour))
			_, other, _ := ed25519.GenerateKey(nil)
			if err := h.revoke(id, other); intentd.ErrorCode(err) != intentd.CodeRevocationForbidden {
				t.Fatalf("revocation by another key: %v, want %s", err, intentd.CodeRevocationForbidden)
			}
			// A purchase taken before the revocation, sent again after it (its answer
			// lost), stands; its intent takes no proposal but through the mandate.
			before := intentd.Purchase{IntentID: uuid.NewString(), Solution: "block:M-2498"}
			if err := h.e.Purchase(context.Background(), id, before, nil); err != nil {
				t.Fatalf("purchase before the revocation: %v", err)
			}
			err := proposeTo(h.harness, before.IntentID, "M-2498")
			wantCode(t, err, intentd.KindConflict, intentd.CodeMandatePurchase)
			if err := h.revoke(id, h.key); err != nil {
				t.Fatalf("revoke: %v", err)
			}
			if err := h.revoke(id, h.key); err != nil {
				t.Fatalf("revoke again: %v", err)
			}
			if err := h.e.Purchase(context.Background(), id, before, nil); err != nil {
				t.Fatalf("the purchase before the revocation, sent again after it: %v", err)
			}
			close(h.ext.release)
			if st := h.waitTerminal(before.IntentID); st.State != intentd.StateSuccess {
				t.Fatalf("the purchase taken before the revocation ended %s, want success", st.State)
			}
			h.wantRefused(id, intentd.MandateRevoked)
		})
		t.Run("expired", func(t *testing.T) {
			clock := &testClock{now: time.Now()}
			h := newMandateHarness(t, backend, func(c *Config) { c.Now = clock.Now })
			id := h.create(limits{3000, 5000, 10, 10}, h.key, clock.Now().Add(time.Hour))
			clock.advance(time.Hour)
			h.wantRefused(id, intentd.MandateExpired)
		})
		t.Run("policy deleted", func(t *testing.T) {
			h := newMandateHarness(t, backend, nil)
			id := h.create(limits{3000, 5000, 10, 10}, h.key, time.Now().Add(time.Hour))
			if byState, _ := h.purchaseAll(id, 1, "M-2498"); len(byState[intentd.StateSuccess]) != 1 {
				t.Fatalf("the purchase before the delete: %v", byState)
			}
			if err := h.e.DeletePolicy(context.Background(), h.policyID); err != nil {
				t.Fatal(err)
			}
			if st := h.mandateStatus(id); st.Status != intentd.MandateActive || st.Spent != 2498 {
				t.Fatalf("status after the delete: %+v", st)
			}
			err := h.e.Purchase(context.Background(), id, intentd.Purchase{IntentID: uuid.NewString(), Solution: "M-2498"}, nil)
			wantCode(t, err, intentd.KindInvalid, intentd.CodePolicyNotFound)
		})
		t.Run("exhausted", func(t *testing.T) {
			h := newMandateHarness(t, backend, nil)
			id := h.create(limits{3000, 5000, 1, 10}, h.key, time.Now().Add(time.Hour))
			if byState, _ := h.purchaseAll(id, 1, "M-2498"); len(byState[intentd.StateSuccess]) != 1 {
				t.Fatalf("the one purchase: %v", byState)
			}
			h.wantRefused(id, intentd.MandateExhausted)
		})
	})
}

// revoke sends a revocation of mandate id signed by key.
func (h *mandateHarness) revoke(id string, key ed25519.PrivateKey) error {
	raw := fmt.Appendf(nil, `{"mandate_id":%q}`, id)
	canon, err := intentd.DecodeRevocation(raw, id)
	if err != nil {
		return err
	}
	auth, err := crypto.SignEd25519(key, raw)
	if err != nil {
		return err
	}
	return h.e.RevokeMandate(context.Background(), id, intentd.Revocation{Canonical: canon, Authorship: auth})
}

// wantRefused checks that mandate id is in state and refuses a purchase with its code.
func (h *mandateHarness) wantRefused(id string, state intentd.MandateState) {
	h.t.Helper()
	if st := h.mandateStatus(id); st.Status != state {
		h.t.Fatalf("status %s, want %s", st.Status, state)
	}
	err := h.e.Purchase(context.Background(), id, intentd.Purchase{IntentID: uuid.NewString(), Solution: "M-2498"}, nil)
	wantCode(h.t, err, intentd.KindConflict, intentd.CodeForMandateState(state))
}

// testClock is a clock a test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestMandateDecidedAgain asks the mandate's actor to decide a purchase it counted a
// success already, as a proof run again after a crash does: on the same evidence it
// gets the decision recorded, counted once; on other evidence it gets no decision,
// and the success stays counted.
func TestMandateDecidedAgain(t *testing.T) {
	h := newMandateHarness(t, stores[0].backend, nil)
	id := h.create(limits{3000, 5000, 10, 10}, h.key, time.Now().Add(time.Hour))
	byState, _ := h.purchaseAll(id, 1, "M-2498")
	if len(byState[intentd.StateSuccess]) != 1 {
		t.Fatalf("the purchase: %v", byState)
	}
	intentID := byState[intentd.StateSuccess][0]
	p, err := h.e.Policy(context.Background(), h.policyID)
	if err != nil {
		t.Fatal(err)
	}
	st := h.status(intentID)
	for _, tc := range []struct {
		name     string
		evidence string
		changed  bool
	}{
		{"the same evidence", string(st.Evidence), false},
		{"other evidence", `{"price_cents":1000,"size":"M"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := decodeEvidence([]byte(tc.evidence))
			if err != nil {
				t.Fatal(err)
			}
			attrs, _ := snapAttrs(mustSnapshot(t, h.harness, intentID))
			v, err := h.e.mandateCall(context.Background(), id, mDecide{intentID: intentID, p: p, attrs: attrs, evidence: ev, evJSON: json.RawMessage(tc.evidence)})
			if err != nil {
				t.Fatal(err)
			}
			got := v.(*verdict)
			if got.evidenceChanged != tc.changed || !tc.changed && (got.amount != 2498 || got.before.Purchases != 0 || len(got.failures) != 0) {
				t.Fatalf("verdict %+v, want evidenceChanged %v", got, tc.changed)
			}
			if ms := h.mandateStatus(id); ms.Spent != 2498 || ms.Purchases != 1 || len(ms.Intents) != 1 {
				t.Fatalf("status %+v: the success is not counted once", ms)
			}
		})
	}
}

// mustSnapshot reads an intent's snapshot from the store.
func mustSnapshot(t *testing.T, h *harness, id string) *snapshot {
	t.Helper()
	s, err := h.e.loadSnapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
