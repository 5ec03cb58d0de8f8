package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/intentd/intentd"
)

// webhookSubcommands are the subcommands of webhook, in the order usage lists them.
var webhookSubcommands = "create, list, show, delete, enable, disable, redeliver or send"

// webhook runs the webhook subcommands, each a call of the admin's routes under
// /webhooks.
func (c *cli) webhook(args []string) error {
	if len(args) > 0 {
		c.enter(args[0])
	}
	if len(args) == 0 {
		return usagef("want %s", webhookSubcommands)
	}
	switch args[0] {
	case "create":
		return c.webhookCreate(args[1:])
	case "list":
		return c.webhookList(args[1:])
	case "show", "enable", "disable":
		return c.webhookOne(args[0], args[1:])
	case "delete":
		return c.webhookDelete(args[1:])
	case "redeliver":
		return c.webhookRedeliver(args[1:])
	case "send":
		return c.webhookSend(args[1:])
	}
	fs := c.flags("webhook")
	if _, err := c.parse(fs, args); err != nil {
		return err
	}
	return usagef("want %s, not %q", webhookSubcommands, args[0])
}

// webhookCreate registers an endpoint and prints it as JSON, its secret with it: the
// only time the server shows the secret, which the receiver needs to check signatures.
func (c *cli) webhookCreate(args []string) error {
	fs := c.flags("webhook create")
	var types, policies, mandates listFlag
	fs.Var(&types, "type", "deliver only the events of this type: success, failure or expired (repeat; default: all)")
	fs.Var(&policies, "policy", "deliver only the outcomes of intents of this policy id (repeat; default: all)")
	fs.Var(&mandates, "mandate", "deliver only the outcomes of purchases under this mandate id (repeat; default: all)")
	asymmetric := fs.Bool("asymmetric", false, "sign each delivery with the service's Ed25519 webhook key (v1a) too, beside the HMAC (v1)")
	maxInFlight := fs.Int("max-in-flight", 0, "deliveries under way at once, 1 to 32 (default 1: each event once the one before it was taken, in order)")
	pos, api, err := c.begin(fs, args, 1, "URL")
	if err != nil {
		return err
	}
	if isSet(fs, "max-in-flight") && *maxInFlight < 1 {
		return usagef("--max-in-flight %d: want 1 to 32", *maxInFlight)
	}
	spec := intentd.WebhookSpec{URL: pos[0], PolicyIDs: policies, MandateIDs: mandates, Asymmetric: *asymmetric, MaxInFlight: *maxInFlight}
	for _, t := range types {
		spec.Types = append(spec.Types, intentd.State(t))
	}
	ctx, cancel := c.call()
	defer cancel()
	wh, err := api.CreateWebhook(ctx, spec)
	if err != nil {
		return c.reach(err)
	}
	if err := c.printJSON(wh); err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "the secret of webhook %s is shown this once: keep it where the receiver checks the signatures\n", wh.ID)
	return nil
}

// isSet reports whether the command line gave the flag.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// webhookList prints each endpoint in a few lines: its health and its last attempt.
func (c *cli) webhookList(args []string) error {
	_, api, err := c.begin(c.flags("webhook list"), args, 0, "no arguments")
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	list, err := api.Webhooks(ctx)
	if err != nil {
		return c.reach(err)
	}
	if c.g.json {
		return c.printJSON(list)
	}
	if len(list.Webhooks) == 0 {
		fmt.Fprintln(c.stdout, "no webhook endpoints")
	}
	for i := range list.Webhooks {
		printWebhookSummary(c.stdout, &list.Webhooks[i])
	}
	if list.PublicKey != "" {
		fmt.Fprintf(c.stdout, "v1a signatures verify with %s\n", list.PublicKey)
	}
	return nil
}

// webhookOne runs the subcommands of one endpoint that answer it: show, enable,
// disable.
func (c *cli) webhookOne(sub string, args []string) error {
	pos, api, err := c.begin(c.flags("webhook "+sub), args, 1, "ID")
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	var wh *intentd.Webhook
	switch sub {
	case "show":
		wh, err = api.Webhook(ctx, pos[0])
	case "enable":
		wh, err = api.EnableWebhook(ctx, pos[0])
	case "disable":
		wh, err = api.DisableWebhook(ctx, pos[0])
	}
	if err != nil {
		return c.reach(err)
	}
	return c.printWebhook(wh)
}

func (c *cli) printWebhook(wh *intentd.Webhook) error {
	if c.g.json {
		return c.printJSON(wh)
	}
	printWebhook(c.stdout, wh)
	return nil
}

// webhookDelete removes an endpoint.
func (c *cli) webhookDelete(args []string) error {
	pos, api, err := c.begin(c.flags("webhook delete"), args, 1, "ID")
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	if err := api.DeleteWebhook(ctx, pos[0]); err != nil {
		return c.reach(err)
	}
	if c.g.json {
		return c.printJSON(map[string]string{"deleted": pos[0]})
	}
	fmt.Fprintf(c.stdout, "deleted %s: its deliveries stop\n", pos[0])
	return nil
}

// webhookRedeliver moves an endpoint back, to deliver the events from --from on again.
func (c *cli) webhookRedeliver(args []string) error {
	fs := c.flags("webhook redeliver")
	from := fs.String("from", "", "the id of the first event to deliver again (required)")
	pos, api, err := c.begin(fs, args, 1, "ID --from EVENT_ID")
	if err != nil {
		return err
	}
	if *from == "" {
		return usagef("--from: missing; give the id of the first event to deliver again")
	}
	id, err := eventID("--from", *from)
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	wh, err := api.RedeliverWebhook(ctx, pos[0], id)
	if err != nil {
		return c.reach(err)
	}
	return c.printWebhook(wh)
}

// webhookSend delivers one event now and prints the attempt; a receiver that did not
// take it makes the exit status 1, so that a script testing an endpoint sees it.
func (c *cli) webhookSend(args []string) error {
	pos, api, err := c.begin(c.flags("webhook send"), args, 2, "ID EVENT_ID")
	if err != nil {
		return err
	}
	id, err := eventID("EVENT_ID", pos[1])
	if err != nil {
		return err
	}
	ctx, cancel := c.call()
	defer cancel()
	a, err := api.SendWebhookEvent(ctx, pos[0], id)
	if err != nil {
		return c.reach(err)
	}
	if c.g.json {
		err = c.printJSON(a)
	} else {
		_, err = fmt.Fprintf(c.stdout, "event %d to %s: %s\n", a.EventID, pos[0], attemptText(a))
	}
	if err != nil {
		return err
	}
	if !taken(a) {
		return &exitError{exitRefused, fmt.Errorf("the receiver did not take event %d", a.EventID)}
	}
	return nil
}

// eventID reads an event id: an integer from 1.
func eventID(name, s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, usagef("%s %q: want an event id, an integer from 1", name, s)
	}
	return n, nil
}

// taken reports whether an attempt was taken: a 2xx answer and no error.
func taken(a *intentd.WebhookAttempt) bool {
	return a.Error == "" && a.Status >= 200 && a.Status < 300
}

// attemptText is an attempt in words: taken or not, the receiver's answer and its
// latency, or why no answer came. The error of an answer that is not 2xx only repeats
// its status, and is left out.
func attemptText(a *intentd.WebhookAttempt) string {
	latency := strconv.FormatFloat(a.LatencyMS, 'f', 1, 64) + " ms"
	switch {
	case taken(a):
		return fmt.Sprintf("taken: answered %d in %s", a.Status, latency)
	case a.Status != 0:
		return fmt.Sprintf("not taken: answered %d in %s", a.Status, latency)
	}
	return fmt.Sprintf("not taken: no answer after %s: %s", latency, a.Error)
}

// stamp writes a time as the other commands do, in UTC to the second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// printWebhookSummary is an endpoint in the lines of list: its health, where its
// deliveries stand, its last attempt and the member delivering it.
func printWebhookSummary(w io.Writer, wh *intentd.Webhook) {
	fmt.Fprintf(w, "%s %s  delivered through event %d  %s\n", wh.ID, wh.Status, wh.Delivered, wh.URL)
	printHealth(w, wh)
	last := "none yet"
	if len(wh.Attempts) > 0 {
		a := &wh.Attempts[0]
		last = fmt.Sprintf("event %d at %s, %s", a.EventID, stamp(a.At), attemptText(a))
	}
	fmt.Fprintf(w, "    last attempt  %s\n", last)
	fmt.Fprintf(w, "    deliverer     %s\n", deliverer(wh))
}

// deliverer names the member delivering an endpoint. None holds it for a moment after
// the endpoint is made or its member left, until a member takes its lease.
func deliverer(wh *intentd.Webhook) string {
	if wh.Deliverer == "" {
		return "none at the moment"
	}
	return wh.Deliverer
}

// printHealth writes the lines of an endpoint that is not simply active: why it is
// disabled, since when it fails, what it missed.
func printHealth(w io.Writer, wh *intentd.Webhook) {
	if wh.DisabledReason != "" {
		fmt.Fprintf(w, "    disabled: %s\n", wh.DisabledReason)
	}
	if wh.FailingSince != nil {
		line := fmt.Sprintf("    failing since %s, attempt %d", stamp(*wh.FailingSince), wh.Attempt)
		if wh.NextAttempt != nil {
			line += ", next at " + stamp(*wh.NextAttempt)
		}
		fmt.Fprintln(w, line)
	}
	if wh.Skipped > 0 {
		fmt.Fprintf(w, "    skipped %d event(s) the event log no longer held\n", wh.Skipped)
	}
}

// printWebhook is an endpoint in full, as show, enable, disable and redeliver print
// it: its health, its configuration and its recent attempts, newest first.
func printWebhook(w io.Writer, wh *intentd.Webhook) {
	fmt.Fprintf(w, "%s %s  delivered through event %d\n", wh.ID, wh.Status, wh.Delivered)
	printHealth(w, wh)
	fmt.Fprintf(w, "    url        %s\n", wh.URL)
	fmt.Fprintf(w, "    events     %s\n", selection(wh))
	sigs := "v1 (HMAC)"
	if wh.Asymmetric {
		sigs += " and v1a (Ed25519)"
	}
	fmt.Fprintf(w, "    signed     %s\n", sigs)
	inOrder := ""
	if wh.MaxInFlight == 1 {
		inOrder = " (in order)"
	}
	fmt.Fprintf(w, "    in flight  at most %d%s\n", wh.MaxInFlight, inOrder)
	fmt.Fprintf(w, "    deliverer  %s\n", deliverer(wh))
	fmt.Fprintf(w, "    created    %s\n", stamp(wh.CreatedAt))
	if len(wh.Attempts) == 0 {
		fmt.Fprintf(w, "    no attempts yet\n")
		return
	}
	fmt.Fprintf(w, "    recent attempts, newest first:\n")
	for i := range wh.Attempts {
		a := &wh.Attempts[i]
		fmt.Fprintf(w, "      event %d at %s, %s\n", a.EventID, stamp(a.At), attemptText(a))
	}
}

// selection says which events an endpoint's filters select.
func selection(wh *intentd.Webhook) string {
	var parts []string
	if len(wh.Types) > 0 {
		types := make([]string, len(wh.Types))
		for i, t := range wh.Types {
			types[i] = string(t)
		}
		parts = append(parts, "type "+strings.Join(types, " or "))
	}
	if len(wh.PolicyIDs) > 0 {
		parts = append(parts, "policy "+strings.Join(wh.PolicyIDs, " or "))
	}
	if len(wh.MandateIDs) > 0 {
		parts = append(parts, "mandate "+strings.Join(wh.MandateIDs, " or "))
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, "; ")
}
