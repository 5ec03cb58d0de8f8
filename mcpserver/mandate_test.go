package mcpserver_test

import (
	"cmp"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/mcpserver"
)

// The demo catalog's navy t-shirt in M costs 19.99 and 4.99 of shipping: a purchase of
// it under the docs' mandate policy is an amount of 2498, and two of them are 4996.
const (
	purchaseAmount = 2498
	budget         = 5000 // two purchases fit, a third does not
)

// mandatePolicy is docs/examples/mandate.policy, delegated to agents as written, or
// without its agents part for the tools that hold no agent's key. rename, when not
// empty, renames the parameter budget_cents, so that a budget of another name is had.
func mandatePolicy(t *testing.T, delegated bool, rename string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "examples", "mandate.policy"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(raw)
	if !delegated {
		var lines []string
		for line := range strings.Lines(src) {
			if l := strings.TrimSpace(line); l != "agents parameters.agents" && l != "agents: set<string>" {
				lines = append(lines, line)
			}
		}
		if len(lines) != strings.Count(src, "\n")-2 {
			t.Fatalf("docs/examples/mandate.policy has no agents part of two lines to take out:\n%s", src)
		}
		src = strings.Join(lines, "")
	}
	if rename != "" {
		src = strings.ReplaceAll(src, "budget_cents", rename)
	}
	return src
}

// mandateSpec is what a test's mandate is made of.
type mandateSpec struct {
	delegated    ed25519.PublicKey // the one agent it delegates to; nil for the undelegated policy
	budgetName   string            // the name of the budget parameter; budget_cents when empty
	maxPurchases int               // 100 when 0
	expires      time.Duration     // from now; a day when 0
}

// mandate stores a policy of spec and a mandate of it signed by the fixture's author,
// for the demo catalog's t-shirts in M, navy or blue, at most 30.00 each with shipping
// and at most budget in all; it returns the mandate's id.
func (f *fixture) mandate(t *testing.T, spec mandateSpec) string {
	t.Helper()
	name := cmp.Or(spec.budgetName, "budget_cents")
	policyID, err := f.api.PutPolicy(t.Context(), mandatePolicy(t, spec.delegated != nil, spec.budgetName))
	if err != nil {
		t.Fatal(err)
	}
	agents := ""
	if spec.delegated != nil {
		agents = fmt.Sprintf(`,"agents":{"Set":{"String":[%q]}}`, crypto.EncodeBase58(spec.delegated))
	}
	id := uuid.NewString()
	raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"expires_at":%q,"attrs":{"fields":{"size":{"String":"M"},`+
		`"colors":{"Set":{"String":["navy","blue"]}},"max_price_cents":{"Int":3000},%q:{"Int":%d},`+
		`"max_purchases":{"Int":%d},"per_week":{"Int":100}%s}}}`,
		id, policyID, time.Now().Add(cmp.Or(spec.expires, 24*time.Hour)).UTC().Format(time.RFC3339),
		name, budget, cmp.Or(spec.maxPurchases, 100), agents)
	auth, err := crypto.SignEd25519(f.author, raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.api.CreateMandate(t.Context(), raw, auth); err != nil {
		t.Fatalf("CreateMandate: %v", err)
	}
	return id
}

// revoke revokes a mandate with its author's signature.
func (f *fixture) revoke(t *testing.T, id string) {
	t.Helper()
	rv := client.RevocationJSON(id)
	auth, err := crypto.SignEd25519(f.author, rv)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.api.RevokeMandate(t.Context(), id, rv, auth); err != nil {
		t.Fatalf("RevokeMandate: %v", err)
	}
}

// buy makes a purchase of the passing t-shirt under mandate id with the tool and waits
// for its outcome; it returns the intent's id and its state.
func buy(t *testing.T, cs *mcp.ClientSession, mandateID string, args map[string]any) (string, string) {
	t.Helper()
	args["mandate_id"] = mandateID
	if args["solution"] == nil {
		args["solution"] = passing
	}
	out := mustCall(t, cs, "purchase", args)
	intentID, _ := out["intent_id"].(string)
	if _, err := uuid.Parse(intentID); err != nil || out["status"] != "processing" || out["mandate_id"] != mandateID {
		t.Fatalf("purchase = %v, want processing with a UUID intent_id", out)
	}
	if want, ok := args["intent_id"]; ok && intentID != want {
		t.Fatalf("purchase answered intent_id %s, want the one sent, %s", intentID, want)
	}
	done := mustCall(t, cs, "await_outcome", map[string]any{"intent_id": intentID, "timeout_seconds": 10})
	if done["decided"] != true {
		t.Fatalf("await_outcome of purchase %s = %v", intentID, done)
	}
	return intentID, fmt.Sprint(done["status"])
}

// TestGetMandate checks what get_mandate tells an agent of mandates in each state, with
// remaining_cents only for a budget named budget_cents, and its refusals.
func TestGetMandate(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.inProcess(t)
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T) string // the mandate_id asked for
		want   map[string]string         // members of the answer, as fmt.Sprint writes them
		absent []string                  // members the answer has not
		code   string                    // the refusal's code, when refused
	}{
		{name: "active", setup: func(t *testing.T) string { return f.mandate(t, mandateSpec{}) },
			want: map[string]string{"status": "active", "spent": "0", "purchases": "0", "intents": "[]", "remaining_cents": "5000",
				"policy_name": "tshirt_mandate_v1", "attrs.budget_cents": "5000", "attrs.max_price_cents": "3000",
				"attrs.colors": "[navy blue]", "period.unit": "week", "period.spent": "0"},
			absent: []string{"revoked_at"}},
		{name: "a budget of another name", setup: func(t *testing.T) string { return f.mandate(t, mandateSpec{budgetName: "limit_cents"}) },
			want:   map[string]string{"status": "active", "attrs.limit_cents": "5000"},
			absent: []string{"remaining_cents", "attrs.budget_cents"}},
		{name: "revoked", setup: func(t *testing.T) string { id := f.mandate(t, mandateSpec{}); f.revoke(t, id); return id },
			want: map[string]string{"status": "revoked", "remaining_cents": "5000"}},
		{name: "expired", setup: func(t *testing.T) string {
			id := f.mandate(t, mandateSpec{expires: time.Hour})
			f.skew.Store(int64(2 * time.Hour))
			t.Cleanup(func() { f.skew.Store(0) })
			return id
		}, want: map[string]string{"status": "expired"}},
		{name: "unknown", setup: func(*testing.T) string { return uuid.NewString() }, code: intentd.CodeMandateNotFound},
		{name: "not a UUID", setup: func(*testing.T) string { return "not-a-mandate" }, code: intentd.CodeMandateNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.setup(t)
			args := map[string]any{"mandate_id": id}
			if tc.code != "" {
				wantRefusal(t, cs, "get_mandate", args, tc.code)
				return
			}
			out := mustCall(t, cs, "get_mandate", args)
			if out["mandate_id"] != id {
				t.Errorf("mandate_id %v, want %s", out["mandate_id"], id)
			}
			for path, want := range tc.want {
				if got, ok := member(out, path); !ok || fmt.Sprint(got) != want {
					t.Errorf("%s = %v (present %v), want %s", path, got, ok, want)
				}
			}
			for _, path := range tc.absent {
				if got, ok := member(out, path); ok {
					t.Errorf("%s = %v, want it absent", path, got)
				}
			}
			if _, err := time.Parse(time.RFC3339, fmt.Sprint(out["expires_at"])); err != nil {
				t.Errorf("expires_at %v: %v", out["expires_at"], err)
			}
			if tc.want["status"] == "revoked" {
				if _, err := time.Parse(time.RFC3339, fmt.Sprint(out["revoked_at"])); err != nil {
					t.Errorf("revoked_at %v: %v", out["revoked_at"], err)
				}
			}
			if !strings.Contains(fmt.Sprint(out["policy"]), "mandate.spent + purchase.amount <=") {
				t.Errorf("policy %q, want the mandate policy's text", out["policy"])
			}
		})
	}
}

// member is the member at a dotted path of a tool's output.
func member(out map[string]any, path string) (any, bool) {
	var v any = out
	for name := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[name]; !ok {
			return nil, false
		}
	}
	return v, true
}

// TestPurchaseBudget makes purchases under a mandate of a budget of two: two succeed,
// whether the tool made the intent id or the agent sent one, and get_mandate shows
// them and remaining_cents; the third is taken and fails on the budget, spending
// nothing; the second sent again is the same purchase, not a fourth.
func TestPurchaseBudget(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.inProcess(t)
	id := f.mandate(t, mandateSpec{})
	chosen := uuid.NewString()
	steps := []struct {
		name      string
		intentID  string // sent as intent_id when not empty
		state     string
		spent     int
		purchases int
		intents   int
	}{
		{"first, its id made by the tool", "", "success", purchaseAmount, 1, 1},
		{"second, its id chosen", chosen, "success", 2 * purchaseAmount, 2, 2},
		{"third, past the budget", "", "failure", 2 * purchaseAmount, 2, 3},
		{"the second again", chosen, "success", 2 * purchaseAmount, 2, 3},
	}
	var taken []string
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			args := map[string]any{}
			if step.intentID != "" {
				args["intent_id"] = step.intentID
			}
			intentID, state := buy(t, cs, id, args)
			if state != step.state {
				t.Fatalf("purchase %s ended %s, want %s", intentID, state, step.state)
			}
			if step.name == "third, past the budget" {
				st, err := f.api.Status(t.Context(), intentID)
				if err != nil || st.MandateID != id || len(st.Failures) != 1 || !strings.Contains(st.Failures[0].Reason, "parameters.budget_cents") {
					t.Fatalf("status of the purchase past the budget: %+v (%v), want one failure naming the budget", st, err)
				}
			}
			if step.intentID == "" || !slices.Contains(taken, intentID) {
				taken = append(taken, intentID)
			}
			out := mustCall(t, cs, "get_mandate", map[string]any{"mandate_id": id})
			want := map[string]string{"status": "active", "spent": fmt.Sprint(step.spent), "purchases": fmt.Sprint(step.purchases),
				"remaining_cents": fmt.Sprint(budget - step.spent), "intents": fmt.Sprint(taken[:step.intents])}
			for path, w := range want {
				if got, _ := member(out, path); fmt.Sprint(got) != w {
					t.Errorf("get_mandate's %s = %v, want %s", path, got, w)
				}
			}
		})
	}
}

// TestPurchaseRefusals checks each refusal of purchase: the mandates that take no
// purchase (exhausted after two, revoked, expired), one that delegates to an agent
// these tools do not hold the key of, ids that are not UUIDs or not the mandate's, an
// engine without mandates, a token without the propose role and a member named twice.
// Each refusal names the intent the purchase named.
func TestPurchaseRefusals(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.inProcess(t)
	_, agent, _ := ed25519.GenerateKey(nil)
	exhausted := f.mandate(t, mandateSpec{maxPurchases: 2})
	for range 2 {
		if _, state := buy(t, cs, exhausted, map[string]any{}); state != "success" {
			t.Fatalf("a purchase under the mandate of two ended %s", state)
		}
	}
	revoked := f.mandate(t, mandateSpec{})
	f.revoke(t, revoked)
	expired := f.mandate(t, mandateSpec{expires: time.Hour})
	delegated := f.mandate(t, mandateSpec{delegated: agent.Public().(ed25519.PublicKey)})
	active := f.mandate(t, mandateSpec{})
	intent, fresh := f.submit(t), uuid.NewString()
	bare := connect(t, mcpserver.New(mcpserver.Local(struct{ intentd.Engine }{f.e}, f.key.PublicKey()), mcpserver.Options{}),
		mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil))

	for _, tc := range []struct {
		name      string
		cs        *mcp.ClientSession
		args      any
		code      string
		says      []string
		skew      time.Duration
		intentID  string // the intent_id the refusal names; "" for none
		madeOneID bool   // the refusal names an intent_id the tool made
	}{
		{name: "exhausted after two", args: map[string]any{"mandate_id": exhausted, "solution": passing}, code: intentd.CodeMandateExhausted,
			says: []string{"mandate " + exhausted + " takes no purchase, now or later", "no further purchase can meet"}, madeOneID: true},
		{name: "revoked, an intent_id in capitals", args: map[string]any{"mandate_id": revoked, "solution": passing, "intent_id": strings.ToUpper(fresh)},
			code: intentd.CodeMandateRevoked, says: []string{"takes no purchase, now or later: its author revoked it"}, intentID: fresh},
		{name: "expired", args: map[string]any{"mandate_id": expired, "solution": passing}, skew: 2 * time.Hour,
			code: intentd.CodeMandateExpired, says: []string{"takes no purchase, now or later: its expires_at has passed"}, madeOneID: true},
		{name: "delegated, without the agent's key", args: map[string]any{"mandate_id": delegated, "solution": passing},
			code: intentd.CodeAgentSignatureRequired, says: []string{"mandate " + delegated + " delegates", "these tools hold no agent key",
				"`intentctl mcp --agent-key FILE`", "POST /mandates/{id}/purchases with RFC 9421"}, madeOneID: true},
		{name: "unknown mandate", args: map[string]any{"mandate_id": uuid.NewString(), "solution": passing}, code: intentd.CodeMandateNotFound, madeOneID: true},
		{name: "mandate_id not a UUID", args: map[string]any{"mandate_id": "m-1", "solution": passing}, code: intentd.CodeMandateNotFound},
		{name: "intent_id not a UUID", args: map[string]any{"mandate_id": revoked, "solution": passing, "intent_id": "i-1"}, code: intentd.CodeInvalidPurchase},
		{name: "intent_id of an intent not the mandate's", args: map[string]any{"mandate_id": active, "solution": passing, "intent_id": intent},
			code: intentd.CodeIntentExists, intentID: intent},
		{name: "engine without mandates", cs: bare, args: map[string]any{"mandate_id": revoked, "solution": passing},
			code: intentd.CodeNotFound, says: []string{"keeps no mandates"}, madeOneID: true},
		{name: "a token that only reads", cs: f.overHTTP(t, readerToken), args: map[string]any{"mandate_id": revoked, "solution": passing}, code: "forbidden"},
		{name: "a member named twice", args: json.RawMessage(fmt.Sprintf(`{"mandate_id":%q,"solution":%q,"solution":%q}`, active, wrongColor, passing)),
			code: "invalid_arguments", says: []string{"solution: duplicate key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skew != 0 {
				f.skew.Store(int64(tc.skew))
				defer f.skew.Store(0)
			}
			te := wantRefusal(t, cmp.Or(tc.cs, cs), "purchase", tc.args, tc.code)
			for _, s := range tc.says {
				if !strings.Contains(te.Message, s) {
					t.Errorf("the refusal %q does not say %q", te.Message, s)
				}
			}
			switch {
			case tc.madeOneID:
				if _, err := uuid.Parse(te.IntentID); err != nil {
					t.Errorf("the refusal names intent_id %q, want the one the tool made", te.IntentID)
				}
			case te.IntentID != tc.intentID:
				t.Errorf("the refusal names intent_id %q, want %q", te.IntentID, tc.intentID)
			}
		})
	}
	// get_mandate over an engine without mandates says so too.
	if te := wantRefusal(t, bare, "get_mandate", map[string]any{"mandate_id": revoked}, intentd.CodeNotFound); !strings.Contains(te.Message, "keeps no mandates") {
		t.Errorf("get_mandate over an engine without mandates: %q", te.Message)
	}
	// Nothing was bought under the mandates that refused.
	for _, m := range []string{exhausted, revoked, expired, delegated, active} {
		want := 0
		if m == exhausted {
			want = 2
		}
		if st, err := f.api.MandateStatus(t.Context(), m); err != nil || len(st.Intents) != want {
			t.Errorf("mandate %s after the refusals: %+v (%v), want %d purchases taken", m, st, err, want)
		}
	}
}

// TestMandateWays checks the tools of mandates over each way in: get_mandate answers
// alike in process, over the HTTP API (as intentctl mcp serves it) and at /mcp; the
// remote tools with the agent's key purchase under a mandate that delegates to it,
// signed as propose_solution's proposals are, and the intent names the mandate and
// the agent.
func TestMandateWays(t *testing.T) {
	f := newFixture(t, nil)
	_, agent, _ := ed25519.GenerateKey(nil)
	agentPub := agent.Public().(ed25519.PublicKey)
	id := f.mandate(t, mandateSpec{delegated: agentPub})

	want := mustCall(t, f.inProcess(t), "get_mandate", map[string]any{"mandate_id": id})
	for _, way := range []struct {
		name    string
		connect func(*testing.T) *mcp.ClientSession
	}{
		{"remote", f.remote},
		{"http", func(t *testing.T) *mcp.ClientSession { return f.overHTTP(t, agentToken) }},
	} {
		t.Run(way.name, func(t *testing.T) {
			got := mustCall(t, way.connect(t), "get_mandate", map[string]any{"mandate_id": id})
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("get_mandate = %v\nin process %v", got, want)
			}
			wantRefusal(t, way.connect(t), "purchase", map[string]any{"mandate_id": id, "solution": passing}, intentd.CodeAgentSignatureRequired)
		})
	}

	cs := f.asAgent(agent)(t)
	intentID, state := buy(t, cs, id, map[string]any{})
	if state != "success" {
		t.Fatalf("the agent's purchase ended %s", state)
	}
	st, err := f.api.Status(t.Context(), intentID)
	if err != nil || st.MandateID != id || st.Agent == nil || st.Agent.Key != crypto.EncodeBase58(agentPub) || st.Agent.Tag != "agent-payer-auth" {
		t.Fatalf("status of the agent's purchase %+v (%v): want the mandate's and the agent's", st, err)
	}
	if out := mustCall(t, cs, "get_proof", map[string]any{"intent_id": intentID}); out["verified"] != true {
		t.Fatalf("get_proof of the purchase = %v", out)
	}
	out := mustCall(t, cs, "get_mandate", map[string]any{"mandate_id": id})
	if out["spent"] != float64(purchaseAmount) || out["remaining_cents"] != float64(budget-purchaseAmount) || fmt.Sprint(out["intents"]) != "["+intentID+"]" {
		t.Fatalf("get_mandate after the agent's purchase = %v", out)
	}
}
