package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/policy"
)

// mandateWire is the mandate object, in the order docs/mandates.md lists its members.
type mandateWire struct {
	ID        string        `json:"id"`
	PolicyID  string        `json:"policy_id"`
	Attrs     *policy.Attrs `json:"attrs,omitempty"`
	ExpiresAt string        `json:"expires_at"`
}

// mandate runs the mandate subcommands: create, status, purchase, revoke.
func (c *cli) mandate(args []string) error {
	if len(args) > 0 {
		c.enter(args[0])
	}
	if len(args) == 0 {
		return usagef("want create, status, purchase or revoke")
	}
	switch args[0] {
	case "create":
		return c.mandateCreate(args[1:])
	case "status":
		return c.mandateStatus(args[1:])
	case "purchase":
		return c.mandatePurchase(args[1:])
	case "revoke":
		return c.mandateRevoke(args[1:])
	}
	fs := c.flags("mandate")
	if _, err := c.parse(fs, args); err != nil {
		return err
	}
	return usagef("want create, status, purchase or revoke, not %q", args[0])
}

// mandateCreate builds, signs and stores a mandate, as intent new does an intent.
func (c *cli) mandateCreate(args []string) error {
	fs := c.flags("mandate create")
	policyID := fs.String("policy", "", "id of the policy the mandate names")
	var attrs listFlag
	fs.Var(&attrs, "attr", "an attribute, NAME=VALUE (repeat); sets are comma-separated; types come from the policy")
	expires := fs.String("expires", "720h", "when purchases stop: a duration from now (720h) or an RFC 3339 time")
	by := addSignFlags(fs)
	id := fs.String("id", "", "the mandate's id (default: a fresh random UUID)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := want(pos, 0, "only flags"); err != nil {
		return err
	}
	if *id, err = idOrFresh(*id, "id"); err != nil {
		return err
	}
	until, err := parseExpiry(*expires, time.Now())
	if err != nil {
		return err
	}
	signers, err := by.load()
	if err != nil {
		return err
	}
	p, err := c.intentPolicy(*policyID, "")
	if err != nil {
		return err
	}
	values, err := parseAttrs(p, attrs)
	if err != nil {
		return err
	}
	md := mandateWire{ID: *id, PolicyID: p.ID(), ExpiresAt: until.UTC().Format(time.RFC3339)}
	if len(values) > 0 {
		md.Attrs = &values
	}
	raw, err := json.Marshal(md)
	if err != nil {
		return err
	}
	auth, err := c.sign(raw, signers, len(by.multisig) > 0, *by.threshold)
	if err != nil {
		return err
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	if err := api.CreateMandate(ctx, raw, auth); err != nil {
		return c.reach(err)
	}
	return c.printID(*id)
}

// parseExpiry reads --expires: a duration from now, or an RFC 3339 time.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, usagef("--expires %s: want a duration after now", s)
		}
		return now.Add(d).Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usagef("--expires %q: want a duration (720h) or an RFC 3339 time", s)
	}
	return t, nil
}

// mandateStatus prints a mandate's state, totals and purchases.
func (c *cli) mandateStatus(args []string) error {
	pos, api, err := c.begin(c.flags("mandate status"), args, 1, "ID")
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	st, err := api.MandateStatus(ctx, pos[0])
	if err != nil {
		return c.reach(err)
	}
	if c.g.json {
		return c.printJSON(st)
	}
	fmt.Fprintf(c.stdout, "%s %s  spent %d in %d purchase(s)  until %s\n", st.MandateID, st.Status, st.Spent, st.Purchases,
		st.ExpiresAt.UTC().Format(time.RFC3339))
	if p := st.Period; p != nil {
		fmt.Fprintf(c.stdout, "    this %s (from %s): spent %d in %d purchase(s)\n", p.Unit, p.Start.UTC().Format(time.RFC3339), p.Spent, p.Purchases)
	}
	if st.RevokedAt != nil {
		fmt.Fprintf(c.stdout, "    revoked at %s\n", st.RevokedAt.UTC().Format(time.RFC3339))
	}
	if len(st.Intents) > 0 {
		fmt.Fprintf(c.stdout, "    intents: %s\n", strings.Join(st.Intents, " "))
	}
	return nil
}

// mandatePurchase makes a purchase under a mandate: an intent of its policy and attrs,
// and its proposal, in one request.
func (c *cli) mandatePurchase(args []string) error {
	fs := c.flags("mandate purchase")
	agent := addAgentKeyFlags(fs)
	intentID := fs.String("intent-id", "", "the purchase's intent id (default: a fresh random UUID); give the same one to send a purchase again")
	pos, api, err := c.begin(fs, args, 2, "ID SOLUTION")
	if err != nil {
		return err
	}
	if *intentID, err = idOrFresh(*intentID, "intent-id"); err != nil {
		return err
	}
	if err := agent.apply(c); err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	if err := api.Purchase(ctx, pos[0], *intentID, pos[1]); err != nil {
		var ae *client.APIError
		switch {
		case errors.As(err, &ae) && ae.RetryAfter > 0:
			return fmt.Errorf("%w (try again in %s with --intent-id %s)", err, ae.RetryAfter, *intentID)
		case intentd.ErrorCode(err) == intentd.CodeAgentSignatureRequired:
			return fmt.Errorf("%w (nothing changed; an agent the mandate lists purchases with --agent-key FILE)", err)
		}
		return c.reach(err)
	}
	if c.g.json {
		return c.printJSON(map[string]string{"intent_id": *intentID, "mandate_id": pos[0], "status": string(intentd.StateProcessing)})
	}
	fmt.Fprintf(c.stdout, "%s processing: the outcome follows on its status and the event stream\n", *intentID)
	return nil
}

// mandateRevoke signs and sends the revocation of a mandate, with the key that signed
// it.
func (c *cli) mandateRevoke(args []string) error {
	fs := c.flags("mandate revoke")
	by := addSignFlags(fs)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if err := want(pos, 1, "ID"); err != nil {
		return err
	}
	id, ok := intentd.CanonicalIntentID(pos[0])
	if !ok {
		return usagef("%q: want a mandate id (a UUID)", pos[0])
	}
	signers, err := by.load()
	if err != nil {
		return err
	}
	raw := client.RevocationJSON(id)
	auth, err := c.sign(raw, signers, len(by.multisig) > 0, *by.threshold)
	if err != nil {
		return err
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	if err := api.RevokeMandate(ctx, id, raw, auth); err != nil {
		return c.reach(err)
	}
	if c.g.json {
		return c.printJSON(map[string]string{"mandate_id": id, "status": string(intentd.MandateRevoked)})
	}
	fmt.Fprintf(c.stdout, "%s revoked: it takes no purchase from now on; those taken before end as decided\n", id)
	return nil
}
