package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// solutionManyFailures fails most of the demo policy's constraints: its failure's reason
// is the longest the demo catalog gives.
const solutionManyFailures = "https://shop.example/products/hoodie-grey-l"

// TestConsoleLayout measures what a person sees of the console at a laptop's width and a
// phone's: an intent id beside a long failure reason keeps to one line at 1280 px; a type
// such as set<string> is never broken inside at 375 px; and the Proof page, having taken
// the key from the server it checks, does not call that key trusted.
func TestConsoleLayout(t *testing.T) {
	// Not parallel: runs Chromium, whose 5s page waits two browsers at once could miss.
	s := startServer(t, nil)
	b := newConsoleBrowser(t, s)
	failed, passed := s.submit(), s.submit()
	for id, solution := range map[string]string{failed: solutionManyFailures, passed: solutionPasses} {
		if r := s.propose(id, solution); r.status != http.StatusOK {
			t.Fatalf("proposal: %s", r)
		}
	}

	// lines counts the lines a selector's text takes on the page.
	lines := func(selector string) int {
		var n int
		b.eval(fmt.Sprintf(`(() => { const r = document.createRange(); r.selectNodeContents(document.querySelector(%s)); `+
			`return new Set([...r.getClientRects()].map(c => Math.round(c.top))).size; })()`, jsString(selector)), &n)
		return n
	}

	t.Run("an intent id beside a long reason, at 1280 px", func(t *testing.T) {
		b.run(chromedp.EmulateViewport(1280, 800))
		b.open("#/live")
		link := fmt.Sprintf(`#events tr[data-type="failure"] a[href="#/intent/%s"]`, failed)
		b.wait("the failure on the Live page", fmt.Sprintf(`document.querySelector(%s)`, jsString(link)), 10*time.Second)
		if n := lines(link); n != 1 {
			t.Errorf("the intent id takes %d lines beside its reason, want 1", n)
		}
	})

	t.Run("set<string> at 375 px", func(t *testing.T) {
		b.run(chromedp.EmulateViewport(375, 800))
		for _, page := range []string{"#/intent/" + failed, "#/policy/" + s.policy} {
			b.open(page)
			b.wait("the types on "+page, `[...document.querySelectorAll("td.type")].some(td => td.textContent === "set<string>")`, 10*time.Second)
			var broken []string
			b.eval(`[...document.querySelectorAll("td.type")].filter(td => { const r = document.createRange(); r.selectNodeContents(td); `+
				`return new Set([...r.getClientRects()].map(c => Math.round(c.top))).size > 1; }).map(td => td.textContent)`, &broken)
			if len(broken) > 0 {
				t.Errorf("%s: types broken over lines: %s", page, strings.Join(broken, ", "))
			}
		}
		b.run(chromedp.EmulateViewport(1280, 800))
	})

	t.Run("the proof page names the server's own key as such", func(t *testing.T) {
		b.open("#/proof/" + passed)
		b.wait("the verdict", `(document.getElementById("verdict") || {textContent: ""}).textContent.startsWith("verified")`, 10*time.Second)
		kv := b.text("dl.kv")
		if strings.Contains(kv, "trusted (given)") || !strings.Contains(kv, "this server's own key (GET /info)") {
			t.Errorf("the key the page fetched from the server it checks is shown as\n%s", kv)
		}
		if msg := b.text(`li[data-check="key"] .msg`); !strings.Contains(msg, "this server's own key") {
			t.Errorf("the key check says %q, want it to name the server's own key", msg)
		}
	})
}
