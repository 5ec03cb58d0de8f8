package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
	"github.com/intentd/intentd/policy/smt"
	"github.com/intentd/intentd/proof"
)

func (c *cli) info(args []string) error {
	_, api, err := c.begin(c.flags("info"), args, 0, "no arguments")
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	info, err := api.Info(ctx)
	if err != nil {
		return c.reach(err)
	}
	if c.g.json {
		return c.printJSON(info)
	}
	fmt.Fprintf(c.stdout, "server       %s\napi version  %s\nunsigned     %s\nintent ttl   %ds\n",
		api.BaseURL(), info.APIVersion, map[bool]string{true: "permitted", false: "refused"}[info.UnsignedPermitted], info.IntentTTLSeconds)
	if info.PublicKey != "" {
		fmt.Fprintf(c.stdout, "receipt key  %s\nkey id       %s\n", info.PublicKey, info.KeyID)
	} else {
		fmt.Fprintf(c.stdout, "receipt key  none: this server signs no receipts\n")
	}
	return nil
}

func (c *cli) policy(args []string) error {
	if len(args) > 0 {
		c.enter(args[0])
	}
	fs := c.flags("policy")
	threshold := policyTestFlags(fs, args)
	solver := analysisFlags(fs, args)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 3 && pos[0] == "diff" {
		return c.policyDiff(pos[1], pos[2], *solver)
	}
	if len(pos) != 2 {
		return usagef("want push FILE, get ID, delete ID, check FILE, test DIR or diff OLD NEW")
	}
	sub, arg := pos[0], pos[1]
	switch sub {
	case "check":
		return c.policyCheck(arg, *solver)
	case "test":
		return c.policyTest(arg, *threshold)
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	switch sub {
	case "push":
		src, err := readSource(arg)
		if err != nil {
			return err
		}
		id, err := api.PutPolicy(ctx, src)
		if err != nil {
			return c.reach(err)
		}
		return c.printID(id)
	case "get":
		text, err := api.Policy(ctx, arg)
		if err != nil {
			return c.reach(err)
		}
		if c.g.json {
			return c.printJSON(map[string]string{"id": arg, "source": text})
		}
		_, err = io.WriteString(c.stdout, text)
		return err
	case "delete":
		if err := api.DeletePolicy(ctx, arg); err != nil {
			return c.reach(err)
		}
		if c.g.json {
			return c.printJSON(map[string]string{"deleted": arg})
		}
		fmt.Fprintf(c.stdout, "deleted %s\n", arg)
		return nil
	}
	return usagef("unknown policy command %q (want push, get, delete, check, test or diff)", sub)
}

// policyCheck compiles a policy here, storing nothing, and prints its id or its errors
// with a caret under each spot; then the analysis of a policy that compiles, which
// needs a solver here: without one, the text says so and the command succeeds (the
// policy compiles), and --json, which promises the analysis, fails.
func (c *cli) policyCheck(file, solver string) error {
	src, err := readSource(file)
	if err != nil {
		return err
	}
	p, err := policy.Compile(src)
	if err != nil {
		var list policy.ErrorList
		if errors.As(err, &list) {
			fmt.Fprint(c.stderr, list.Detail(src))
			if !strings.HasSuffix(list.Detail(src), "\n") {
				fmt.Fprintln(c.stderr)
			}
			return &exitError{exitRefused, fmt.Errorf("%s does not compile: %d error(s)", file, len(list))}
		}
		return &exitError{exitRefused, fmt.Errorf("%s does not compile: %v", file, err)}
	}
	a, aerr := c.analyse(p, solver)
	if c.g.json {
		if aerr != nil {
			return noSolver(aerr)
		}
		params := make([]map[string]any, 0)
		for _, prm := range p.Parameters() {
			params = append(params, map[string]any{"name": prm.Name, "type": prm.Type.String(), "optional": prm.Optional})
		}
		return c.printJSON(checkReport{ID: p.ID(), Name: p.Name(), Parameters: params, Constraints: p.NumConstraints(), Analysis: a})
	}
	fmt.Fprintln(c.stdout, p.ID())
	switch {
	case errors.Is(aerr, smt.ErrNotFound), errors.Is(aerr, policy.ErrUnsupported):
		fmt.Fprintf(c.stderr, "intentctl policy check: %v\n", noSolver(aerr))
	case aerr != nil:
		return aerr
	default:
		c.printAnalysis(p, a)
	}
	return nil
}

// readSource reads a policy file, or standard input for "-".
func readSource(file string) (string, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, policy.MaxSourceBytes+1))
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return "", usagef("%v", err)
	}
	return string(b), nil
}

func (c *cli) printID(id string) error {
	if c.g.json {
		return c.printJSON(map[string]string{"id": id})
	}
	_, err := fmt.Fprintln(c.stdout, id)
	return err
}

func (c *cli) propose(args []string) error {
	fs := c.flags("propose")
	agent := addAgentKeyFlags(fs)
	pos, api, err := c.begin(fs, args, 2, "ID SOLUTION")
	if err != nil {
		return err
	}
	if err := agent.apply(c); err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	if err := api.Propose(ctx, pos[0], pos[1]); err != nil {
		var ae *client.APIError
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			return fmt.Errorf("%w (nothing changed; try again in %s)", err, ae.RetryAfter)
		}
		if intentd.ErrorCode(err) == intentd.CodeAgentSignatureRequired {
			return fmt.Errorf("%w (nothing changed; an agent the intent lists proposes with --agent-key FILE)", err)
		}
		return c.reach(err)
	}
	if c.g.json {
		return c.printJSON(map[string]string{"intent_id": pos[0], "status": string(intentd.StateProcessing)})
	}
	fmt.Fprintf(c.stdout, "%s processing: the outcome follows on its status and the event stream\n", pos[0])
	return nil
}

func (c *cli) status(args []string) error {
	pos, api, err := c.begin(c.flags("status"), args, 1, "ID")
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	st, err := api.Status(ctx, pos[0])
	if err != nil {
		return c.reach(err)
	}
	if c.g.json {
		return c.printJSON(st)
	}
	if st.IntentID == "" {
		st.IntentID = pos[0]
	}
	printOutcome(c.stdout, "", st)
	if st.State != intentd.StateOpen {
		return nil
	}
	// An open intent waits for a solution: what its evidence must satisfy is what
	// whoever looks for one needs next.
	req, err := api.Requirements(ctx, st.IntentID)
	var ae *client.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		// A server from before the route: the status is all there is.
		return nil
	}
	if err != nil {
		return c.reach(err)
	}
	printRequirements(c.stdout, req)
	return nil
}

// printRequirements writes what the evidence of an open intent must satisfy: the
// residual of each constraint the evidence decides, and each constraint that no
// evidence can make hold, with its reason. Constraints that hold whatever the evidence
// are left out.
func printRequirements(w io.Writer, req *intentd.Requirements) {
	header := false
	for _, r := range req.Constraints {
		if r.State != policy.ResidualOpen {
			continue
		}
		if !header {
			fmt.Fprintln(w, "    the evidence must satisfy:")
			header = true
		}
		fmt.Fprintf(w, "      %s\n", r.Residual)
	}
	for _, r := range req.Constraints {
		if r.State == policy.ResidualFails {
			fmt.Fprintf(w, "    constraint %d fails whatever the evidence  %s\n      %s\n", r.Index, r.PrettyExpr, r.Reason)
		}
	}
}

// printOutcome writes a status or an event as readable lines: the first says who and
// what, the next ones say why.
func printOutcome(w io.Writer, prefix string, st *client.IntentStatus) {
	line := prefix + st.IntentID + " " + string(st.State)
	if st.FailureKind != "" {
		line += " (" + string(st.FailureKind) + ")"
	}
	if st.Proposal != nil {
		line += "  solution " + st.Proposal.Solution
	}
	fmt.Fprintln(w, line)
	if a := st.Agent; a != nil {
		fmt.Fprintf(w, "    agent %s%s\n", a.Key, tagged(a.Tag))
	}
	if st.MandateID != "" {
		fmt.Fprintf(w, "    mandate %s\n", st.MandateID)
	}
	// A constraint failure's reason repeats the constraints listed below it.
	if st.Reason != "" && len(st.Failures) == 0 {
		fmt.Fprintf(w, "    reason: %s\n", st.Reason)
	}
	// Said before the constraints: of a failure of kind evidence it is what a person
	// reviewing the solution looks for.
	if len(st.EvidenceMissing) > 0 {
		fmt.Fprintf(w, "    evidence missing or ill-typed: %s\n", strings.Join(st.EvidenceMissing, ", "))
	}
	for _, f := range st.Failures {
		fmt.Fprintf(w, "    constraint %d  %s\n      %s\n", f.Index, f.PrettyExpr, f.Reason)
	}
}

func (c *cli) get(args []string) error {
	pos, api, err := c.begin(c.flags("get"), args, 1, "ID")
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	ai, err := api.Intent(ctx, pos[0])
	if err != nil {
		return c.reach(err)
	}
	return c.printJSON(ai)
}

func (c *cli) proof(args []string) error {
	fs := c.flags("proof")
	out := fs.String("o", "", "write the bundle to FILE instead of standard output")
	pos, api, err := c.begin(fs, args, 1, "ID")
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	bundle, err := api.Proof(ctx, pos[0])
	if err != nil {
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Code == intentd.CodeProofNotReady {
			return fmt.Errorf("%w (wait for it: intentctl watch --intent %s --until-terminal)", err, pos[0])
		}
		return c.reach(err)
	}
	data := append([]byte(bundle), '\n')
	if *out == "" {
		_, err = c.stdout.Write(data)
		return err
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return err
	}
	if !c.g.json {
		fmt.Fprintf(c.stdout, "wrote the proof of %s to %s; check it with: intentctl verify %s --key <the server's key>\n", pos[0], *out, *out)
	}
	return nil
}

func (c *cli) verify(args []string) error {
	fs := c.flags("verify")
	keyText := fs.String("key", "", "the service's public key (Base58, from intentctl info); without it the bundle's own key is used, which proves less")
	policyFile := fs.String("log-policy", "", "a witness policy (C2SP tlog-policy): the bundle's log checkpoint must carry enough valid cosignatures for its quorum")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := want(pos, 1, "FILE"); err != nil {
		return err
	}
	var trusted ed25519.PublicKey
	if *keyText != "" {
		k, err := crypto.DecodeBase58(strings.TrimSpace(*keyText))
		if err != nil || len(k) != ed25519.PublicKeySize {
			return usagef("--key: want the Base58 of a 32-byte Ed25519 public key")
		}
		trusted = k
	}
	var bundle []byte
	if pos[0] == "-" {
		bundle, err = io.ReadAll(os.Stdin)
	} else {
		bundle, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return usagef("%v", err)
	}
	policy, err := readLogPolicy(*policyFile)
	if err != nil {
		return err
	}
	var rep *proof.VerifyReport
	if policy != nil {
		rep, err = proof.VerifyWitnessed(bundle, trusted, policy)
	} else {
		rep, err = proof.Verify(bundle, trusted)
	}
	if err != nil {
		var ve *proof.VerifyError
		if errors.As(err, &ve) {
			msg := ve.Message
			if ve.Check == proof.CheckKey && trusted != nil {
				msg = wrongKeyMessage(bundle, trusted)
			}
			if c.g.json {
				c.printJSON(map[string]any{"verified": false, "check": ve.Check, "message": msg})
			}
			return &exitError{exitVerify, fmt.Errorf("verification FAILED: check %s: %s", ve.Check, msg)}
		}
		return &exitError{exitVerify, fmt.Errorf("verification FAILED: %v", err)}
	}
	if c.g.json {
		return c.printJSON(struct {
			Verified bool `json:"verified"`
			*proof.VerifyReport
		}{true, rep})
	}
	w := c.stdout
	fmt.Fprintf(w, "verified: the proof of intent %s holds\n", rep.IntentID)
	outcome := string(rep.Outcome)
	if n := len(rep.Failures); n > 0 {
		outcome += fmt.Sprintf(" (%d constraint failure(s))", n)
	}
	fmt.Fprintf(w, "  outcome    %s\n", outcome)
	if rep.FailureKind != "" {
		fmt.Fprintf(w, "  kind       %s\n", rep.FailureKind)
	}
	if len(rep.EvidenceMissing) > 0 {
		fmt.Fprintf(w, "  missing    %s (absent or ill-typed in the evidence)\n", strings.Join(rep.EvidenceMissing, ", "))
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "    constraint %d  %s\n      %s\n", f.Index, f.PrettyExpr, f.Reason)
	}
	fmt.Fprintf(w, "  policy     %s\n", rep.PolicyID)
	author := rep.Authorship
	if rep.AuthorKey != "" {
		author += " " + rep.AuthorKey
	}
	fmt.Fprintf(w, "  author     %s\n", author)
	if a := rep.Agent; a != nil {
		delegated := "the intent delegates to no agent in particular"
		if a.Delegated {
			delegated = "delegated to by the author, who listed its key in the intent"
			if rep.Mandate != nil {
				delegated = "delegated to by the mandate's author, who listed its key in the mandate"
			}
		}
		fmt.Fprintf(w, "  agent      %s%s, signed the proposal to %s; %s\n", a.Key, tagged(a.Tag), a.Authority, delegated)
	}
	if m := rep.Mandate; m != nil {
		signer := m.Authorship
		if m.AuthorKey != "" {
			signer += " " + m.AuthorKey
		}
		fmt.Fprintf(w, "  mandate    %s, signed %s, until %s\n", m.ID, signer, m.ExpiresAt.UTC().Format(time.RFC3339))
		fmt.Fprintf(w, "  decided    %s against spent %d in %d purchase(s) (this period: %d in %d); amount %d\n",
			m.DecidedAt.UTC().Format(time.RFC3339Nano), m.Spent, m.Purchases, m.PeriodSpent, m.PeriodPurchases, m.Amount)
	}
	trust := "trusted (given with --key)"
	if !rep.KeyTrusted {
		trust = "NOT trusted: the key inside the bundle; pass --key with the server's key (intentctl info)"
	}
	fmt.Fprintf(w, "  signed by  key %s (key id %s), %s\n", rep.PublicKey, rep.KeyID, trust)
	fmt.Fprintf(w, "  issued at  %s\n", rep.IssuedAt.Format("2006-01-02 15:04:05.000Z07:00"))
	if rep.Log != nil {
		fmt.Fprintf(w, "  in log     leaf %d of %d, %s\n", rep.Log.LeafIndex, rep.Log.TreeSize, rep.Log.Origin)
		if policy != nil {
			fmt.Fprintf(w, "  witnessed  cosigned by %s, as the policy's quorum asks\n", cosignerList(rep.Log.Cosigners))
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	return nil
}

// wrongKeyMessage says that a receipt is not signed by the key given with --key, naming
// that key as the user typed it (a key id alone would match nothing they see) and the
// key the bundle names, which is no more than a claim until checked.
func wrongKeyMessage(bundle []byte, given ed25519.PublicKey) string {
	var b struct {
		Receipt struct {
			PublicKey string `json:"public_key"`
		} `json:"receipt"`
	}
	names := ""
	if json.Unmarshal(bundle, &b) == nil && b.Receipt.PublicKey != "" {
		if k, err := crypto.DecodeBase58(b.Receipt.PublicKey); err == nil && len(k) == ed25519.PublicKeySize {
			names = fmt.Sprintf("; it names key %s (key id %s)", b.Receipt.PublicKey, crypto.KeyID(k))
		}
	}
	return fmt.Sprintf("the receipt is not signed by the key given with --key, %s (key id %s)%s. Pass the receipt key of the server that made the proof (intentctl info shows it)",
		crypto.EncodeBase58(given), crypto.KeyID(given), names)
}

// compactJSON is v as one line, for --json lines.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf(`{"error":%q}`, err.Error())
	}
	return string(b)
}

// tagged is a signature's tag as the lines about an agent show it, or nothing.
func tagged(tag string) string {
	if tag == "" {
		return ""
	}
	return " (" + tag + ")"
}

// readLogPolicy reads a --log-policy file; nil without one.
func readLogPolicy(path string) (*proof.WitnessPolicy, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--log-policy: %v", err)
	}
	p, err := proof.ParsePolicy(data)
	if err != nil {
		return nil, usagef("--log-policy %s: %v", path, err)
	}
	return p, nil
}

// cosignerList names the witnesses that cosigned, or says there were none needed.
func cosignerList(names []string) string {
	if len(names) == 0 {
		return "no witness (the policy's quorum is none)"
	}
	return strings.Join(names, ", ")
}
