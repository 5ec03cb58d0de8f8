package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/httpsig"
	"github.com/intentd/intentd/proof"
)

// agentOutcomes are three decided intents: one of the delegated policy that its agent's
// signed proposal decided, one of the demo policy (which delegates to nobody) whose
// proposal an agent signed all the same, and one proposed for without a signature.
type agentOutcomes struct {
	agent                        agentKey
	delegated, undelegated, bare string
}

// decideWithAgents makes the three outcomes of agentOutcomes on s and waits for them.
func decideWithAgents(t *testing.T, s *testServer) agentOutcomes {
	t.Helper()
	o := agentOutcomes{agent: newAgentKey(t)}
	var intent []byte
	o.delegated, intent = delegatedIntent(s.putPolicy(delegatedPolicy(t)), o.agent.pub)
	if r := s.postIntent(authored(t, intent, s.signEd25519(intent))); r.status != http.StatusOK {
		t.Fatalf("POST /intents: %s", r)
	}
	now := time.Now()
	o.undelegated, o.bare = s.submit(), s.submit()
	for _, p := range []struct{ id, solution string }{{o.delegated, solutionPasses}, {o.undelegated, solutionOutOfStock}} {
		if r := s.send(p.id, s.signProposal(p.id, p.solution, o.agent, now, now.Add(4*time.Minute))); r.status != http.StatusOK {
			t.Fatalf("a signed proposal: %s", r)
		}
	}
	if r := s.propose(o.bare, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal: %s", r)
	}
	s.waitStatus(o.delegated, "success")
	s.waitStatus(o.undelegated, "failure")
	s.waitStatus(o.bare, "success")
	return o
}

// proofOf is the proof bundle of a decided intent.
func (s *testServer) proofOf(id string) []byte {
	s.t.Helper()
	r := s.do("GET", "/intents/"+id+"/proof", "", nil)
	if r.status != http.StatusOK {
		s.t.Fatalf("GET proof: %s", r)
	}
	return r.body
}

// dropBundle checks a bundle file on the Proof page, against the key typed in ("" for
// the bundle's own), and answers the verdict.
func (b *consoleBrowser) dropBundle(name string, bundle []byte, key string) string {
	b.t.Helper()
	file := filepath.Join(b.t.TempDir(), name+".json")
	if err := os.WriteFile(file, bundle, 0o600); err != nil {
		b.t.Fatal(err)
	}
	b.open("#/proof")
	b.wait("the drop zone", `document.getElementById("bundle-file")`, 5*time.Second)
	b.eval(fmt.Sprintf(`document.getElementById("trusted-key").value = %s`, jsString(key)), nil)
	// The last bundle's verdict goes first, so that the wait is for this one's.
	b.eval(`document.getElementById("verdict")?.remove()`, nil)
	b.run(chromedp.SetUploadFiles(chromedp.CSS("#bundle-file"), []string{file}))
	b.wait("the verdict on "+name, `document.getElementById("verdict")`, 10*time.Second)
	return b.text("#verdict")
}

// TestConsoleAgent checks what the console shows of agents: the Live page gives each
// outcome's agent, its key cut short with the whole key in its title, and its tag, and
// nothing for an unsigned proposal; the Intent page gives the agent and whether the
// author delegated to it; the Proof page verifies a version 3 bundle in the browser,
// the agent check among the others, and says which agent proposed and that the person
// delegated to it. Bundles whose body, base or agent were changed fail at the agent
// check, with the words of intentctl verify.
func TestConsoleAgent(t *testing.T) {
	// Not parallel: runs Chromium, whose 5s page waits two browsers at once could miss.
	s := startServer(t, nil)
	b := newConsoleBrowser(t, s)
	b.open("#/live")
	b.wait("the stream to connect", `document.getElementById("conn").dataset.state === "connected"`, 10*time.Second)
	o := decideWithAgents(t, s)
	short := o.agent.pub[:6] + "…" + o.agent.pub[len(o.agent.pub)-4:]

	// The Live page.
	cell := func(id string) string {
		return fmt.Sprintf(`document.querySelector('#events a[href="#/intent/%s"]').closest("tr").querySelector("td.agent")`, id)
	}
	for _, id := range []string{o.delegated, o.undelegated, o.bare} {
		b.wait("the outcome of "+id+" on the Live page", fmt.Sprintf(`document.querySelector('#events a[href="#/intent/%s"]')`, id), 5*time.Second)
	}
	for _, id := range []string{o.delegated, o.undelegated} {
		var got struct{ Key, Title, Text string }
		b.eval(fmt.Sprintf(`(c => ({key: c.querySelector(".agent").dataset.key, title: c.querySelector("abbr").title, text: c.textContent}))(%s)`, cell(id)), &got)
		if got.Key != o.agent.pub || got.Title != o.agent.pub || got.Text != short+" agent-payer-auth" {
			t.Errorf("the Live page shows the agent of %s as %+v, want %q with the key %s in its title", id, got, short+" agent-payer-auth", o.agent.pub)
		}
	}
	var bare int
	if b.eval(cell(o.bare)+`.closest("tr").querySelectorAll("span.agent").length`, &bare); bare != 0 {
		t.Errorf("the Live page shows %d agents for an unsigned proposal", bare)
	}
	b.screenshot("live-agent", `document.querySelector("td.agent .agent")`)
	// At a phone's width the agent column gives way, and the agent shows under the intent.
	b.run(chromedp.EmulateViewport(375, 800))
	var shown []string
	b.eval(`[...document.querySelectorAll("#events span.agent")].filter(a => a.getClientRects().length).map(a => a.closest("td").className + " " + a.dataset.key)`, &shown)
	if want := "intent " + o.agent.pub; len(shown) != 2 || shown[0] != want || shown[1] != want {
		t.Errorf("at 375 px the Live page shows the agents %q, want two, each under its intent", shown)
	}
	b.run(chromedp.EmulateViewport(1280, 800))

	// The Intent pages.
	b.open("#/intent/" + o.delegated)
	b.wait("the agent on the Intent page", `document.getElementById("agent")`, 5*time.Second)
	if got := b.text("#agent"); !strings.Contains(got, o.agent.pub+" agent-payer-auth") || !strings.Contains(got, "delegated to by the author, who listed its key in the intent") {
		t.Errorf("the Intent page of the delegated intent says of its agent %q", got)
	}
	if got := b.attr("#delegates .agent", "data-key"); got != o.agent.pub {
		t.Errorf("the Intent page says the intent delegates to %q, want %s", got, o.agent.pub)
	}
	if got := b.attr("ol.timeline .agent", "data-key"); got != o.agent.pub {
		t.Errorf("the timeline says the proposal was made by %q, want %s", got, o.agent.pub)
	}
	b.screenshot("intent-agent", `document.getElementById("agent")`)
	b.open("#/intent/" + o.undelegated)
	b.wait("the agent on the Intent page", `document.getElementById("agent")`, 5*time.Second)
	if got := b.text("#agent"); !strings.Contains(got, "the intent delegates to no agent in particular") || b.count("#delegates") != 0 {
		t.Errorf("the Intent page of an undelegated intent says of its agent %q", got)
	}
	b.open("#/intent/" + o.bare)
	b.wait("the Intent page", `document.getElementById("facts-h")`, 5*time.Second)
	if n := b.count("main .agent"); n != 0 {
		t.Errorf("the Intent page of an unsigned proposal shows %d agents", n)
	}

	// The Proof pages.
	for _, c := range []struct {
		id, words string
		delegated bool
	}{
		{o.delegated, "delegated to by the author, who listed its key in the intent", true},
		{o.undelegated, "the intent delegates to no agent in particular", false},
		{o.bare, "", false},
	} {
		b.open("#/proof/" + c.id)
		b.wait("the verdict on "+c.id, fmt.Sprintf(`(document.getElementById("verdict") || {textContent: ""}).textContent.includes(%s)`, jsString(c.id)), 10*time.Second)
		if got := b.text("#verdict"); !strings.HasPrefix(got, "verified: the proof of intent "+c.id+" holds") {
			t.Errorf("the Proof page of %s says %q, want verified", c.id, got)
		}
		if got := b.attr(`li[data-check="agent"]`, "data-status"); got != "pass" {
			t.Errorf("proof of %s: the agent check is %q, want pass", c.id, got)
		}
		got := b.text("#proof-agent")
		if c.words == "" {
			if got != "" {
				t.Errorf("the proof of an unsigned proposal names an agent: %q", got)
			}
			continue
		}
		if want := o.agent.pub + " agent-payer-auth, signed the proposal to " + strings.TrimPrefix(s.url, "http://") + "; " + c.words; got != want {
			t.Errorf("the Proof page of %s says of its agent\n  %q\nwant\n  %q", c.id, got, want)
		}
		if d := b.attr("#proof-agent", "data-delegated"); d != fmt.Sprint(c.delegated) {
			t.Errorf("the Proof page of %s says delegated %s, want %v", c.id, d, c.delegated)
		}
		if c.delegated {
			b.screenshot("proof-agent", `document.getElementById("proof-agent")`)
		}
	}

	// Tampered bundles, dropped in with the server's key, or with none for one whose
	// receipt was signed again.
	pub, _ := s.serviceKey()
	key := crypto.EncodeBase58(pub)
	v3 := readV3(t, s.proofOf(o.delegated))
	for _, c := range []struct {
		name   string
		bundle []byte
		key    ed25519.PublicKey
	}{
		{"the body changed", v3.withPart(t, v3.base, []byte(`{"solution":"`+solutionOutOfStock+`"}`)), pub},
		{"the base changed", v3.withPart(t, strings.Replace(v3.base, `"@method": POST`, `"@method": GET`, 1), v3.body), pub},
		// Signed again by an agent the intent does not list, and receipted again: only
		// the delegation can object.
		{"an agent the intent does not list", v3.reAgent(t, v3.base, v3.body, newAgentKey(t), "agent-payer-auth"), nil},
	} {
		_, err := proof.Verify(c.bundle, c.key)
		var ve *proof.VerifyError
		if !errors.As(err, &ve) || ve.Check != proof.CheckAgent {
			t.Fatalf("%s: intentctl verify says %v, want the agent check to fail", c.name, err)
		}
		typed := key
		if c.key == nil {
			typed = ""
		}
		want := "verification FAILED: check agent: " + ve.Message
		if got := b.dropBundle(strings.ReplaceAll(c.name, " ", "-"), c.bundle, typed); got != want {
			t.Errorf("%s: the page says\n  %q\nwant, as intentctl verify,\n  %q", c.name, got, want)
		}
		if st := b.attr(`li[data-check="agent"]`, "data-status"); st != "fail" {
			t.Errorf("%s: the agent check is %q, want fail", c.name, st)
		}
		if c.name == "the body changed" {
			b.screenshot("proof-agent-tampered", `document.querySelector('li[data-check="agent"]')`)
		}
	}
}

// v3Bundle is a version 3 bundle taken apart, to be put together again with another
// agent part.
type v3Bundle struct {
	raw  []byte
	base string
	body []byte
	sig  string // the agent's signature, as the receipt binds it
}

func readV3(t *testing.T, bundle []byte) v3Bundle {
	t.Helper()
	var w struct {
		Receipt json.RawMessage     `json:"receipt"`
		Agent   *intentd.ProofAgent `json:"agent"`
	}
	if err := json.Unmarshal(bundle, &w); err != nil || w.Agent == nil {
		t.Fatalf("the bundle has no agent part (%v): %s", err, bundle)
	}
	r, err := crypto.DecodeSignedReceipt(w.Receipt)
	if err != nil || r.Receipt.Agent == nil {
		t.Fatalf("the receipt names no agent (%v): %s", err, w.Receipt)
	}
	return v3Bundle{raw: bundle, base: w.Agent.SignatureBase, body: w.Agent.Body, sig: r.Receipt.Agent.Signature}
}

// editBundle is a bundle with its parts changed by edit.
func editBundle(t *testing.T, bundle []byte, edit func(m map[string]json.RawMessage)) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(bundle, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withPart is the bundle with another agent part and the same receipt.
func (v v3Bundle) withPart(t *testing.T, base string, body []byte) []byte {
	t.Helper()
	return editBundle(t, v.raw, func(m map[string]json.RawMessage) {
		m["agent"], _ = json.Marshal(intentd.ProofAgent{SignatureBase: base, Body: body})
	})
}

// reAgent is the bundle with another agent part whose base key signed, the receipt's
// agent bound to it and the receipt signed again with a new service key (resign): every
// digest and signature holds, and only what the base covers, the body and the
// delegation are left to check.
func (v v3Bundle) reAgent(t *testing.T, base string, body []byte, key agentKey, tag string) []byte {
	t.Helper()
	sig := ed25519.Sign(key.priv, []byte(base))
	return resign(t, v.raw, func(m map[string]json.RawMessage, r *crypto.Receipt) {
		// The log's checkpoint is signed by the service's key, not the new one: the
		// receipt signed again is in no log.
		delete(m, "log")
		r.Agent = crypto.NewReceiptAgent(key.pub, tag, []byte(base), sig)
		m["agent"], _ = json.Marshal(intentd.ProofAgent{SignatureBase: base, Body: body})
	})
}

// verdict is what a verifier makes of a bundle: the failed check and its message, or
// the agent it reports.
type verdict struct {
	Check   string             `json:"check"`
	Message string             `json:"message"`
	Agent   *proof.AgentReport `json:"agent"`
}

func goVerdict(bundle []byte) verdict {
	rep, err := proof.Verify(bundle, nil)
	var ve *proof.VerifyError
	if errors.As(err, &ve) {
		return verdict{Check: ve.Check, Message: ve.Message}
	}
	if err != nil {
		return verdict{Check: "?", Message: err.Error()}
	}
	return verdict{Agent: rep.Agent}
}

// verifyScript checks each bundle with the page's verifyBundle against its own key.
const verifyScript = `(async (base, bundles) => {
  const { verifyBundle } = await import(base + "verify.js");
  const out = [];
  for (const text of bundles) {
    const v = await verifyBundle(text, "");
    out.push(v.error ? { check: v.error.check, message: v.error.message } : { agent: v.report.agent || null });
  }
  return JSON.stringify(out);
})`

// TestConsoleProofAgent compares the Proof page's check of version 3 bundles with
// proof.Verify: the real ones, and doctored ones whose every digest and signature holds
// but whose base covers another method, another intent's route or no content-digest,
// whose body is not the proposal, whose agent the intent does not list, whose receipt
// names no agent for a delegated intent, or whose parts disagree with the receipt's
// version; and many one-character changes of the base's @signature-params and of its
// content-digest, so that the page reads RFC 8941 as the service's library does. Each
// must fail at the same check with the same message, or verify with the same agent.
func TestConsoleProofAgent(t *testing.T) {
	// Not parallel: runs Chromium, whose 5s page waits two browsers at once could miss.
	s := startServer(t, nil)
	b := newConsoleBrowser(t, s)
	o := decideWithAgents(t, s)
	v3 := readV3(t, s.proofOf(o.delegated))
	bare := s.proofOf(o.bare)
	agent := o.agent
	t.Logf("the signature base:\n%s", v3.base)

	body := func(text string) []byte { return []byte(text) }
	// rebase is the base with its content-digest that of body.
	rebase := func(base string, body []byte) string {
		line := `"content-digest": ` + httpsig.ContentDigest(body)
		lines := strings.Split(base, "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, `"content-digest": `) {
				lines[i] = line
			}
		}
		return strings.Join(lines, "\n")
	}
	path := `"@path": /intents/` + o.delegated + `/proposal`
	if !strings.Contains(v3.base, path) || !strings.Contains(v3.base, `"@method": POST`) {
		t.Fatalf("the base does not read as expected:\n%s", v3.base)
	}
	params := v3.base[strings.LastIndex(v3.base, "\n")+1:]
	withoutDigest := strings.Replace(strings.Replace(v3.base, `"content-digest": `+httpsig.ContentDigest(v3.body)+"\n", "", 1), ` "content-digest")`, `)`, 1)
	// The delegated intent's bundle with a receipt of version 2, which names no agent.
	noAgent := resign(t, v3.raw, func(m map[string]json.RawMessage, r *crypto.Receipt) {
		r.Version, r.Agent = crypto.ReceiptVersion, nil
		delete(m, "agent")
		delete(m, "log")
	})
	withPartOnV2 := editBundle(t, bare, func(m map[string]json.RawMessage) {
		m["agent"], _ = json.Marshal(intentd.ProofAgent{SignatureBase: v3.base, Body: v3.body})
	})
	noPart := editBundle(t, v3.raw, func(m map[string]json.RawMessage) { delete(m, "agent") })
	changed := strings.Replace(v3.base, "POST", "PUT", 1)
	cases := []struct {
		name, check string // check "" is a bundle that verifies
		bundle      []byte
	}{
		{"the delegated intent's", "", v3.raw},
		{"the undelegated intent's", "", s.proofOf(o.undelegated)},
		{"the unsigned proposal's", "", bare},
		{"the unsigned proposal's, in a receipt of version 1", "", resign(t, bare, func(m map[string]json.RawMessage, r *crypto.Receipt) {
			r.Version, r.FailureKind, r.EvidenceMissing = crypto.ReceiptVersion1, "", nil
			delete(m, "log")
		})},
		{"signed again as it was", "", v3.reAgent(t, v3.base, v3.body, agent, "agent-payer-auth")},
		{"without a tag", "", v3.reAgent(t, v3.base, v3.body, agent, "")},
		{"a path behind a prefix", "", v3.reAgent(t, strings.Replace(v3.base, path, `"@path": /api/v1/intents/`+o.delegated+`/proposal`, 1), v3.body, agent, "")},
		{"a path in capitals", "", v3.reAgent(t, strings.Replace(v3.base, path, `"@path": `+strings.ToUpper(`/intents/`+o.delegated+`/proposal`), 1), v3.body, agent, "")},
		{"a path with a long s, which Go folds to s", "", v3.reAgent(t, strings.Replace(v3.base, "/proposal", "/propoſal", 1), v3.body, agent, "")},
		{"a path with a dotted capital I, which Go lowers to i", "", v3.reAgent(t, strings.Replace(v3.base, path, `"@path": /x/İntents/`+o.delegated+`/proposal`, 1), v3.body, agent, "")},
		{"the body changed", proof.CheckAgent, v3.withPart(t, v3.base, body(`{"solution":"`+solutionOutOfStock+`"}`))},
		{"the base changed", proof.CheckAgent, v3.withPart(t, changed, v3.body)},
		{"the base bound again, not signed again", proof.CheckAgent, resign(t, v3.raw, func(m map[string]json.RawMessage, r *crypto.Receipt) {
			r.Agent = crypto.NewReceiptAgent(agent.pub, "agent-payer-auth", []byte(changed), make([]byte, 64))
			r.Agent.Signature = v3.sig
			delete(m, "log")
			m["agent"], _ = json.Marshal(intentd.ProofAgent{SignatureBase: changed, Body: v3.body})
		})},
		{"an agent the intent does not list", proof.CheckAgent, v3.reAgent(t, v3.base, v3.body, newAgentKey(t), "agent-payer-auth")},
		{"another intent's proposal", proof.CheckAgent, v3.reAgent(t, strings.Replace(v3.base, o.delegated, uuid.NewString(), 1), v3.body, agent, "")},
		{"a GET", proof.CheckAgent, v3.reAgent(t, strings.Replace(v3.base, `"@method": POST`, `"@method": GET`, 1), v3.body, agent, "")},
		{"a method in small letters", proof.CheckAgent, v3.reAgent(t, strings.Replace(v3.base, `"@method": POST`, `"@method": post`, 1), v3.body, agent, "")},
		{"no content-digest covered", proof.CheckAgent, v3.reAgent(t, withoutDigest, v3.body, agent, "")},
		{"a body that is another proposal", proof.CheckAgent, v3.reAgent(t, rebase(v3.base, body(`{"solution":"`+solutionOutOfStock+`"}`)), body(`{"solution":"`+solutionOutOfStock+`"}`), agent, "")},
		{"a body with another member", proof.CheckAgent, func() []byte {
			bb := body(`{"solution":"` + solutionPasses + `","note":1}`)
			return v3.reAgent(t, rebase(v3.base, bb), bb, agent, "")
		}()},
		{"a body whose member is in capitals", proof.CheckAgent, func() []byte {
			bb := body(`{"SOLUTION":"` + solutionPasses + `"}`)
			return v3.reAgent(t, rebase(v3.base, bb), bb, agent, "")
		}()},
		{"a body with a byte order mark", proof.CheckAgent, func() []byte {
			bb := append([]byte("\uFEFF"), v3.body...)
			return v3.reAgent(t, rebase(v3.base, bb), bb, agent, "")
		}()},
		{"a body spaced out", "", func() []byte {
			bb := body(" {\n \"solution\" : \"" + solutionPasses + "\" }\n")
			return v3.reAgent(t, rebase(v3.base, bb), bb, agent, "")
		}()},
		{"a base without its parameters", proof.CheckAgent, v3.reAgent(t, strings.TrimSuffix(v3.base, "\n"+params), v3.body, agent, "")},
		{"a base with a line too many", proof.CheckAgent, v3.reAgent(t, `"@query": ?`+"\n"+v3.base, v3.body, agent, "")},
		{"a base covering @method twice", proof.CheckAgent, v3.reAgent(t, `"@method": POST`+"\n"+strings.Replace(v3.base, `("@method"`, `("@method" "@method"`, 1), v3.body, agent, "")},
		{"the receipt names no agent", proof.CheckAgent, noAgent},
		{"the agent part is gone", proof.CheckBundle, noPart},
		{"an agent part beside a version 2 receipt", proof.CheckBundle, withPartOnV2},
	}
	var bundles [][]byte
	for _, c := range cases {
		bundles = append(bundles, c.bundle)
	}
	// One-character changes of the parameters and of the content-digest, each signed
	// again: most fail at the agent check, some verify, and the page must agree.
	const alphabet = ` ;=()":*?@%-.1a\`
	fuzzed := 0
	digestLine := `"content-digest": ` + httpsig.ContentDigest(v3.body)
	for _, target := range []string{params, digestLine} {
		for i := range len(target) {
			if i%3 != 0 && target == params { // every third position: enough to cross each part of it
				continue
			}
			for _, ch := range alphabet {
				changed := target[:i] + string(ch) + target[i+1:]
				if changed == target {
					continue
				}
				bundles = append(bundles, v3.reAgent(t, strings.Replace(v3.base, target, changed, 1), v3.body, agent, ""))
				fuzzed++
			}
		}
		bundles = append(bundles, v3.reAgent(t, strings.Replace(v3.base, target, target[:len(target)/2], 1), v3.body, agent, ""))
		fuzzed++
	}
	t.Logf("%d cases and %d one-character changes", len(cases), fuzzed)

	texts := make([]string, len(bundles))
	for i, bb := range bundles {
		texts[i] = string(bb)
	}
	tj, _ := json.Marshal(texts)
	b.open("#/proof")
	b.wait("the console", `document.querySelector("h1")`, 5*time.Second)
	var answer string
	b.eval(fmt.Sprintf(`%s(%s, %s)`, verifyScript, jsString(b.base), tj), &answer)
	var page []verdict
	if err := json.Unmarshal([]byte(answer), &page); err != nil || len(page) != len(bundles) {
		t.Fatalf("the page answered %d verdicts (%v), want %d", len(page), err, len(bundles))
	}
	checks := map[string]int{}
	for i, bb := range bundles {
		name := fmt.Sprintf("change %d", i-len(cases))
		if i < len(cases) {
			name = cases[i].name
		}
		want, got := goVerdict(bb), page[i]
		checks[want.Check]++
		if i < len(cases) && want.Check != cases[i].check {
			t.Errorf("%s: intentctl verify says %+v, want the check %q", name, want, cases[i].check)
		}
		if got.Check != want.Check || got.Message != want.Message {
			t.Errorf("%s: the page says check %q: %s\nintentctl verify says check %q: %s", name, got.Check, got.Message, want.Check, want.Message)
			continue
		}
		if (got.Agent == nil) != (want.Agent == nil) || got.Agent != nil && *got.Agent != *want.Agent {
			t.Errorf("%s: the page reports the agent %+v, intentctl verify %+v", name, got.Agent, want.Agent)
		}
	}
	t.Logf("verdicts by check: %v", checks)
}
