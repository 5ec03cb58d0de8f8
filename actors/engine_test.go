package actors

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/storetest"
)

const testPolicy = `
name test_tshirt
parameters { size: string  max_price_cents: int }
evidence { size: string  price_cents: int }
requires {
  evidence.size == parameters.size;
  evidence.price_cents <= parameters.max_price_cents;
}
`

// fakeExtractor answers from a table of solutions. A solution starting with "block:"
// waits until release is closed or the context ends; "panic:" panics; "fail:" fails.
type fakeExtractor struct {
	mu      sync.Mutex
	catalog map[string]evidence.Evidence
	release chan struct{}
	calls   map[string]int
	started chan string
}

func newFakeExtractor() *fakeExtractor {
	return &fakeExtractor{
		catalog: map[string]evidence.Evidence{
			"good":        {"size": json.Number("40"), "price_cents": json.Number("1999")},
			"M-cheap":     {"size": "M", "price_cents": json.Number("1999")},
			"M-dear":      {"size": "M", "price_cents": json.Number("9999")},
			"L-dear":      {"size": "L", "price_cents": json.Number("9999")},
			"M-no-size":   {"price_cents": json.Number("100")},
			"L-no-price":  {"size": "L"},
			"no-evidence": {},
		},
		release: make(chan struct{}),
		calls:   make(map[string]int),
		started: make(chan string, 1024),
	}
}

func (f *fakeExtractor) Extract(ctx context.Context, req evidence.Request) (evidence.Evidence, error) {
	f.mu.Lock()
	f.calls[req.Solution]++
	f.mu.Unlock()
	select {
	case f.started <- req.Solution:
	default: // nobody is counting starts; a long run must not block on them
	}
	sol := req.Solution
	switch {
	case strings.HasPrefix(sol, "block:"):
		select {
		case <-f.release:
			sol = strings.TrimPrefix(sol, "block:")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case strings.HasPrefix(sol, "panic:"):
		panic("extractor bug")
	case strings.HasPrefix(sol, "fail:"):
		return nil, errors.New("the shop answered 404")
	}
	ev, ok := f.catalog[sol]
	if !ok {
		return nil, fmt.Errorf("solution %q is not in the catalog", sol)
	}
	return ev, nil
}

type harness struct {
	t         *testing.T
	openStore func(t *testing.T) storetest.Store
	store     storetest.Store
	e         *Engine
	ext       *fakeExtractor
	cfg       Config
	key       ed25519.PrivateKey
	policy    string
}

// submitRaw submits the JSON of an intent as the HTTP layer does: decoded, then
// canonicalized, then handed to the engine.
func submitRaw(ctx context.Context, e *Engine, raw []byte, auth crypto.Authorship) error {
	in, err := intentd.DecodeIntent(raw)
	if err != nil {
		return err
	}
	sub, err := intentd.NewSubmission(in, raw, auth)
	if err != nil {
		return err
	}
	return e.SubmitIntent(ctx, sub)
}

// stores are the stores that the tests of what the engine asks of a store run on: each
// makes a fresh backing place and returns how to open a store on it.
var stores = []struct {
	name    string
	backend storetest.Backend
}{
	{"pebble", func(*testing.T) func(*testing.T) storetest.Store {
		fs := persistence.NewMemFS()
		return func(t *testing.T) storetest.Store {
			s, err := persistence.Open("db", persistence.Options{FS: fs})
			if err != nil {
				t.Fatalf("open store: %v", err)
			}
			return s
		}
	}},
	{"nats", func(t *testing.T) func(*testing.T) storetest.Store {
		srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
		return func(t *testing.T) storetest.Store {
			s, err := natsstore.Open(context.Background(), natsstore.Options{URLs: []string{srv.URL()}})
			if err != nil {
				t.Fatalf("open store: %v", err)
			}
			return s
		}
	}},
}

// eachStore runs a test once on every store, as a subtest named for it.
func eachStore(t *testing.T, run func(t *testing.T, backend storetest.Backend)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { run(t, s.backend) })
	}
}

func newHarness(t *testing.T, tweak func(*Config)) *harness {
	t.Helper()
	return newHarnessOn(t, stores[0].backend, tweak)
}

// newHarnessOn opens an engine on a store of the given backend.
func newHarnessOn(t *testing.T, backend storetest.Backend, tweak func(*Config)) *harness {
	t.Helper()
	return newHarnessWith(t, backend(t), tweak)
}

// newHarnessWith opens an engine on a store opened by openStore: two harnesses given
// one opener of a shared store are two nodes.
func newHarnessWith(t *testing.T, openStore func(*testing.T) storetest.Store, tweak func(*Config)) *harness {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(nil)
	h := &harness{t: t, openStore: openStore, ext: newFakeExtractor(), key: key}
	h.cfg = DefaultConfig()
	h.cfg.ExpiryInterval = 10 * time.Millisecond
	if tweak != nil {
		tweak(&h.cfg)
	}
	h.open()
	t.Cleanup(h.close)
	id, err := h.e.PutPolicy(context.Background(), testPolicy)
	if err != nil {
		t.Fatalf("PutPolicy: %v", err)
	}
	h.policy = id
	return h
}

func (h *harness) open() {
	h.t.Helper()
	store := h.openStore(h.t)
	cfg := h.cfg
	cfg.Store = store
	cfg.Extractor = h.ext
	e, err := Open(cfg)
	if err != nil {
		h.t.Fatalf("Open: %v", err)
	}
	h.store, h.e = store, e
	<-e.Ready()
}

func (h *harness) close() {
	if h.e != nil {
		h.e.Close()
		h.store.Close()
		h.e, h.store = nil, nil
	}
}

func (h *harness) restart() {
	h.close()
	h.open()
}

// intentJSON builds an intent for the test policy.
func (h *harness) intentJSON(id, size string, max int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":%q},"max_price_cents":{"Int":%d}}}}`,
		id, h.policy, size, max)
}

func (h *harness) submit(size string, max int) string {
	h.t.Helper()
	id := uuid.NewString()
	raw := h.intentJSON(id, size, max)
	auth, err := crypto.SignEd25519(h.key, raw)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := submitRaw(context.Background(), h.e, raw, auth); err != nil {
		h.t.Fatalf("SubmitIntent: %v", err)
	}
	return id
}

func (h *harness) status(id string) intentd.Status {
	h.t.Helper()
	s, err := h.e.Status(context.Background(), id)
	if err != nil {
		h.t.Fatalf("Status(%s): %v", id, err)
	}
	return s
}

// waitState polls until the intent reaches state.
func (h *harness) waitState(id string, state intentd.State) intentd.Status {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := h.status(id)
		if s.State == state {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("intent %s is %s, want %s", id, s.State, state)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitNoActors waits until no intent actor is live, and fails the test with why and the
// number still live once deadline has passed.
func (h *harness) waitNoActors(deadline time.Time, why string) {
	h.t.Helper()
	for h.e.registry.live() > 0 {
		if time.Now().After(deadline) {
			h.t.Fatalf("%d actors still live %s", h.e.registry.live(), why)
		}
		time.Sleep(time.Millisecond)
	}
}

// events reads every retained event (and live ones until quiet) from a fresh subscription.
func (h *harness) events(from uint64, want int) []intentd.Event {
	h.t.Helper()
	sub, err := h.e.Subscribe(context.Background(), from, intentd.Filter{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer sub.Close()
	var out []intentd.Event
	for len(out) < want {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ev, err := sub.Next(ctx)
		cancel()
		if err != nil {
			h.t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if ev, err := sub.Next(ctx); err == nil {
		h.t.Fatalf("unexpected extra event %d: %s", ev.ID, ev.Data)
	}
	return out
}

func wantCode(t *testing.T, err error, kind intentd.Kind, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s/%s", kind, code)
	}
	if intentd.ErrorKind(err) != kind || intentd.ErrorCode(err) != code {
		t.Fatalf("err = %v (kind %s, code %s), want %s/%s", err, intentd.ErrorKind(err), intentd.ErrorCode(err), kind, code)
	}
}

func proposeTo(h *harness, id, solution string) error {
	return h.e.Propose(context.Background(), id, intentd.Proposal{Solution: solution})
}

// TestTransitions covers each row of the state table of spec part 3 and each refusal.
func TestTransitions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		cfg  func(*Config)
		run  func(t *testing.T, h *harness)
	}{
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
	eachStore(t, func(t *testing.T, backend storetest.Backend) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tt.run(t, newHarnessOn(t, backend, tt.cfg))
			})
		}
	})
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

// TestDecidedActorsRetire checks that the actor of a decided or expired intent stops
// without waiting for passivation, and that the intent still answers afterwards.
func TestDecidedActorsRetire(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PassivateAfter = time.Hour; c.IntentTTL = 300 * time.Millisecond })
	decided := h.submit("M", 2500)
	expiring := h.submit("M", 2500)
	if err := proposeTo(h, decided, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(decided, intentd.StateSuccess)
	h.waitState(expiring, intentd.StateExpired)
	h.waitNoActors(time.Now().Add(5*time.Second), "an hour before their passivation")
	for _, id := range []string{decided, expiring} {
		if err := proposeTo(h, id, "M-cheap"); intentd.ErrorKind(err) != intentd.KindConflict {
			t.Fatalf("a proposal to the ended intent %s: %v, want a conflict", id, err)
		}
	}
}

// acquiredIntent submits an intent on an engine that does not passivate within a test,
// and counts a call to its actor in flight, as the registry does for each call.
func acquiredIntent(t *testing.T) (*harness, string, *actor.PID) {
	t.Helper()
	h := newHarness(t, func(c *Config) { c.PassivateAfter = time.Hour })
	id := h.submit("M", 2500)
	pid, err := h.e.registry.acquire(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return h, id, pid
}

// TestRetireWaitsForCallsInFlight checks that an actor whose intent ends while another
// call is in flight (as a proposal's own call can be when proving is quick) is not
// stopped under that call, and stops when it finishes rather than an hour later.
func TestRetireWaitsForCallsInFlight(t *testing.T) {
	h, id, pid := acquiredIntent(t)
	if err := proposeTo(h, id, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, intentd.StateSuccess)
	s := h.e.registry.shard(id)
	ended := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		la := s.m[id]
		return la != nil && la.ended
	}
	deadline := time.Now().Add(5 * time.Second)
	for !ended() {
		if time.Now().After(deadline) {
			t.Fatal("the actor of a decided intent was not marked to stop")
		}
		time.Sleep(time.Millisecond)
	}
	if n := h.e.registry.live(); n != 1 {
		t.Fatalf("%d actors live while a call is in flight, want 1", n)
	}
	h.e.registry.release(id, pid, false, false)
	h.waitNoActors(deadline, "after the last call in flight finished")
}

// TestCallFindsItsActorGone stops an intent actor behind the registry's back: the next
// call lands in protoactor's dead letters, is answered from there, and is sent again
// to an actor spawned from the snapshot, rather than waiting out its time-out.
func TestCallFindsItsActorGone(t *testing.T) {
	h, id, pid := acquiredIntent(t)
	h.e.registry.release(id, pid, false, false)
	if err := h.e.system.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	res, err := h.e.registry.localCall(ctx, id, expire{})
	if err != nil {
		t.Fatalf("a call to the intent of a stopped actor: %v", err)
	}
	if snap, ok := res.(*snapshot); !ok || snap.ID != id || snap.State != intentd.StateOpen {
		t.Fatalf("the call answered %#v, want the open intent's snapshot", res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the call took %v", d)
	}
	if err := proposeTo(h, id, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, intentd.StateSuccess)
}

// heldStore holds every BeginProcessing until release is closed.
type heldStore struct {
	storetest.Store
	release chan struct{}
}

func (s *heldStore) BeginProcessing(ctx context.Context, id, policyID string, snap []byte, at time.Time) error {
	<-s.release
	return s.Store.BeginProcessing(ctx, id, policyID, snap, at)
}

// TestCallerLeavesActorCall checks that a caller whose ctx ends while the intent's actor
// is writing is answered at once, that the actor is not passivated under the message it
// still holds, and that the write it was making goes through and the call is given
// back once it answers.
func TestCallerLeavesActorCall(t *testing.T) {
	open := stores[0].backend(t)
	held := make(chan struct{})
	h := newHarnessWith(t, func(t *testing.T) storetest.Store {
		return &heldStore{Store: open(t), release: held}
	}, func(c *Config) { c.PassivateAfter = 20 * time.Millisecond })
	id := h.submit("M", 2500)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := h.e.Propose(ctx, id, intentd.Proposal{Solution: "M-cheap"})
	wantCode(t, err, intentd.KindBusy, intentd.CodeCanceled)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the caller was answered after %v", d)
	}
	time.Sleep(100 * time.Millisecond) // several passivation periods
	if n := h.e.registry.live(); n != 1 {
		t.Fatalf("%d actors live while one holds a write, want 1", n)
	}
	close(held)
	h.waitState(id, intentd.StateSuccess)
	h.waitNoActors(time.Now().Add(5*time.Second), "after the actor answered the call its caller left")
}

// TestPassivation checks that idle actors stop and come back from their snapshot.
func TestPassivation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PassivateAfter = 20 * time.Millisecond })
	var ids []string
	for range 50 {
		ids = append(ids, h.submit("M", 2500))
	}
	h.waitNoActors(time.Now().Add(5*time.Second), "after 20 ms idle")
	for _, id := range ids {
		if err := proposeTo(h, id, "M-cheap"); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		h.waitState(id, intentd.StateSuccess)
	}
	wantCode(t, proposeTo(h, ids[0], "M-cheap"), intentd.KindConflict, intentd.CodeProposalExists)
}

// TestSubscribeNoGapNoDuplicate subscribes while events are being produced and checks the
// subscriber sees every event once, in order.
func TestSubscribeNoGapNoDuplicate(t *testing.T) { eachStore(t, testSubscribeNoGapNoDuplicate) }

func testSubscribeNoGapNoDuplicate(t *testing.T, backend storetest.Backend) {
	h := newHarnessOn(t, backend, nil)
	const n = 60
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.submit("M", 2500)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, id := range ids {
			proposeTo(h, id, "M-cheap")
		}
	}()
	time.Sleep(time.Millisecond)
	evs := h.events(0, n)
	wg.Wait()
	wantIncreasing(t, evs)
	// The event log holds exactly what the subscriber saw.
	var logged []uint64
	h.store.Events(context.Background(), 0, 2*n, func(ev intentd.Event) error {
		logged = append(logged, ev.ID)
		return nil
	})
	if len(logged) != n {
		t.Fatalf("the log holds %d events, the subscriber saw %d", len(logged), n)
	}
	for i, ev := range evs {
		if logged[i] != ev.ID {
			t.Fatalf("event %d: the subscriber saw id %d, the log holds %d", i, ev.ID, logged[i])
		}
	}
	// Resuming from the middle gives the rest, and so does resuming from an id between
	// two events on a store whose ids skip numbers.
	if rest := h.events(evs[n/2-1].ID, n/2); rest[0].ID != evs[n/2].ID {
		t.Fatalf("resume from %d starts at %d", evs[n/2-1].ID, rest[0].ID)
	}
	if evs[n/2].ID > evs[n/2-1].ID+1 {
		if rest := h.events(evs[n/2].ID-1, n/2); rest[0].ID != evs[n/2].ID {
			t.Fatalf("resume from %d starts at %d", evs[n/2].ID-1, rest[0].ID)
		}
	}
}

// wantIncreasing fails unless event ids strictly increase: the order every store
// promises; Pebble's are also gapless, NATS's skip numbers.
func wantIncreasing(t *testing.T, evs []intentd.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].ID <= evs[i-1].ID {
			t.Fatalf("event %d has id %d after %d", i, evs[i].ID, evs[i-1].ID)
		}
	}
}

// subscriberKinds are the two ways the bus serves a subscriber: from the shared feed
// (no filter), or handed its matching events one by one (a filter that every outcome
// of the tests below passes).
var subscriberKinds = []struct {
	name   string
	filter intentd.Filter
}{
	{"every event", intentd.Filter{}},
	{"by type", intentd.Filter{Types: []intentd.State{intentd.StateSuccess}}},
}

// TestSlowSubscriber cuts off a subscriber that stops reading, with or without a filter,
// after what it read, and lets it resume with nothing lost.
func TestSlowSubscriber(t *testing.T) {
	for _, tt := range subscriberKinds {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SubscriberBuffer = 4 })
			sub := subscribeLive(t, h, tt.filter)
			next := func() (intentd.Event, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				return sub.Next(ctx)
			}
			// Read while the first events come...
			var first uint64
			for i := range 2 {
				h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
				ev, err := next()
				if err != nil {
					t.Fatalf("event %d: %v", i+1, err)
				}
				if first == 0 {
					first = ev.ID
				}
			}
			// ...then stop reading while more than the buffer holds come.
			const more = 10
			for range more {
				h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
			}
			last := first + 1
			for {
				ev, err := next()
				if errors.Is(err, intentd.ErrSubscriberTooSlow) {
					break
				}
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				if ev.ID != last+1 {
					t.Fatalf("event %d after %d: a gap before the cut", ev.ID, last)
				}
				last = ev.ID
			}
			if last >= first+1+more {
				t.Fatalf("a subscriber that stopped reading read on to the end (%d), uncut", last)
			}
			rest := h.events(last, int(first+1+more-last))
			if rest[0].ID != last+1 || rest[len(rest)-1].ID != first+1+more {
				t.Fatalf("resumed %d..%d, want %d..%d", rest[0].ID, rest[len(rest)-1].ID, last+1, first+1+more)
			}
		})
	}
}

// subscribeFrom subscribes to the events after from, closed when the test ends.
func subscribeFrom(t *testing.T, h *harness, from uint64, f intentd.Filter) intentd.Subscription {
	t.Helper()
	sub, err := h.e.Subscribe(context.Background(), from, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// subscribeLive subscribes to the events from now on, closed when the test ends.
func subscribeLive(t *testing.T, h *harness, f intentd.Filter) intentd.Subscription {
	t.Helper()
	return subscribeFrom(t, h, intentd.SubscribeLive, f)
}

// TestSlowSubscriberAmongOthers cuts off only the subscriber that fell behind: one that
// kept up, and one whose filter left out the events, read on.
func TestSlowSubscriberAmongOthers(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SubscriberBuffer = 4 })
	ctx := context.Background()
	slow := subscribeLive(t, h, intentd.Filter{})
	keen := subscribeLive(t, h, intentd.Filter{})
	picky := subscribeLive(t, h, intentd.Filter{Types: []intentd.State{intentd.StateExpired}})
	const n = 10
	for i := range n {
		h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ev, err := keen.Next(rctx)
		cancel()
		if err != nil {
			t.Fatalf("the subscriber that kept up, event %d: %v", i+1, err)
		}
		if ev.Type != intentd.StateSuccess {
			t.Fatalf("event %d is %s", ev.ID, ev.Type)
		}
		if picky.Pending() {
			t.Fatalf("a success is pending for a subscriber of expiries")
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := slow.Next(rctx); !errors.Is(err, intentd.ErrSubscriberTooSlow) {
		t.Fatalf("the subscriber that never read: %v, want cut off", err)
	}
	// The picky one was handed none of the successes, so none counted towards its
	// cut: it waits for an expiry.
	pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer pcancel()
	if _, err := picky.Next(pctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the subscriber of expiries: %v, want to wait", err)
	}
}

// TestSubscriberLimit fills the subscribers' places with one that does not read and one
// that does, publishes events, and asks for a third place: only a subscriber the feed
// has gone past gives its place up, and it is told it was too slow.
func TestSubscriberLimit(t *testing.T) {
	tests := []struct {
		name    string
		filter  intentd.Filter
		events  int
		dropped bool
	}{
		{"a subscriber the feed has gone past gives its place up", intentd.Filter{}, 5, true},
		{"one behind but not passed keeps it", intentd.Filter{}, 3, false},
		{"one whose filter left the events out keeps it", intentd.Filter{Types: []intentd.State{intentd.StateExpired}}, 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SubscriberBuffer, c.MaxSubscribers = 4, 2 })
			idle := subscribeLive(t, h, tt.filter)
			keen := subscribeLive(t, h, intentd.Filter{})
			for range tt.events {
				h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
				// Read through a subscription, the event is one the bus has published.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := keen.Next(ctx)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
			}
			// The count, which /metrics shows, leaves out a subscriber the feed has
			// gone past.
			wantCount := 2
			if tt.dropped {
				wantCount = 1
			}
			if n := h.e.Subscribers(); n != wantCount {
				t.Errorf("Subscribers() = %d, want %d", n, wantCount)
			}
			third, err := h.e.Subscribe(context.Background(), intentd.SubscribeLive, intentd.Filter{})
			if !tt.dropped {
				wantCode(t, err, intentd.KindBusy, intentd.CodeTooManySubscribers)
				if unfiltered := len(tt.filter.Types) == 0; idle.Pending() != unfiltered {
					t.Fatalf("the subscriber that kept its place has events pending: %v, want %v", !unfiltered, unfiltered)
				}
				return
			}
			if err != nil {
				t.Fatalf("a third subscriber: %v, want a place", err)
			}
			defer third.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if _, err := idle.Next(ctx); !errors.Is(err, intentd.ErrSubscriberTooSlow) {
				t.Fatalf("the subscriber that gave its place up: %v, want cut off", err)
			}
		})
	}
}

// TestSubscriptionFilling checks that what Filling gives fires once the unread events
// reach half the buffer, and not before, counted from what was read, with or without a
// filter; a word of filling from before the reader read on is stale.
func TestSubscriptionFilling(t *testing.T) {
	for _, tt := range subscriberKinds {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SubscriberBuffer = 4 })
			ctx := context.Background()
			sub := subscribeLive(t, h, tt.filter).(*Subscription)
			// outcome decides an intent and waits until the bus has given sub its
			// event: only then can sub's count have moved.
			unread := 0
			outcome := func() {
				t.Helper()
				h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
				unread++
				deadline := time.Now().Add(5 * time.Second)
				for waiting(sub) < unread {
					if time.Now().After(deadline) {
						t.Fatalf("the bus did not give the subscriber its event %d", unread)
					}
					time.Sleep(time.Millisecond)
				}
			}
			read := func() {
				t.Helper()
				for ; unread > 0; unread-- {
					if _, err := sub.Next(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			var filling <-chan struct{}
			notYet := func() {
				t.Helper()
				select {
				case <-filling:
					t.Fatalf("filling with %d of 4 events unread", unread)
				default:
				}
			}
			waitFilling := func() {
				t.Helper()
				select {
				case <-filling:
				case <-time.After(5 * time.Second):
					t.Fatalf("no word of filling with %d of 4 events unread", unread)
				}
			}
			// Asked for, it fires at the second unread event of four, not the first.
			fillHalf := func() {
				t.Helper()
				filling = sub.Filling()
				notYet()
				outcome()
				notYet()
				outcome()
				waitFilling()
			}
			fillHalf()
			read()
			// Half the buffer fills again while nobody listens, and is read.
			outcome()
			outcome()
			read()
			// Asked again after reading, it counts from there.
			fillHalf()
		})
	}
}

// waiting is how many live events wait for the subscriber.
func waiting(s *Subscription) int {
	if s.live != nil {
		return len(s.live)
	}
	return int(s.e.feed.head.Load() - s.pos.Load())
}

// TestPendingSkipsWhatTheFilterLeavesOut checks that Pending reads a filtered
// subscriber's replay on past the events its filter leaves out: a stream told that
// more is coming holds the event it has, so a true answer with nothing to come kept
// an agent's outcome back until the next heartbeat.
func TestPendingSkipsWhatTheFilterLeavesOut(t *testing.T) {
	h := newHarness(t, nil)
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = h.decide("M", 2500, "M-cheap", intentd.StateSuccess)
	}
	tests := []struct {
		name         string
		filter       intentd.Filter
		before, left bool // Pending before the first Next, and after it
	}{
		{"the first intent's", intentd.Filter{IntentIDs: ids[:1]}, true, false},
		{"the last intent's", intentd.Filter{IntentIDs: ids[2:]}, true, false},
		{"two intents'", intentd.Filter{IntentIDs: []string{ids[0], ids[2]}}, true, true},
		{"a type none has", intentd.Filter{Types: []intentd.State{intentd.StateExpired}}, false, false},
		{"every event", intentd.Filter{}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := subscribeFrom(t, h, 0, tt.filter)
			if got := sub.Pending(); got != tt.before {
				t.Fatalf("Pending before the first event: %v, want %v", got, tt.before)
			}
			if !tt.before {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := sub.Next(ctx); err != nil {
				t.Fatal(err)
			}
			if got := sub.Pending(); got != tt.left {
				t.Fatalf("Pending after the first event: %v, want %v", got, tt.left)
			}
		})
	}
}

// TestFilter checks that the intent and type filters select events.
func TestFilter(t *testing.T) {
	h := newHarness(t, nil)
	ok, bad := h.submit("M", 2500), h.submit("M", 2500)
	proposeTo(h, ok, "M-cheap")
	proposeTo(h, bad, "L-dear")
	h.waitState(ok, intentd.StateSuccess)
	h.waitState(bad, intentd.StateFailure)
	tests := []struct {
		name string
		f    intentd.Filter
		want string
	}{
		{"by intent", intentd.Filter{IntentIDs: []string{strings.ToUpper(bad)}}, bad},
		{"by type", intentd.Filter{Types: []intentd.State{intentd.StateSuccess}}, ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := h.e.Subscribe(context.Background(), 0, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			ev, err := sub.Next(context.Background())
			if err != nil || ev.IntentID != tt.want {
				t.Fatalf("first event = %+v, %v; want intent %s", ev, err, tt.want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			if ev, err := sub.Next(ctx); err == nil {
				t.Fatalf("filter let through %+v", ev)
			}
		})
	}
}

// panickyStore makes the first Finish panic inside the intent actor.
type panickyStore struct {
	*persistence.Store
	once sync.Once
}

func (p *panickyStore) Finish(ctx context.Context, id, policyID string, snap []byte, at time.Time, ev intentd.Event) (uint64, error) {
	p.once.Do(func() { panic("disk controller on fire") })
	return p.Store.Finish(ctx, id, policyID, snap, at, ev)
}

// TestActorPanic panics an intent actor mid-transition: the acknowledged state survives
// and the intent still reaches its terminal state, once.
func TestActorPanic(t *testing.T) {
	fs := persistence.NewMemFS()
	store, err := persistence.Open("db", persistence.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := DefaultConfig()
	cfg.Store, cfg.Extractor = &panickyStore{Store: store}, newFakeExtractor()
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h := &harness{t: t, e: e, store: store}
	_, h.key, _ = ed25519.GenerateKey(nil)
	h.policy, _ = e.PutPolicy(context.Background(), testPolicy)
	id := h.submit("M", 2500)
	if err := proposeTo(h, id, "M-cheap"); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, intentd.StateSuccess)
	if evs := h.events(0, 1); evs[0].IntentID != id {
		t.Fatalf("event = %+v", evs[0])
	}
}

// TestConfigRefused checks that Open refuses a configuration it cannot run with, naming
// what is wrong, rather than reading a zero as some default: the defaults are
// DefaultConfig's alone.
func TestConfigRefused(t *testing.T) {
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, tc := range []struct {
		name  string
		tweak func(*Config)
		want  string
	}{
		{"no store", func(c *Config) { c.Store = nil }, "Store and Config.Extractor are required"},
		{"zero proving slots", func(c *Config) { c.MaxProving = 0 }, "MaxProving 0"},
		{"negative queue", func(c *Config) { c.ProvingQueue = -1 }, "ProvingQueue -1"},
		{"zero ttl", func(c *Config) { c.IntentTTL = 0 }, "IntentTTL 0s"},
		{"no solution limit", func(c *Config) { c.MaxSolutionBytes = 0 }, "MaxSolutionBytes 0"},
		{"solution limit over the engine's", func(c *Config) { c.MaxSolutionBytes = intentd.MaxSolutionBytes + 1 }, "want 1 to 1048576"},
		{"zero config", func(c *Config) { *c = Config{Store: store, Extractor: newFakeExtractor()} }, "start from DefaultConfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Store, cfg.Extractor = store, newFakeExtractor()
			tc.tweak(&cfg)
			e, err := Open(cfg)
			if err == nil {
				e.Close()
				t.Fatal("Open accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// slowStore holds every CreateIntent until release is closed.
type slowStore struct {
	*persistence.Store
	release chan struct{}
	entered chan struct{} // when not nil, told of each create held
}

func (s *slowStore) CreateIntent(ctx context.Context, id, policyID string, snap []byte, at time.Time) error {
	if s.entered != nil {
		s.entered <- struct{}{}
	}
	<-s.release
	return s.Store.CreateIntent(ctx, id, policyID, snap, at)
}

// slowHarness opens an engine on a slowStore, whose creates wait for release and are
// each announced on entered.
func slowHarness(t *testing.T) (*harness, *slowStore) {
	t.Helper()
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	slow := &slowStore{Store: store, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	cfg := DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Verify.AllowUnsigned = slow, newFakeExtractor(), true
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h := &harness{t: t, e: e, store: store}
	if h.policy, err = e.PutPolicy(context.Background(), testPolicy); err != nil {
		t.Fatal(err)
	}
	return h, slow
}

// TestCallerGivesUp checks that an engine call returns when the caller's ctx ends, with
// the canceled code, and that what the engine was doing meanwhile is done all the same:
// the intent is stored once the write goes through.
func TestCallerGivesUp(t *testing.T) {
	h, slow := slowHarness(t)
	e := h.e
	id := uuid.NewString()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := submitRaw(ctx, e, h.intentJSON(id, "M", 2500), crypto.Authorship{})
	wantCode(t, err, intentd.KindBusy, intentd.CodeCanceled)

	close(slow.release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := e.GetIntent(context.Background(), id)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the intent was never stored after its caller gave up: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProposalDuringCreate checks that a proposal which comes while its intent's create
// is being written, with no actor live for it, waits for the write and is taken, rather
// than answered 404 by an actor that read the store too early.
func TestProposalDuringCreate(t *testing.T) {
	h, slow := slowHarness(t)
	e := h.e
	id := uuid.NewString()
	created := make(chan error, 1)
	go func() {
		created <- submitRaw(context.Background(), e, h.intentJSON(id, "M", 2500), crypto.Authorship{})
	}()
	<-slow.entered
	proposed := make(chan error, 1)
	go func() { proposed <- e.Propose(context.Background(), id, intentd.Proposal{Solution: "M-cheap"}) }()
	select {
	case err := <-proposed:
		t.Fatalf("the proposal was answered before its intent was written: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(slow.release)
	if err := <-created; err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := <-proposed; err != nil {
		t.Fatalf("the proposal made during the create: %v", err)
	}
	h.waitState(id, intentd.StateSuccess)
}

// TestProposalBehindAStalledCreate proposes to an intent whose create the store holds
// up: the proposal waits for the write, but no longer than its caller's deadline.
func TestProposalBehindAStalledCreate(t *testing.T) {
	h, slow := slowHarness(t)
	id := uuid.NewString()
	created := make(chan error, 1)
	go func() {
		created <- submitRaw(context.Background(), h.e, h.intentJSON(id, "M", 2500), crypto.Authorship{})
	}()
	<-slow.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	proposed := make(chan error, 1)
	go func() { proposed <- h.e.Propose(ctx, id, intentd.Proposal{Solution: "M-cheap"}) }()
	select {
	case err := <-proposed:
		wantCode(t, err, intentd.KindBusy, intentd.CodeCanceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the proposal outlived its deadline behind a stalled create")
	}
	close(slow.release)
	if err := <-created; err != nil {
		t.Fatalf("create: %v", err)
	}
	if s := h.status(id); s.State != intentd.StateOpen {
		t.Fatalf("state %s after a proposal that gave up, want open", s.State)
	}
}

// awayStore answers "retry later" to its first reads of the event bounds and of an
// intent, as a store on a NATS cluster does while its servers elect their leaders.
type awayStore struct {
	storetest.Store
	left atomic.Int32 // how many more reads fail
}

func (a *awayStore) away() error {
	if a.left.Add(-1) >= 0 {
		return &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStoreUnavailable, Message: "the store is unreachable; retry later"}
	}
	return nil
}

func (a *awayStore) EventBounds(ctx context.Context) (uint64, uint64, error) {
	if err := a.away(); err != nil {
		return 0, 0, err
	}
	return a.Store.EventBounds(ctx)
}

func (a *awayStore) Intent(ctx context.Context, id string) ([]byte, error) {
	if err := a.away(); err != nil {
		return nil, err
	}
	return a.Store.Intent(ctx, id)
}

// TestStartWaitsForTheStore restarts the engine with proposals interrupted while its
// store asks to retry later for a while: the start waits for the store rather than
// failing, and the proposals are resumed to their outcomes.
func TestStartWaitsForTheStore(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.interruptProposals(3)
	open := h.openStore
	var away *awayStore
	h.openStore = func(t *testing.T) storetest.Store {
		away = &awayStore{Store: open(t)}
		away.left.Store(6)
		return away
	}
	h.open()
	if left := away.left.Load(); left > 0 {
		t.Fatalf("the start made only %d of the reads that fail", 6-left)
	}
	for _, id := range ids {
		h.waitState(id, intentd.StateSuccess)
	}
}
