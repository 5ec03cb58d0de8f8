package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/proof"
)

// demoPolicySource is what the demo stores: the policy the demo catalog is written for,
// the t-shirt purchase of docs/policy-language.md (a test keeps the two the same).
var demoPolicySource = evidence.DemoPolicy

// The demo's intent parameters and solutions, from the demo catalog (docs/evidence.md
// lists what each product gives and how it fares against the demo policy).
const (
	demoSize      = "M"
	demoBudget    = 3000                                               // cents, shipping included
	demoPasses    = "https://shop.example/products/tshirt-navy-m"      // 1999 + 499 shipping
	demoFails     = "https://shop.example/products/premium-tee-navy-m" // 2899 + 599 shipping
	demoBudgetIdx = 4                                                  // the budget constraint of demoPolicySource
)

var demoColors = []string{"navy", "blue"}

// demoCase is one intent of the demo: what is proposed, what should happen, and what did.
type demoCase struct {
	ID       string `json:"intent_id"`
	Solution string `json:"solution"`
	Expect   string `json:"expected"`
	why      string
	// want is the outcome expected; wantFailed, for a failure, the constraint that must
	// be among its failures.
	want       intentd.State
	wantFailed int

	Outcome  *client.IntentStatus `json:"outcome,omitempty"`
	EventID  uint64               `json:"event_id,omitempty"`
	Verified *proof.VerifyReport  `json:"proof,omitempty"`
}

// demoReport is the --json output of demo.
type demoReport struct {
	Server    string      `json:"server"`
	PublicKey string      `json:"public_key"`
	KeyID     string      `json:"key_id"`
	PolicyID  string      `json:"policy_id"`
	AuthorKey string      `json:"author_key"`
	Intents   []*demoCase `json:"intents"`
	AsExpect  bool        `json:"as_expected"`
}

// demo runs the life of two intents against the server, one meant to succeed and one
// meant to fail, and checks every step, so that a new user sees the whole service work
// with one command and an operator can tell a deployment works end to end.
func (c *cli) demo(args []string) error {
	fs := c.flags("demo")
	wait := fs.Duration("wait", time.Minute, "how long to wait for the two outcomes")
	_, api, err := c.begin(fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	say := func(format string, args ...any) {
		if !c.g.json {
			fmt.Fprintf(c.stdout, format+"\n", args...)
		}
	}
	rep := &demoReport{Server: api.BaseURL()}
	say("intentctl demo: two intents from start to verified proof, against %s", rep.Server)
	say("")

	serverKey, p, err := c.demoServerAndPolicy(api, rep, say)
	if err != nil {
		return err
	}

	// 3. A key that lives as long as this run: the demo signs what it submits, as a
	// real client does, without leaving a key file behind.
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	rep.AuthorKey = crypto.EncodeBase58(pub)
	say("3. Made a throwaway Ed25519 key, in memory only: public key %s.", rep.AuthorKey)

	attrs := policy.Attrs{
		"size":            policy.StringValue(demoSize),
		"colors":          policy.StringSetValue(demoColors...),
		"max_price_cents": policy.IntValue(demoBudget),
	}
	if err := p.CheckAttrs(attrs); err != nil {
		return fmt.Errorf("the demo's attributes do not fit its policy: %v", err)
	}
	rep.Intents = []*demoCase{
		{ID: uuid.NewString(), Solution: demoPasses, want: intentd.StateSuccess, wantFailed: -1,
			Expect: "success", why: "the right size and colour, 2498 cents with shipping"},
		{ID: uuid.NewString(), Solution: demoFails, want: intentd.StateFailure, wantFailed: demoBudgetIdx,
			Expect: "failure", why: "the right size and colour, but 3498 cents with shipping is over budget"},
	}
	ids := []string{rep.Intents[0].ID, rep.Intents[1].ID}

	// The stream is opened before the first proposal, so that no outcome can come
	// before it; the ids are fresh, so nothing older matches the filter.
	sctx, scancel := context.WithTimeout(c.ctx, *wait)
	defer scancel()
	stream, err := api.Events(sctx, client.StreamOptions{IntentIDs: ids, MaxRetries: 5})
	var ae *client.APIError
	switch {
	case errors.As(err, &ae):
		say("   (the event stream is refused: %v; the outcomes will be read from the status instead)", err)
		stream = nil
	case err != nil:
		return c.reach(err)
	default:
		defer stream.Close()
	}

	for i, dc := range rep.Intents {
		if err := c.demoSubmit(api, p, attrs, priv, dc.ID); err != nil {
			return err
		}
		n, again := 4+2*i, ""
		if i > 0 {
			again = " with the same parameters"
		}
		say("%d. Signed intent %s with that key and submitted it%s:", n, dc.ID, again)
		say("   size %s, colours %s, at most %d cents with shipping.", demoSize, strings.Join(demoColors, " or "), demoBudget)
		if err := c.demoPropose(api, dc.ID, dc.Solution); err != nil {
			return err
		}
		say("%d. Proposed %s for it.", n+1, dc.Solution)
		say("   Expected: %s (%s).", dc.Expect, dc.why)
		if i < len(rep.Intents)-1 {
			// The next proposal waits for this one's decision, so that the outcomes
			// come in the order the demo tells them, whatever the server's load.
			c.demoSettle(sctx, api, dc.ID)
		}
	}

	say("8. Waiting for both outcomes (%s)...", map[bool]string{true: "event stream", false: "status polling"}[stream != nil])
	if err := c.demoAwait(sctx, api, stream, rep.Intents, p, say); err != nil {
		if errors.Is(err, context.DeadlineExceeded) && c.ctx.Err() == nil {
			return &exitError{exitRefused, fmt.Errorf("no outcome within --wait %s", *wait)}
		}
		return c.reach(err)
	}

	say("9. Fetched both proofs and checked them here against the server's key:")
	for _, dc := range rep.Intents {
		if err := c.demoVerify(api, dc, serverKey, say); err != nil {
			return err
		}
	}

	var problems []string
	for _, dc := range rep.Intents {
		if msg := dc.check(); msg != "" {
			problems = append(problems, msg)
		}
	}
	rep.AsExpect = len(problems) == 0
	if c.g.json {
		if err := c.printJSON(rep); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return &exitError{exitRefused, fmt.Errorf("not as expected: %s", strings.Join(problems, "; "))}
	}
	say("")
	say("Everything went as expected: one success, one failure on the budget, two proofs verified.")
	return nil
}

// demoServerAndPolicy is the demo's steps 1 and 2: the key the server signs its receipts
// with, and the demo policy stored there, its id checked against the compilation here.
func (c *cli) demoServerAndPolicy(api *client.Client, rep *demoReport, say func(string, ...any)) (ed25519.PublicKey, *policy.Policy, error) {
	// 1. The key the proofs must verify under, fetched before anything else: a server
	// without one cannot show the demo's end.
	ctx, cancel := c.call()
	serverKey, err := api.PublicKey(ctx)
	cancel()
	if err != nil {
		return nil, nil, c.reach(err)
	}
	rep.PublicKey, rep.KeyID = crypto.EncodeBase58(serverKey), crypto.KeyID(serverKey)
	say("1. The server signs its receipts with key %s (key id %s), from GET /info.", rep.PublicKey, rep.KeyID)

	// 2. The policy, compiled here too: its parameter types build the intents, and its
	// id must be the server's.
	p, err := policy.Compile(demoPolicySource)
	if err != nil {
		return nil, nil, fmt.Errorf("the demo policy does not compile: %v", err)
	}
	ctx, cancel = c.call()
	rep.PolicyID, err = api.PutPolicy(ctx, demoPolicySource)
	cancel()
	if err != nil {
		return nil, nil, c.reach(err)
	}
	if rep.PolicyID != p.ID() {
		return nil, nil, fmt.Errorf("the server stored the demo policy as %s, but it compiles here to %s", rep.PolicyID, p.ID())
	}
	say("2. Stored the demo policy %s as %s.", p.Name(), rep.PolicyID)
	say("   It wants a t-shirt or polo of the intent's size and colours, not black, in stock,")
	say("   costing at most the intent's budget with shipping.")
	return serverKey, p, nil
}

// demoSubmit builds, signs and submits one intent of the demo.
func (c *cli) demoSubmit(api *client.Client, p *policy.Policy, attrs policy.Attrs, priv ed25519.PrivateKey, id string) error {
	intent, err := json.Marshal(intentWire{ID: id, PolicyID: p.ID(), Attrs: &attrs})
	if err != nil {
		return err
	}
	auth, err := crypto.SignEd25519(priv, intent)
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	return c.reach(api.SubmitIntent(ctx, intent, auth))
}

// demoPropose proposes a solution, trying again a few times while the server is busy:
// a 503 changes nothing, and a demo should not fail for a moment's load.
func (c *cli) demoPropose(api *client.Client, id, solution string) error {
	for attempt := 1; ; attempt++ {
		ctx, cancel := c.call()
		err := api.Propose(ctx, id, solution)
		cancel()
		var ae *client.APIError
		if err == nil || !errors.As(err, &ae) || ae.Code != intentd.CodeCapacityExceeded || attempt == 5 {
			return c.reach(err)
		}
		delay := max(ae.RetryAfter, 200*time.Millisecond)
		select {
		case <-c.ctx.Done():
			return c.ctx.Err()
		case <-time.After(delay):
		}
	}
}

// demoSettle waits, quietly, until intent id is decided or ctx ends; whatever the
// wait finds, demoAwait reports.
func (c *cli) demoSettle(ctx context.Context, api *client.Client, id string) {
	for ctx.Err() == nil {
		cctx, cancel := c.call()
		st, err := api.Status(cctx, id)
		cancel()
		if err != nil || st.State.Terminal() {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// demoAwait waits until every case has its outcome, from the stream or, without one,
// from the status, and prints each as it comes.
func (c *cli) demoAwait(ctx context.Context, api *client.Client, stream *client.EventStream, cases []*demoCase, p *policy.Policy, say func(string, ...any)) error {
	pending := len(cases)
	record := func(eventID uint64, st *client.IntentStatus) {
		for _, dc := range cases {
			if dc.Outcome == nil && strings.EqualFold(dc.ID, st.IntentID) {
				dc.Outcome, dc.EventID = st, eventID
				pending--
				dc.print(p, say)
			}
		}
	}
	for pending > 0 {
		if stream != nil {
			ev, err := stream.Next()
			if err != nil {
				return err
			}
			st, err := ev.Outcome()
			if err != nil {
				return err
			}
			record(ev.ID, st)
			continue
		}
		for _, dc := range cases {
			if dc.Outcome != nil {
				continue
			}
			st, err := api.Status(ctx, dc.ID)
			if err != nil {
				return err
			}
			if st.State.Terminal() {
				if st.IntentID == "" {
					st.IntentID = dc.ID
				}
				record(0, st)
			}
		}
		if pending > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// print says how an intent ended: the outcome, the evidence the policy read, and each
// failed constraint with its reason.
func (dc *demoCase) print(p *policy.Policy, say func(string, ...any)) {
	st := dc.Outcome
	from := "its status"
	if dc.EventID > 0 {
		from = fmt.Sprintf("event %d", dc.EventID)
	}
	outcome := string(st.State)
	if st.FailureKind != "" {
		outcome += " (" + string(st.FailureKind) + ")"
	}
	say("   %s: intent %s ended in %s.", from, dc.ID, outcome)
	var ev map[string]json.RawMessage
	if len(st.Evidence) > 0 && json.Unmarshal(st.Evidence, &ev) == nil {
		var parts []string
		for _, f := range p.EvidenceSchema() {
			if v, ok := ev[f.Name]; ok {
				parts = append(parts, f.Name+"="+string(v))
			}
		}
		say("     evidence: %s", strings.Join(parts, " "))
	}
	if len(st.EvidenceMissing) > 0 {
		say("     evidence missing or ill-typed: %s", strings.Join(st.EvidenceMissing, ", "))
	}
	if st.Reason != "" && len(st.Failures) == 0 {
		say("     reason: %s", st.Reason)
	}
	for _, f := range st.Failures {
		say("     failed constraint %d: %s", f.Index, f.PrettyExpr)
		say("       reason: %s", f.Reason)
	}
}

// demoVerify fetches a case's proof and verifies it under the server's key. A proof
// that does not verify ends the demo with exit status 4, as intentctl verify does.
func (c *cli) demoVerify(api *client.Client, dc *demoCase, serverKey ed25519.PublicKey, say func(string, ...any)) error {
	var bundle json.RawMessage
	for attempt := 1; ; attempt++ {
		ctx, cancel := c.call()
		b, err := api.Proof(ctx, dc.ID)
		cancel()
		var ae *client.APIError
		if err == nil {
			bundle = b
			break
		}
		// The outcome is seen, so the proof is normally there; a moment's grace
		// covers a server that makes it visible a little later.
		if !errors.As(err, &ae) || ae.Code != intentd.CodeProofNotReady || attempt == 20 {
			if ae != nil && ae.Code == intentd.CodeNoProof {
				say("   intent %s: no proof (%s)", dc.ID, ae.Message)
				return nil
			}
			return c.reach(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	vr, err := proof.Verify(bundle, serverKey)
	if err != nil {
		var ve *proof.VerifyError
		if errors.As(err, &ve) {
			return &exitError{exitVerify, fmt.Errorf("the proof of intent %s FAILED verification: check %s: %s", dc.ID, ve.Check, ve.Message)}
		}
		return &exitError{exitVerify, fmt.Errorf("the proof of intent %s FAILED verification: %v", dc.ID, err)}
	}
	dc.Verified = vr
	what := string(vr.Outcome)
	if n := len(vr.Failures); n > 0 {
		idx := make([]string, n)
		for i, f := range vr.Failures {
			idx[i] = fmt.Sprint(f.Index)
		}
		what += ", constraint(s) " + strings.Join(idx, ", ") + " failed, as the policy re-run here on the evidence agrees"
	}
	say("   intent %s: proof verified: signed by key %s (key id %s); it states %s.", vr.IntentID, vr.PublicKey, vr.KeyID, what)
	return nil
}

// check compares what happened to what was expected; "" when they agree.
func (dc *demoCase) check() string {
	st := dc.Outcome
	switch {
	case st == nil:
		return fmt.Sprintf("intent %s has no outcome", dc.ID)
	case st.State != dc.want:
		return fmt.Sprintf("intent %s ended in %s, expected %s", dc.ID, st.State, dc.want)
	case dc.want == intentd.StateFailure && st.FailureKind != intentd.FailureConstraints:
		return fmt.Sprintf("intent %s failed (%s), expected a constraint failure", dc.ID, st.FailureKind)
	case dc.wantFailed >= 0 && !slices.ContainsFunc(st.Failures, func(f policy.Failure) bool { return f.Index == dc.wantFailed }):
		return fmt.Sprintf("intent %s: constraint %d is not among its failures", dc.ID, dc.wantFailed)
	case dc.Verified == nil:
		return fmt.Sprintf("intent %s has no verified proof", dc.ID)
	case dc.Verified.Outcome != st.State || !strings.EqualFold(dc.Verified.IntentID, dc.ID):
		return fmt.Sprintf("intent %s: its proof states %s of intent %s", dc.ID, dc.Verified.Outcome, dc.Verified.IntentID)
	}
	return ""
}
