package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/httpsig"
	"github.com/intentd/intentd/proof"
)

// mandateOutcomes are three purchases decided one after the other under one mandate of
// mandatePolicy, each signed by the agent the mandate lists: two successes, the second
// decided against the first's totals, and a failure over the budget the two spent.
type mandateOutcomes struct {
	agent   agentKey
	policy  string
	mandate string
	// raw is the mandate's JSON as signed by the test server's key.
	raw                       []byte
	first, second, overBudget string
}

// mandateJSON is a mandate of mandatePolicy for the demo catalog: size M, navy or white,
// at most 3000 a purchase, 5000 in all, five purchases and five a week, by the agent of
// key.
func mandateJSON(id, policyID, key string, budget int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"expires_at":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},`+
		`"max_price_cents":{"Int":3000},"budget_cents":{"Int":%d},"max_purchases":{"Int":5},"per_week":{"Int":5},"agents":{"Set":{"String":[%q]}}}}}`,
		id, policyID, time.Now().Add(time.Hour).UTC().Format(time.RFC3339), budget, key)
}

// createMandate stores the mandate raw, signed by the test server's key, through the
// client's POST /mandates.
func (s *testServer) createMandate(raw []byte) {
	s.t.Helper()
	c, err := client.NewClient(s.url)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := c.CreateMandate(s.t.Context(), raw, s.signEd25519(raw)); err != nil {
		s.t.Fatalf("POST /mandates: %v", err)
	}
}

// purchase makes a purchase of solution under mandate, signed by agent when it is not
// nil, and waits for its outcome.
func (s *testServer) purchase(mandate, solution string, agent *agentKey, want string) string {
	s.t.Helper()
	c, err := client.NewClient(s.url)
	if err != nil {
		s.t.Fatal(err)
	}
	if agent != nil {
		c.AgentKey, c.AgentTag = agent.priv, "agent-payer-auth"
	}
	id := uuid.NewString()
	if err := c.Purchase(s.t.Context(), mandate, id, solution); err != nil {
		s.t.Fatalf("POST /mandates/%s/purchases: %v", mandate, err)
	}
	if st := s.waitStatus(id, want); st["mandate_id"] != mandate {
		s.t.Fatalf("the status of purchase %s names the mandate %v, want %s", id, st["mandate_id"], mandate)
	}
	return id
}

// purchaseUnderMandate makes the purchases of mandateOutcomes on s.
func purchaseUnderMandate(t *testing.T, s *testServer) mandateOutcomes {
	t.Helper()
	o := mandateOutcomes{agent: newAgentKey(t), mandate: uuid.NewString()}
	o.policy = s.putPolicy(mandatePolicy(t))
	o.raw = mandateJSON(o.mandate, o.policy, o.agent.pub, 5000)
	s.createMandate(o.raw)
	// 1999 and 499 of shipping each: 2498, then 4996, and a third would spend 7494.
	o.first = s.purchase(o.mandate, solutionPasses, &o.agent, "success")
	o.second = s.purchase(o.mandate, solutionPasses, &o.agent, "success")
	o.overBudget = s.purchase(o.mandate, solutionPasses, &o.agent, "failure")
	return o
}

// verifyMandate is proof.Verify's report of a bundle under the key, which must verify
// and bind a mandate.
func verifyMandate(t *testing.T, bundle []byte, key []byte) *proof.MandateReport {
	t.Helper()
	rep, err := proof.Verify(bundle, key)
	if err != nil || rep.Mandate == nil {
		t.Fatalf("intentctl verify says %v, mandate %+v", err, rep)
	}
	return rep.Mandate
}

// TestConsoleMandate checks what the console shows of mandates: the Policy page gives a
// policy's amount and period in the words of its canonical text; the Intent page of a
// purchase names its mandate; the Proof page verifies each purchase's version 4 bundle in
// the browser, the mandate check among the others, and gives the totals it was decided
// against, its amount and the decision's time. A bundle whose authored mandate or
// amount was changed fails at the mandate check, and one whose totals were changed and
// signed again at the evaluation, with the words of intentctl verify.
func TestConsoleMandate(t *testing.T) {
	// Not parallel: runs Chromium, whose 5s page waits two browsers at once could miss.
	s := startServer(t, nil)
	b := newConsoleBrowser(t, s)
	o := purchaseUnderMandate(t, s)
	pub, _ := s.serviceKey()

	// The Policy page: the amount and the period as the canonical text writes them.
	r := s.do("GET", "/policies/"+o.policy, "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET policy: %s", r)
	}
	var amount, period string
	for line := range strings.SplitSeq(string(r.body), "\n") {
		if rest, ok := strings.CutPrefix(line, "amount "); ok {
			amount = rest
		}
		if rest, ok := strings.CutPrefix(line, "period "); ok {
			period = rest
		}
	}
	if amount == "" || period != "week" {
		t.Fatalf("the canonical text has amount %q and period %q:\n%s", amount, period, r.body)
	}
	b.open("#/policy/" + o.policy)
	b.wait("the amount on the Policy page", `document.getElementById("policy-amount")`, 5*time.Second)
	if got := b.text("#policy-amount .mono"); got != amount {
		t.Errorf("the Policy page gives the amount %q, want %q", got, amount)
	}
	if got := b.text("#policy-period"); !strings.HasPrefix(got, "week") || !strings.Contains(got, "Monday 00:00 UTC") {
		t.Errorf("the Policy page gives the period %q, want week, from Monday", got)
	}
	b.screenshot("policy-mandate", `document.getElementById("policy-period")`)
	b.open("#/policy/" + s.policy)
	b.wait("the Policy page", `document.getElementById("policy-agents")`, 5*time.Second)
	if n := b.count("#policy-amount, #policy-period"); n != 0 {
		t.Errorf("the Policy page of a policy without amount or period shows %d of them", n)
	}

	// The Intent pages: a purchase names its mandate, an intent of its own none.
	b.open("#/intent/" + o.second)
	b.wait("the mandate on the Intent page", `document.getElementById("mandate")`, 5*time.Second)
	if got := b.attr("#mandate", "data-mandate"); got != o.mandate || !strings.Contains(b.text("#mandate"), o.mandate) {
		t.Errorf("the Intent page of a purchase names the mandate %q (%q), want %s", got, b.text("#mandate"), o.mandate)
	}
	b.screenshot("intent-mandate", `document.getElementById("mandate")`)
	own := s.submit()
	b.open("#/intent/" + own)
	b.wait("the Intent page", `document.getElementById("facts-h")`, 5*time.Second)
	if n := b.count("#mandate"); n != 0 {
		t.Errorf("the Intent page of an intent of its own shows a mandate")
	}

	// The Proof pages.
	for _, id := range []string{o.first, o.second, o.overBudget} {
		m := verifyMandate(t, s.proofOf(id), pub)
		b.open("#/proof/" + id)
		b.wait("the verdict on "+id, fmt.Sprintf(`(document.getElementById("verdict") || {textContent: ""}).textContent.includes(%s)`, jsString(id)), 10*time.Second)
		if got := b.text("#verdict"); !strings.HasPrefix(got, "verified: the proof of intent "+id+" holds") {
			t.Errorf("the Proof page of %s says %q, want verified", id, got)
		}
		for _, check := range []string{"mandate", "evaluation", "agent"} {
			if got := b.attr(fmt.Sprintf(`li[data-check=%q]`, check), "data-status"); got != "pass" {
				t.Errorf("proof of %s: the %s check is %q, want pass", id, check, got)
			}
		}
		want := map[string]string{
			"#proof-totals":  fmt.Sprintf("%d spent in %d purchase(s); in the period: %d in %d", m.Spent, m.Purchases, m.PeriodSpent, m.PeriodPurchases),
			"#proof-amount":  fmt.Sprint(m.Amount),
			"#proof-decided": fmt.Sprintf("%s (decision.time %d)", m.DecidedAt.Format(time.RFC3339Nano), m.DecidedAt.Unix()),
		}
		for sel, w := range want {
			if got := b.text(sel); got != w {
				t.Errorf("the Proof page of %s gives %s %q, want %q", id, sel, got, w)
			}
		}
		if got := b.text("#proof-mandate"); !strings.HasPrefix(got, o.mandate+", signed by Ed25519 "+m.AuthorKey) {
			t.Errorf("the Proof page of %s says of its mandate %q", id, got)
		}
		if id == o.second {
			b.screenshot("proof-mandate", `document.getElementById("proof-totals")`)
		}
	}
	if m := verifyMandate(t, s.proofOf(o.overBudget), pub); m.Spent != 2*2498 || m.Amount != 0 {
		t.Errorf("the failure was decided against %+v, want 4996 spent and no amount", m)
	}

	// Tampered bundles, dropped in with the server's key, or with none for one whose
	// receipt was signed again.
	bundle := s.proofOf(o.first)
	for _, c := range []struct {
		name, check string
		bundle      []byte
		key         []byte
	}{
		{"the authored mandate changed", proof.CheckMandate, editBundle(t, bundle, func(m map[string]json.RawMessage) {
			m["authored_mandate"] = json.RawMessage(strings.Replace(string(m["authored_mandate"]), `{"Int":5000}`, `{"Int":50000}`, 1))
		}), pub},
		{"the amount changed", proof.CheckMandate, resignV4(t, bundle, func(_ map[string]json.RawMessage, r *crypto.Receipt) { r.Mandate.Amount = 1 }), nil},
		{"the totals changed", proof.CheckEvaluation, resignV4(t, bundle, func(_ map[string]json.RawMessage, r *crypto.Receipt) { r.Mandate.Spent = 4000 }), nil},
		{"a total changed, not signed again", proof.CheckSignature, editBundle(t, bundle, func(m map[string]json.RawMessage) {
			m["receipt"] = json.RawMessage(strings.Replace(string(m["receipt"]), `"spent":0`, `"spent":1`, 1))
		}), pub},
	} {
		_, err := proof.Verify(c.bundle, c.key)
		var ve *proof.VerifyError
		if !errors.As(err, &ve) || ve.Check != c.check {
			t.Fatalf("%s: intentctl verify says %v, want the %s check to fail", c.name, err, c.check)
		}
		typed := ""
		if c.key != nil {
			typed = crypto.EncodeBase58(c.key)
		}
		want := "verification FAILED: check " + c.check + ": " + ve.Message
		if got := b.dropBundle(strings.ReplaceAll(c.name, " ", "-"), c.bundle, typed); got != want {
			t.Errorf("%s: the page says\n  %q\nwant, as intentctl verify,\n  %q", c.name, got, want)
		}
		if st := b.attr(fmt.Sprintf(`li[data-check=%q]`, c.check), "data-status"); st != "fail" {
			t.Errorf("%s: the %s check is %q, want fail", c.name, c.check, st)
		}
		if c.name == "the authored mandate changed" {
			b.screenshot("proof-mandate-tampered", `document.querySelector('li[data-check="mandate"]')`)
		}
	}
}

// resignV4 is resign for a bundle whose receipt, signed again with a new key, is in no
// transparency log: its log part goes.
func resignV4(t *testing.T, bundle []byte, change func(m map[string]json.RawMessage, r *crypto.Receipt)) []byte {
	t.Helper()
	return resign(t, bundle, func(m map[string]json.RawMessage, r *crypto.Receipt) {
		delete(m, "log")
		change(m, r)
	})
}

// unsignedPurchase is a success under a mandate of a policy that delegates to no agent,
// its purchase unsigned, and whose constraints read the decision's time: its receipt is
// of version 4 without an agent.
func unsignedPurchase(t *testing.T, s *testServer) string {
	t.Helper()
	policyID := s.putPolicy(`name console_mandate_unsigned
amount evidence.price_cents
period day
parameters { size: string  budget_cents: int }
evidence { size: string  price_cents: int }
requires {
  evidence.size == parameters.size;
  mandate.spent + purchase.amount <= parameters.budget_cents;
  mandate.period_purchases < 3;
  decision.time > 1700000000;
}`)
	id := uuid.NewString()
	s.createMandate(fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"expires_at":%q,"attrs":{"fields":{"size":{"String":"M"},"budget_cents":{"Int":5000}}}}`,
		id, policyID, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	return s.purchase(id, solutionPasses, nil, "success")
}

// mandateVerdict is what a verifier makes of a bundle: the failed check and its
// message, or the agent and the mandate it reports.
type mandateVerdict struct {
	Check   string               `json:"check"`
	Message string               `json:"message"`
	Agent   *proof.AgentReport   `json:"agent"`
	Mandate *proof.MandateReport `json:"mandate"`
}

func goMandateVerdict(bundle []byte) mandateVerdict {
	rep, err := proof.Verify(bundle, nil)
	var ve *proof.VerifyError
	if errors.As(err, &ve) {
		return mandateVerdict{Check: ve.Check, Message: ve.Message}
	}
	if err != nil {
		return mandateVerdict{Check: "?", Message: err.Error()}
	}
	return mandateVerdict{Agent: rep.Agent, Mandate: rep.Mandate}
}

// mandateVerifyScript checks each bundle with the page's verifyBundle against its own
// key.
const mandateVerifyScript = `(async (base, bundles) => {
  const { verifyBundle } = await import(base + "verify.js");
  const out = [];
  for (const text of bundles) {
    const v = await verifyBundle(text, "");
    out.push(v.error ? { check: v.error.check, message: v.error.message } : { agent: v.report.agent || null, mandate: v.report.mandate || null });
  }
  return JSON.stringify(out);
})`

// signedMandate is an authored mandate of raw, signed by key ("" for Unsigned).
func (s *testServer) signedMandate(raw []byte, unsigned bool) json.RawMessage {
	s.t.Helper()
	auth := crypto.Authorship{}
	if !unsigned {
		auth = s.signEd25519(raw)
	}
	a, err := json.Marshal(auth)
	if err != nil {
		s.t.Fatal(err)
	}
	return fmt.Appendf(nil, `{"mandate":%s,"authorship":%s}`, raw, a)
}

// withMandate is resignV4 with the bundle's authored mandate replaced by authored and
// bound again by the receipt.
func withMandate(t *testing.T, bundle []byte, authored json.RawMessage) []byte {
	t.Helper()
	return resignV4(t, bundle, func(m map[string]json.RawMessage, r *crypto.Receipt) {
		m["authored_mandate"] = authored
		d, err := crypto.Digest(authored)
		if err != nil {
			t.Fatal(err)
		}
		r.Mandate.AuthoredMandateDigest = d
	})
}

// rawResign gives a bundle a receipt whose JSON change edits, signed again with a new
// key as it is, so that a receipt the service would never write reaches the verifier:
// its decoder is then the first to object.
func rawResign(t *testing.T, bundle []byte, change func(r map[string]any)) []byte {
	t.Helper()
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	return editBundle(t, bundle, func(m map[string]json.RawMessage) {
		delete(m, "log")
		var signed map[string]json.RawMessage
		if err := json.Unmarshal(m["receipt"], &signed); err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(signed["receipt"])))
		dec.UseNumber()
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		r["key_id"] = key.ID()
		change(r)
		raw, _ := json.Marshal(r)
		canon, err := crypto.Canonicalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		signed["receipt"] = canon
		signed["signature"], _ = json.Marshal(crypto.EncodeBase58(key.Sign(canon)))
		signed["public_key"], _ = json.Marshal(crypto.EncodeBase58(key.PublicKey()))
		m["receipt"], _ = json.Marshal(signed)
	})
}

// TestConsoleProofMandate compares the Proof page's check of version 4 bundles with
// proof.Verify: the real ones, of purchases signed by an agent and not, and doctored
// ones whose every digest and signature holds but whose authored mandate is missing,
// beside a receipt of another version, signed by nobody or not by its author, of
// another id, policy or attrs; whose amount, totals or decision time were changed;
// whose agent signed another route or another purchase; and receipts the service would
// not write (no mandate, a mandate beside version 2, a total out of range, a time not
// in UTC or not as the service spells it). Each must fail at the same check with the
// same message, or verify with the same agent and mandate.
func TestConsoleProofMandate(t *testing.T) {
	// Not parallel: runs Chromium, whose 5s page waits two browsers at once could miss.
	s := startServer(t, nil)
	b := newConsoleBrowser(t, s)
	o := purchaseUnderMandate(t, s)
	first, second, over := s.proofOf(o.first), s.proofOf(o.second), s.proofOf(o.overBudget)
	unsigned := s.proofOf(unsignedPurchase(t, s))
	own := s.submit()
	if r := s.propose(own, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal: %s", r)
	}
	s.waitStatus(own, "success")
	v2 := s.proofOf(own)
	v4 := readV3(t, first)
	path := `"@path": /mandates/` + o.mandate + `/purchases`
	if !strings.Contains(v4.base, path) {
		t.Fatalf("the base of a purchase does not cover its route:\n%s", v4.base)
	}
	t.Logf("the signature base of a purchase:\n%s", v4.base)
	purchaseBody := func(intentID, solution string) []byte {
		return fmt.Appendf(nil, `{"intent_id":%q,"solution":%q}`, intentID, solution)
	}
	rebased := func(body []byte) []byte {
		return v4.reAgent(t, rebaseDigest(v4.base, v4.body, body), body, o.agent, "agent-payer-auth")
	}
	changed := func(budget int, id, policyID string) []byte {
		return mandateJSON(id, policyID, o.agent.pub, budget)
	}
	setMandate := func(change func(m map[string]any)) func(r map[string]any) {
		return func(r map[string]any) { change(r["mandate"].(map[string]any)) }
	}
	cases := []struct {
		name, check string // check "" is a bundle that verifies
		bundle      []byte
	}{
		{"the first purchase's", "", first},
		{"the second purchase's", "", second},
		{"the purchase over the budget's", "", over},
		{"an unsigned purchase's", "", unsigned},
		{"signed again as it was", "", resignV4(t, first, func(map[string]json.RawMessage, *crypto.Receipt) {})},
		{"decided with nanoseconds", "", resignV4(t, unsigned, func(_ map[string]json.RawMessage, r *crypto.Receipt) {
			r.Mandate.DecidedAt = r.Mandate.DecidedAt.Add(123456789 * time.Nanosecond)
		})},
		{"decided before its policy's time", proof.CheckEvaluation, resignV4(t, unsigned, func(_ map[string]json.RawMessage, r *crypto.Receipt) {
			r.Mandate.DecidedAt = time.Unix(-10, 5e8).UTC()
		})},
		{"the authored mandate changed", proof.CheckMandate, editBundle(t, first, func(m map[string]json.RawMessage) {
			m["authored_mandate"] = json.RawMessage(strings.Replace(string(m["authored_mandate"]), `{"Int":5000}`, `{"Int":50000}`, 1))
		})},
		{"the authored mandate null", proof.CheckMandate, editBundle(t, first, func(m map[string]json.RawMessage) { m["authored_mandate"] = json.RawMessage("null") })},
		{"the authored mandate gone", proof.CheckBundle, editBundle(t, first, func(m map[string]json.RawMessage) { delete(m, "authored_mandate") })},
		{"an authored mandate beside a version 2 receipt", proof.CheckBundle, editBundle(t, v2, func(m map[string]json.RawMessage) {
			m["authored_mandate"] = s.signedMandate(o.raw, false)
		})},
		{"the mandate signed by nobody", "", withMandate(t, first, s.signedMandate(o.raw, true))},
		{"the mandate with an id in capitals", "", withMandate(t, first, s.signedMandate(changed(5000, strings.ToUpper(o.mandate), o.policy), false))},
		{"the mandate's attrs changed, not signed again", proof.CheckMandate, withMandate(t, first,
			json.RawMessage(strings.Replace(string(s.signedMandate(o.raw, false)), `{"Int":5000}`, `{"Int":50000}`, 1)))},
		{"the mandate of other attrs", proof.CheckMandate, withMandate(t, first, s.signedMandate(changed(50000, o.mandate, o.policy), false))},
		{"another mandate", proof.CheckMandate, withMandate(t, first, s.signedMandate(changed(5000, uuid.NewString(), o.policy), false))},
		{"the mandate of another policy", proof.CheckMandate, withMandate(t, first, s.signedMandate(changed(5000, o.mandate, s.policy), false))},
		{"the mandate with another member", proof.CheckMandate, withMandate(t, first, s.signedMandate(
			[]byte(strings.Replace(string(o.raw), `{"id"`, `{"note":1,"id"`, 1)), false))},
		{"the mandate without an expiry", proof.CheckMandate, withMandate(t, first, s.signedMandate(
			[]byte(strings.Replace(string(o.raw), `"expires_at"`, `"expires"`, 1)), false))},
		{"the mandate's expiry not a time", proof.CheckMandate, withMandate(t, first, s.signedMandate(
			[]byte(strings.Replace(string(o.raw), `"expires_at":"`, `"expires_at":"x`, 1)), false))},
		{"the mandate with null attrs", proof.CheckMandate, withMandate(t, first, s.signedMandate(
			fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"expires_at":"2030-01-01T00:00:00Z","attrs":null}`, o.mandate, o.policy), false))},
		{"the authored mandate with another member", proof.CheckMandate, withMandate(t, first,
			fmt.Appendf(nil, `{"mandate":%s,"authorship":"Unsigned","x":1}`, o.raw))},
		{"the authored mandate without its mandate", proof.CheckMandate, withMandate(t, first, json.RawMessage(`{"authorship":"Unsigned"}`))},
		{"the authored mandate without its authorship", "", withMandate(t, first, fmt.Appendf(nil, `{"mandate":%s}`, o.raw))},
		{"the amount changed", proof.CheckMandate, resignV4(t, first, func(_ map[string]json.RawMessage, r *crypto.Receipt) { r.Mandate.Amount = 1 })},
		{"a failure that binds an amount", proof.CheckMandate, resignV4(t, over, func(_ map[string]json.RawMessage, r *crypto.Receipt) { r.Mandate.Amount = 2498 })},
		{"the totals changed", proof.CheckEvaluation, resignV4(t, first, func(_ map[string]json.RawMessage, r *crypto.Receipt) { r.Mandate.Spent = 4000 })},
		{"the totals lowered", proof.CheckEvaluation, resignV4(t, over, func(_ map[string]json.RawMessage, r *crypto.Receipt) { r.Mandate.Spent = 0 })},
		{"the period's purchases changed", proof.CheckEvaluation, resignV4(t, first, func(_ map[string]json.RawMessage, r *crypto.Receipt) { r.Mandate.PeriodPurchases = 5 })},
		{"the receipt's mandate another", proof.CheckMandate, resignV4(t, first, func(_ map[string]json.RawMessage, r *crypto.Receipt) { r.Mandate.ID = uuid.NewString() })},
		{"the receipt names no agent", proof.CheckAgent, resignV4(t, first, func(m map[string]json.RawMessage, r *crypto.Receipt) {
			r.Agent = nil
			delete(m, "agent")
		})},
		{"the agent part gone", proof.CheckBundle, editBundle(t, first, func(m map[string]json.RawMessage) { delete(m, "agent") })},
		{"the agent signed the intent's proposal route", proof.CheckAgent, v4.reAgent(t,
			strings.Replace(v4.base, path, `"@path": /intents/`+o.first+`/proposal`, 1), v4.body, o.agent, "")},
		{"the agent signed behind a prefix", "", v4.reAgent(t, strings.Replace(v4.base, path, `"@path": /api`+strings.TrimPrefix(path, `"@path": `), 1), v4.body, o.agent, "")},
		{"the agent signed another intent's purchase", proof.CheckAgent, rebased(purchaseBody(uuid.NewString(), solutionPasses))},
		{"the agent signed the purchase in capitals", "", rebased(purchaseBody(strings.ToUpper(o.first), solutionPasses))},
		{"the agent signed another solution", proof.CheckAgent, rebased(purchaseBody(o.first, solutionOutOfStock))},
		{"the agent signed a proposal, not a purchase", proof.CheckAgent, rebased([]byte(`{"solution":"` + solutionPasses + `"}`))},
		{"the agent signed a purchase of no intent", proof.CheckAgent, rebased([]byte(`{"intent_id":null,"solution":"` + solutionPasses + `"}`))},
		{"the agent signed a purchase with another member", proof.CheckAgent, rebased([]byte(`{"intent_id":"` + o.first + `","solution":"` + solutionPasses + `","x":1}`))},
		{"no mandate in a version 4 receipt", proof.CheckBundle, rawResign(t, first, func(r map[string]any) { delete(r, "mandate") })},
		{"a mandate in a version 2 receipt", proof.CheckBundle, rawResign(t, v2, func(r map[string]any) {
			r["mandate"] = map[string]any{"id": o.mandate}
		})},
		{"a receipt of version 5", proof.CheckBundle, rawResign(t, first, func(r map[string]any) { r["version"] = 5 })},
		{"an agent in a version 2 receipt", proof.CheckBundle, rawResign(t, v2, func(r map[string]any) {
			r["agent"] = map[string]any{"key": o.agent.pub}
		})},
		{"a negative total", proof.CheckBundle, rawResign(t, first, setMandate(func(m map[string]any) { m["period_spent"] = -1 }))},
		{"a mandate of no id", proof.CheckBundle, rawResign(t, first, setMandate(func(m map[string]any) { m["id"] = "" }))},
		{"a mandate's digest that is none", proof.CheckBundle, rawResign(t, first, setMandate(func(m map[string]any) { m["authored_mandate_digest"] = "abc" }))},
		{"a mandate without its amount", proof.CheckBundle, rawResign(t, first, setMandate(func(m map[string]any) { delete(m, "amount") }))},
		{"a mandate with another member", proof.CheckBundle, rawResign(t, first, setMandate(func(m map[string]any) { m["note"] = "x" }))},
		{"a decision time not in UTC", proof.CheckBundle, rawResign(t, first, setMandate(func(m map[string]any) { m["decided_at"] = "2027-01-01T01:00:00+01:00" }))},
		{"a decision time spelled otherwise", proof.CheckBundle, rawResign(t, first, setMandate(func(m map[string]any) { m["decided_at"] = "2027-01-01T00:00:00.500Z" }))},
		{"a decision time of Go's zero", proof.CheckBundle, rawResign(t, first, setMandate(func(m map[string]any) { m["decided_at"] = "0001-01-01T00:00:00Z" }))},
		{"no decision time", proof.CheckBundle, rawResign(t, first, setMandate(func(m map[string]any) { delete(m, "decided_at") }))},
	}
	texts := make([]string, len(cases))
	for i, c := range cases {
		texts[i] = string(c.bundle)
	}
	tj, _ := json.Marshal(texts)
	b.open("#/proof")
	b.wait("the console", `document.querySelector("h1")`, 5*time.Second)
	var answer string
	b.eval(fmt.Sprintf(`%s(%s, %s)`, mandateVerifyScript, jsString(b.base), tj), &answer)
	var page []mandateVerdict
	if err := json.Unmarshal([]byte(answer), &page); err != nil || len(page) != len(cases) {
		t.Fatalf("the page answered %d verdicts (%v), want %d", len(page), err, len(cases))
	}
	checks := map[string]int{}
	for i, c := range cases {
		want, got := goMandateVerdict(c.bundle), page[i]
		checks[want.Check]++
		if want.Check != c.check {
			t.Errorf("%s: intentctl verify says %+v, want the check %q", c.name, want, c.check)
		}
		if got.Check != want.Check || got.Message != want.Message {
			t.Errorf("%s: the page says check %q: %s\nintentctl verify says check %q: %s", c.name, got.Check, got.Message, want.Check, want.Message)
			continue
		}
		if (got.Agent == nil) != (want.Agent == nil) || got.Agent != nil && *got.Agent != *want.Agent {
			t.Errorf("%s: the page reports the agent %+v, intentctl verify %+v", c.name, got.Agent, want.Agent)
		}
		gm, _ := json.Marshal(got.Mandate)
		wm, _ := json.Marshal(want.Mandate)
		if string(gm) != string(wm) {
			t.Errorf("%s: the page reports the mandate\n  %s\nintentctl verify\n  %s", c.name, gm, wm)
		}
	}
	t.Logf("%d bundles, verdicts by check: %v", len(cases), checks)
}

// rebaseDigest is the signature base with the content-digest of body in place of that
// of old.
func rebaseDigest(base string, old, body []byte) string {
	return strings.Replace(base, httpsig.ContentDigest(old), httpsig.ContentDigest(body), 1)
}
