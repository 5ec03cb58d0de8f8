package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/internal/golden"
	"github.com/intentd/intentd/webhook"
)

// startWebhookServer is startServer with the real webhook deliveries over the engine's
// store, which deliver to loopback addresses and retry within the test's time.
func startWebhookServer(t *testing.T) string {
	t.Helper()
	e, store, opts := newTestEngineStore(t, evidence.DefaultCatalog(), 0)
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := webhook.New(webhook.Options{Store: store, Source: e, Log: store, Key: priv, Exclusive: true, AllowPrivate: true,
		Schedule: []time.Duration{0, 20 * time.Millisecond, 20 * time.Millisecond}, Timeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	opts.Webhooks, opts.Info.WebhookPublicKey = svc, svc.PublicKey()
	ts := httptest.NewServer(intenthttp.NewServer(e, opts))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL
}

// hookReceiver is a webhook endpoint that answers status, 204 until set.
type hookReceiver struct {
	*httptest.Server
	status atomic.Int32
}

func newHookReceiver(t *testing.T) *hookReceiver {
	rc := &hookReceiver{}
	rc.status.Store(http.StatusNoContent)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(rc.status.Load()))
	}))
	t.Cleanup(rc.Close)
	return rc
}

// TestWebhookCommands runs every webhook subcommand against a real server and real
// deliveries, in the order an admin would, with the mistakes one makes on the way.
func TestWebhookCommands(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	j := &journey{t: t, server: startWebhookServer(t), dir: t.TempDir()}
	rc := newHookReceiver(t)
	var id string
	idArgs := func(args ...string) func() []string {
		return func() []string {
			out := append([]string{"webhook"}, args[0], id)
			return append(out, args[1:]...)
		}
	}
	const uuidRE = `[0-9a-f-]{36}`
	steps := []journeyStep{
		{"list none", static("webhook", "list"), 0, `^no webhook endpoints\nv1a signatures verify with whpk_\S+\n$`, "", nil, false},
		{"create", static("webhook", "create", rc.URL, "--type", "success", "--type", "failure", "--asymmetric"), 0, `"secret": "whsec_`,
			`^the secret of webhook ` + uuidRE + ` is shown this once: keep it where the receiver checks the signatures\n$`,
			func(t *testing.T, r result) {
				var wh intentd.Webhook
				if err := json.Unmarshal([]byte(r.stdout), &wh); err != nil {
					t.Fatalf("create printed no endpoint JSON: %v\n%s", err, r.stdout)
				}
				if wh.URL != rc.URL || !wh.Asymmetric || len(wh.Types) != 2 || wh.MaxInFlight != 1 || wh.Status != intentd.WebhookActive {
					t.Fatalf("create made %+v", wh)
				}
				id = wh.ID
			}, false},
		{"create a private URL's scheme wrong", static("webhook", "create", "ftp://example.com/"), 1, "^$",
			`^intentctl webhook create: invalid_webhook \(422 Unprocessable Entity\): url: the scheme "ftp" is not http or https\n$`, nil, false},
		{"create an unknown type", static("webhook", "create", rc.URL, "--type", "open"), 1, "^$", `^intentctl webhook create: invalid_webhook .*types: "open"`, nil, false},
		{"create max in flight 0", static("webhook", "create", rc.URL, "--max-in-flight", "0"), 2, "^$",
			"^intentctl webhook create: --max-in-flight 0: want 1 to 32\nusage: intentctl webhook create URL ", nil, false},
		{"create without a URL", static("webhook", "create"), 2, "^$", `^intentctl webhook create: want URL, got 0 argument\(s\)\n`, nil, false},
		{"two events", static("demo"), 0, "", "", nil, false},
		{"show delivered", idArgs("show"), 0, "", "", func(t *testing.T, r result) {
			// The deliveries run in the background: show, until both events are taken.
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(r.stdout, "delivered through event 2\n") || strings.Count(r.stdout, "taken: answered 204") != 2 {
				if time.Now().After(deadline) {
					t.Fatalf("show, 10s on, does not show events 1 and 2 taken:\n%s", r.stdout)
				}
				time.Sleep(20 * time.Millisecond)
				r = runCLI(t, j.server, "webhook", "show", id)
			}
			wantInOrder(t, r.stdout, []string{id + " active  delivered through event 2\n", "    url        " + rc.URL + "\n",
				"    events     type success or failure\n", "    signed     v1 (HMAC) and v1a (Ed25519)\n", "    in flight  at most 1 (in order)\n",
				"    recent attempts, newest first:\n", "      event 2 at ", "      event 1 at "})
		}, false},
		{"list", static("webhook", "list"), 0, `^` + uuidRE + ` active  delivered through event 2  http://127\.0\.0\.1:\d+\n    last attempt  event 2 at \S+Z, taken: answered 204 in [0-9.]+ ms\n    deliverer     \S+\nv1a signatures verify with whpk_`, "", nil, false},
		{"list --json", static("webhook", "list", "--json"), 0, "", "", func(t *testing.T, r result) {
			var list struct {
				Webhooks  []intentd.Webhook `json:"webhooks"`
				PublicKey string            `json:"public_key"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Webhooks) != 1 || list.Webhooks[0].Secret != "" || list.PublicKey == "" {
				t.Fatalf("list --json: %v\n%s", err, r.stdout)
			}
		}, false},
		{"send", idArgs("send", "1"), 0, `^event 1 to ` + uuidRE + `: taken: answered 204 in [0-9.]+ ms\n$`, "^$", nil, false},
		{"send refused", func() []string { rc.status.Store(http.StatusServiceUnavailable); return idArgs("send", "2")() }, 1,
			`^event 2 to ` + uuidRE + `: not taken: answered 503 in [0-9.]+ ms\n$`, "^intentctl webhook send: the receiver did not take event 2\n$",
			func(t *testing.T, r result) { rc.status.Store(http.StatusNoContent) }, false},
		{"send --json", idArgs("send", "1", "--json"), 0, `"event_id": 1,`, "", nil, false},
		{"send an event not in the log", idArgs("send", "99"), 1, "^$", `^intentctl webhook send: invalid_webhook \(422 Unprocessable Entity\): event_id: the event log holds no event 99\n$`, nil, false},
		{"send event 0", idArgs("send", "0"), 2, "^$", `^intentctl webhook send: EVENT_ID "0": want an event id, an integer from 1\n`, nil, false},
		{"disable", idArgs("disable"), 0, `^` + uuidRE + ` disabled  delivered through event 2\n    disabled: disabled by an admin\n`, "", nil, false},
		{"enable", idArgs("enable"), 0, `^` + uuidRE + ` active  delivered through event 2\n    url `, "", nil, false},
		{"redeliver", idArgs("redeliver", "--from", "2"), 0, `^` + uuidRE + ` active  delivered through event 1\n`, "", nil, false},
		{"redeliver without --from", idArgs("redeliver"), 2, "^$", "^intentctl webhook redeliver: --from: missing", nil, false},
		{"redeliver past the log", idArgs("redeliver", "--from", "9"), 1, "^$", `from_event_id: 9 is past the last event, 2\n$`, nil, false},
		{"show --json", idArgs("show", "--json"), 0, `"status": "active"`, "", func(t *testing.T, r result) {
			if strings.Contains(r.stdout, "whsec_") {
				t.Fatalf("show --json shows the secret:\n%s", r.stdout)
			}
		}, false},
		{"delete", idArgs("delete"), 0, `^deleted ` + uuidRE + `: its deliveries stop\n$`, "", nil, false},
		{"show deleted", idArgs("show"), 1, "^$", `^intentctl webhook show: webhook_not_found \(404 Not Found\): no webhook endpoint ` + uuidRE + "\n$", nil, false},
		{"delete again", idArgs("delete", "--json"), 1, "^$", `^intentctl webhook delete: webhook_not_found`, nil, false},
		{"unknown subcommand", static("webhook", "pause"), 2, "^$", `^intentctl webhook: want create, list, show, delete, enable, disable, redeliver or send, not "pause"\n`, nil, false},
		{"no subcommand", static("webhook"), 2, "^$", `^intentctl webhook: want create, list`, nil, false},
		{"unreachable", static("webhook", "list"), 3, "^$", `^intentctl webhook list: cannot reach http://127\.0\.0\.1:1`, nil, true},
	}
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) { j.run(t, st) }) {
			t.FailNow() // later steps build on this one
		}
	}
}

// TestWebhookWithoutDeliveries checks the message of a server that delivers no
// webhooks.
func TestWebhookWithoutDeliveries(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	r := runCLI(t, startServer(t), "webhook", "list")
	if want := "intentctl webhook list: webhooks_unavailable (503 Service Unavailable): this server delivers no webhooks\n"; r.code != exitRefused || r.stderr != want {
		t.Fatalf("%+v, want exit 1 and %q", r, want)
	}
}

// TestPrintWebhook pins what show and list print of endpoints in each state.
func TestPrintWebhook(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ptr := func(s string) *time.Time { v := at(s); return &v }
	base := intentd.Webhook{
		ID: "0b6f8f0e-8f59-4b5e-9a51-1b2b8a3c4d5e", URL: "https://hooks.shop.example/intentd", MaxInFlight: 1,
		CreatedAt: at("2026-11-28T09:00:00.250Z"),
	}
	tests := []struct {
		name string
		edit func(wh *intentd.Webhook)
	}{
		{"new", func(wh *intentd.Webhook) { wh.Status = intentd.WebhookActive }},
		{"active", func(wh *intentd.Webhook) {
			wh.Status, wh.Delivered, wh.Deliverer = intentd.WebhookActive, 42, "10.0.0.2:7946/3f2a9c1b"
			wh.Types, wh.PolicyIDs = []intentd.State{intentd.StateSuccess}, []string{"93kcNXu64iv6i5ZNxZLZRaTJwgxZzBeLiKNK3kb6KdUb"}
			wh.Asymmetric, wh.MaxInFlight = true, 8
			wh.Attempts = []intentd.WebhookAttempt{
				{EventID: 42, At: at("2026-11-28T10:15:02.125Z"), Status: 200, LatencyMS: 18.42},
				{EventID: 41, At: at("2026-11-28T10:14:58Z"), Status: 204, LatencyMS: 9},
			}
		}},
		{"failing", func(wh *intentd.Webhook) {
			wh.Status, wh.Delivered, wh.Attempt = intentd.WebhookFailing, 41, 3
			wh.FailingSince, wh.NextAttempt = ptr("2026-11-28T10:15:00Z"), ptr("2026-11-28T10:50:00Z")
			wh.MandateIDs, wh.Skipped = []string{"6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a41", "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a42"}, 2
			wh.Attempts = []intentd.WebhookAttempt{
				{EventID: 42, At: at("2026-11-28T10:20:00Z"), Status: 503, LatencyMS: 120.5, Error: "the receiver answered 503"},
				{EventID: 42, At: at("2026-11-28T10:15:05Z"), LatencyMS: 10000, Error: "no answer within the time limit"},
				{EventID: 42, At: at("2026-11-28T10:15:00Z"), LatencyMS: 1.25, Error: "dial tcp 203.0.113.9:443: connect: connection refused"},
			}
		}},
		{"disabled", func(wh *intentd.Webhook) {
			wh.Status, wh.Delivered, wh.DisabledReason = intentd.WebhookDisabled, 41, "event 42 failed every attempt of the retry schedule"
			wh.Attempts = []intentd.WebhookAttempt{{EventID: 42, At: at("2026-11-28T10:20:00Z"), Status: 410, LatencyMS: 33.333, Error: "the receiver answered 410"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh := base
			tt.edit(&wh)
			var show, list strings.Builder
			printWebhook(&show, &wh)
			printWebhookSummary(&list, &wh)
			golden.Check(t, filepath.Join("testdata", "webhook", tt.name+".golden"), "$ intentctl webhook show\n"+show.String()+"$ intentctl webhook list\n"+list.String())
		})
	}
}

// TestEventIDArgument checks what an event id argument takes.
func TestEventIDArgument(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want uint64
		ok   bool
	}{{"1", 1, true}, {"18446744073709551615", 1<<64 - 1, true}, {"0", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {"1.0", 0, false}, {"", 0, false}, {"18446744073709551616", 0, false}} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := eventID("EVENT_ID", tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("eventID(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
			}
			if err != nil && !regexp.MustCompile(`^EVENT_ID ".*": want an event id, an integer from 1$`).MatchString(err.Error()) {
				t.Fatalf("error %q does not name the argument and what it wants", err)
			}
		})
	}
}
