package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// consoleReceiver is a webhook endpoint that answers every delivery with one status.
func consoleReceiver(t *testing.T, status int) *httptest.Server {
	t.Helper()
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// newConsoleWebhook registers an endpoint through the API and returns its id.
func (s *testServer) newConsoleWebhook(url string) string {
	s.t.Helper()
	r := s.do("POST", "/webhooks", "application/json", fmt.Appendf(nil, `{"url": %q}`, url))
	var wh struct{ ID string }
	if r.status != http.StatusOK || json.Unmarshal(r.body, &wh) != nil || wh.ID == "" {
		s.t.Fatalf("POST /webhooks: %s", r)
	}
	return wh.ID
}

// TestConsoleWebhooks drives the Webhooks page in a headless Chromium: an endpoint that
// takes its events and one whose receiver refuses them are shown with their health
// (status, the event delivered through, the last attempt's status and latency, since
// when one fails, the member delivering each), and the page's buttons disable and
// enable an endpoint, which the API then reports. A token without the admin role gets a
// message that names the role.
func TestConsoleWebhooks(t *testing.T) {
	// Not parallel: runs Chromium, whose page waits two browsers at once could miss.
	// A second attempt an hour after the first keeps the refused endpoint failing, not
	// disabled, for the test's life.
	s := startServer(t, []string{"--webhook-allow-private", "--webhook-retry-schedule", "0s,1h"})
	b := newConsoleBrowser(t, s)
	good := s.newConsoleWebhook(consoleReceiver(t, http.StatusNoContent).URL)
	bad := s.newConsoleWebhook(consoleReceiver(t, http.StatusServiceUnavailable).URL)
	id := s.submit()
	if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal: %s", r)
	}
	// Pebble numbers the first event 1; NATS may number it otherwise.
	ev := s.eventIDs(1)[0]
	s.waitWebhook(good, "delivered through event "+ev, func(st webhookView) bool {
		return strconv.FormatUint(st.Delivered, 10) == ev && len(st.Attempts) > 0 && st.Deliverer != ""
	})
	s.waitWebhook(bad, "failing", func(st webhookView) bool {
		return st.Status == "failing" && st.FailingSince != "" && len(st.Attempts) > 0 && st.Deliverer != ""
	})

	card := func(id string) string { return fmt.Sprintf(`[data-webhook=%q]`, id) }
	field := func(id, name string) string { return b.text(card(id) + fmt.Sprintf(` [data-field=%q]`, name)) }
	b.open("#/webhooks")
	b.wait("both endpoints", fmt.Sprintf(`document.querySelector(%s) && document.querySelector(%s)`, jsString(card(good)), jsString(card(bad))), 10*time.Second)

	t.Run("health", func(t *testing.T) {
		for _, c := range []struct {
			id, status, delivered string
			last                  []string
		}{
			{good, "active", "event " + ev, []string{"event " + ev + ", ", "taken, answered 204 in ", " ms"}},
			{bad, "failing", "no event yet", []string{"event " + ev + ", ", "not taken, answered 503 in ", " ms"}},
		} {
			if got := b.attr(card(c.id), "data-status"); got != c.status {
				t.Errorf("webhook %s is shown %q, want %q", c.id, got, c.status)
			}
			if got := field(c.id, "delivered"); got != c.delivered {
				t.Errorf("webhook %s: delivered through %q, want %q", c.id, got, c.delivered)
			}
			last := field(c.id, "last")
			for rest, i := last, 0; i < len(c.last); i++ {
				at := strings.Index(rest, c.last[i])
				if at < 0 {
					t.Errorf("webhook %s: last attempt %q, want %q in order", c.id, last, c.last)
					break
				}
				rest = rest[at+len(c.last[i]):]
			}
			if got := field(c.id, "deliverer"); !strings.HasPrefix(got, "local/") {
				t.Errorf("webhook %s: deliverer %q, want this node's member name", c.id, got)
			}
		}
		if got := field(bad, "failing"); !strings.Contains(got, "attempt 1, next at ") {
			t.Errorf("the failing endpoint's failing since reads %q, want its attempt and the next", got)
		}
		if b.count(card(good)+` [data-field="failing"]`) != 0 {
			t.Error("the healthy endpoint shows a failing since")
		}
		if key := b.text("#webhook-public-key"); !strings.HasPrefix(key, "whpk_") {
			t.Errorf("the page shows the v1a key %q, want whpk_...", key)
		}
		b.screenshot("webhooks", fmt.Sprintf(`document.querySelector(%s)`, jsString(card(bad))))
	})

	t.Run("disable and enable", func(t *testing.T) {
		for _, step := range []struct{ action, status, button string }{{"disable", "disabled", "enable"}, {"enable", "active", "disable"}} {
			b.run(chromedp.Click(chromedp.CSS(card(good) + fmt.Sprintf(` button[data-action=%q]`, step.action))))
			b.wait("the endpoint "+step.status+" on the page", fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.status === %q`,
				jsString(card(good)), step.status), 5*time.Second)
			if got := s.webhook(good).Status; got != step.status {
				t.Fatalf("after the page's %s, the API says %q, want %q", step.action, got, step.status)
			}
			if n := b.count(card(good) + fmt.Sprintf(` button[data-action=%q]`, step.button)); n != 1 {
				t.Errorf("after %s the endpoint has no %s button", step.action, step.button)
			}
			if note := b.text("#webhooks-note"); !strings.Contains(note, "it is "+step.status) {
				t.Errorf("the page says %q after %s, want that it is %s", note, step.action, step.status)
			}
			var focused bool
			b.eval(fmt.Sprintf(`!!document.activeElement.closest(%s)`, jsString(card(good))), &focused)
			if !focused {
				t.Errorf("after %s the keyboard's focus left the endpoint's card", step.action)
			}
		}
		if got := field(good, "disabled"); got != "" {
			t.Errorf("the enabled endpoint still shows a disabled reason %q", got)
		}
	})

	t.Run("a token without the admin role", func(t *testing.T) {
		ts := startServer(t, []string{"--tokens", writeTokens(t)})
		tb := newConsoleBrowser(t, ts)
		tb.open("#/webhooks")
		tb.wait("the token form", `document.getElementById("token-form")`, 10*time.Second)
		tb.run(chromedp.SendKeys(chromedp.CSS("#token"), readToken+"\n"))
		tb.wait("the refusal", `document.querySelector("#webhooks .error")`, 10*time.Second)
		if got := tb.text("#webhooks .error"); !strings.Contains(got, "admin role") {
			t.Errorf("with a read token the page says %q, want that it needs the admin role", got)
		}
	})
}
