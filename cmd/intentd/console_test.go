package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// consoleBrowser is a headless Chromium on the console of one test server.
type consoleBrowser struct {
	t     *testing.T
	ctx   context.Context
	base  string // the console's address, .../ui/
	shots string // the folder screenshots go to
}

// newConsoleBrowser starts Chromium for the console of s, or skips the test when the
// machine has none.
func newConsoleBrowser(t *testing.T, s *testServer) *consoleBrowser {
	t.Helper()
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("no Chromium (chromium in PATH or /usr/bin/chromium): the console tests need Debian's chromium package (apt-get install chromium)")
	}
	if testing.Short() {
		t.Skip("the console tests start Chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return &consoleBrowser{t: t, ctx: startChromium(t, ctx, chromium), base: s.url + "/ui/", shots: screenshotDir(t)}
}

var (
	shotsOnce sync.Once
	shotsDir  string
)

// screenshotDir is where the console tests write their screenshots: $CONSOLE_SCREENSHOTS,
// or a new folder that outlives the test, so that a person can look at them after.
func screenshotDir(t *testing.T) string {
	shotsOnce.Do(func() {
		shotsDir = os.Getenv("CONSOLE_SCREENSHOTS")
		if shotsDir == "" {
			shotsDir, _ = os.MkdirTemp("", "intentd-console-")
		}
		os.MkdirAll(shotsDir, 0o755)
	})
	t.Logf("console screenshots go to %s", shotsDir)
	return shotsDir
}

func (b *consoleBrowser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// open goes to a page of the console (a fragment such as "#/live").
func (b *consoleBrowser) open(fragment string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.base + fragment))
}

// eval runs a script in the page and decodes its value into out unless out is nil.
func (b *consoleBrowser) eval(expr string, out any) {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("page: %s: %v", clipScript(expr), err)
	}
	if out != nil {
		if err := json.Unmarshal(v, out); err != nil {
			b.t.Fatalf("page: %s answered %s: %v", clipScript(expr), v, err)
		}
	}
}

// wait polls a script until it answers true, and fails the test with what the page
// shows when it does not within d.
func (b *consoleBrowser) wait(what, expr string, d time.Duration) time.Duration {
	b.t.Helper()
	start := time.Now()
	for {
		var ok bool
		b.eval("!!("+expr+")", &ok)
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > d {
			var text string
			b.eval(`document.body.innerText`, &text)
			b.t.Fatalf("the console waited %s in vain for %s; the page shows:\n%s", d, what, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// text is the text of the first element a selector finds, or "".
func (b *consoleBrowser) text(selector string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, selector), &s)
	return s
}

// screenshot writes the page at 1280 x 800 and at 375 x 800 as name-wide.png and
// name-narrow.png. ready is a script that is true once the page is drawn at that width.
func (b *consoleBrowser) screenshot(name, ready string) {
	b.t.Helper()
	for _, size := range []struct {
		suffix string
		width  int64
	}{{"wide", 1280}, {"narrow", 375}} {
		b.run(chromedp.EmulateViewport(size.width, 800))
		b.wait("the page at "+size.suffix+" width", ready, 5*time.Second)
		// What the page is about, in view: the element ready found.
		b.eval("("+ready+").scrollIntoView({block: \"center\"})", nil)
		// Layout settles within a frame of the resize.
		time.Sleep(150 * time.Millisecond)
		var problems []string
		b.eval(layoutProblems, &problems)
		for _, p := range problems {
			b.t.Errorf("%s at %d px: %s", name, size.width, p)
		}
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			b.t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(b.shots, name+"-"+size.suffix+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.run(chromedp.EmulateViewport(1280, 800))
}

// layoutProblems lists what a person would see as broken on the page as drawn: the page
// scrolling sideways, text of a code block running out of its box, a control touching
// the box below it, or the connection's dot shown without its words.
const layoutProblems = `(() => {
  const out = [];
  const root = document.documentElement;
  if (root.scrollWidth > innerWidth) out.push("the page is " + root.scrollWidth + " px wide, wider than the window");
  for (const el of document.querySelectorAll("main pre, main ol.policy li")) {
    if (el.scrollWidth > el.clientWidth + 1) out.push("text runs out of its box: " + JSON.stringify(el.textContent.slice(0, 60)));
  }
  const controls = [...document.querySelectorAll("main button, main input, main select")].filter(c => c.getClientRects().length);
  for (const box of document.querySelectorAll("main .card, main .drop")) {
    const b = box.getBoundingClientRect();
    for (const c of controls) {
      if (box.contains(c)) continue;
      const r = c.getBoundingClientRect();
      if (b.top - r.bottom >= 0 && b.top - r.bottom < 6 && r.left < b.right && r.right > b.left) {
        out.push("the " + c.tagName.toLowerCase() + " " + JSON.stringify(c.textContent || c.id) + " touches the box below it");
      }
    }
  }
  const conn = document.getElementById("conn");
  if (conn && !conn.textContent.trim() && conn.getClientRects().length) out.push("the connection state shows a dot without words");
  return out;
})()`

// jsString quotes s for a script.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestConsole drives the console in a headless Chromium against a real server: an
// outcome reaches the Live page within a second, with its type; the Intent page of a
// failed intent marks the failed constraint with its reason; the Proof page verifies a
// real bundle and names the failing check of one with a changed byte. Each page is
// captured at a wide and a narrow width.
func TestConsole(t *testing.T) {
	// Not parallel: times an outcome's arrival on the page against 1s.
	s := startServer(t, nil)
	b := newConsoleBrowser(t, s)

	b.open("#/live")
	b.wait("the stream to connect", `document.getElementById("conn").dataset.state === "connected"`, 10*time.Second)

	passed, failed, open := s.submit(), s.submit(), s.submit()
	checkLiveOutcomes(t, s, b, passed, failed)
	checkLiveFilters(t, b, passed, failed)
	checkIntentPages(t, s, b, failed, open)
	checkProofPages(t, b, passed, failed)
	checkDroppedBundle(t, s, b, passed)

	// The Policy page: the canonical text, the parameters and the evidence read.
	b.open("#/policy/" + s.policy)
	b.wait("the policy", `document.getElementById("policy-text")`, 5*time.Second)
	page := b.text("main")
	for _, want := range []string{"max_price_cents", "set<string>", "shipping_cents", "name tshirt_purchase_v1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Policy page lacks %q", want)
		}
	}
	b.screenshot("policy", `document.querySelector("h1")`)
}

// checkLiveOutcomes checks that outcomes made through the API appear on the Live page
// within a second of the proposal's answer, with their type, and that their arrival
// leaves the keyboard's focus where it was.
func checkLiveOutcomes(t *testing.T, s *testServer, b *consoleBrowser, passed, failed string) {
	row := func(id, typ string) string {
		return fmt.Sprintf(`document.querySelector('#events tr[data-type=%q] a[href="#/intent/%s"]')`, typ, id)
	}
	for _, c := range []struct{ id, solution, typ string }{{passed, solutionPasses, "success"}, {failed, solutionOutOfStock, "failure"}} {
		if r := s.propose(c.id, c.solution); r.status != http.StatusOK {
			t.Fatalf("proposal: %s", r)
		}
		took := b.wait("the "+c.typ+" of "+c.id+" on the Live page", row(c.id, c.typ), 5*time.Second)
		if took > time.Second {
			t.Errorf("the %s of %s reached the Live page %s after its proposal was accepted, want within 1s", c.typ, c.id, took)
		}
	}
	if got := b.text(`#events tr[data-type="failure"] .badge`); got != "failure: constraints" {
		t.Errorf("the failure's badge says %q, want %q", got, "failure: constraints")
	}
	// A keyboard user on an event's link keeps the focus there as new outcomes arrive.
	link := fmt.Sprintf(`document.querySelector('#events a[href="#/intent/%s"]')`, passed)
	b.eval(link+".focus()", nil)
	another := s.submit()
	if r := s.propose(another, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal: %s", r)
	}
	b.wait("the next outcome on the Live page", row(another, "success"), 5*time.Second)
	var focused bool
	if b.eval("document.activeElement === "+link, &focused); !focused {
		var on string
		b.eval(`document.activeElement.outerHTML.slice(0, 120)`, &on)
		t.Errorf("an outcome's arrival took the keyboard's focus from the link it was on, to %s", on)
	}
}

// checkLiveFilters filters the Live page by type, then by part of an intent id, then
// not at all.
func checkLiveFilters(t *testing.T, b *consoleBrowser, passed, failed string) {
	shown := func() (types, intents []string) {
		var rows []struct{ Type, Intent string }
		b.eval(`[...document.querySelectorAll("#events tr")].map(r => ({type: r.dataset.type, intent: r.querySelector("a").textContent}))`, &rows)
		for _, r := range rows {
			types, intents = append(types, r.Type), append(intents, r.Intent)
		}
		return types, intents
	}
	b.eval(`(() => { const f = document.getElementById("f-type"); f.value = "failure"; f.dispatchEvent(new Event("change")); })()`, nil)
	if types, intents := shown(); len(types) != 1 || types[0] != "failure" || intents[0] != failed {
		t.Errorf("filtered to failures, the Live page shows %v of %v", types, intents)
	}
	b.eval(`(() => { const f = document.getElementById("f-type"); f.value = ""; f.dispatchEvent(new Event("change")); })()`, nil)
	b.run(chromedp.SendKeys(chromedp.CSS("#f-intent"), passed[9:18]))
	if _, intents := shown(); len(intents) != 1 || intents[0] != passed {
		t.Errorf("filtered to %q, the Live page shows %v", passed[9:18], intents)
	}
	b.eval(`(() => { const f = document.getElementById("f-intent"); f.value = ""; f.dispatchEvent(new Event("input")); f.blur(); })()`, nil)
	if _, intents := shown(); len(intents) != 3 {
		t.Errorf("without filters, the Live page shows %v, want 3 outcomes", intents)
	}
	b.screenshot("live", `document.querySelector("h1")`)
}

// checkIntentPages checks the Intent page of the failed intent: constraint 5 (in stock)
// is marked, with the reason the status gives; and that of an open intent, which counts
// down to its deadline.
func checkIntentPages(t *testing.T, s *testServer, b *consoleBrowser, failed, open string) {
	st := s.status(failed)
	failures, _ := st["constraint_failures"].([]any)
	if len(failures) != 1 {
		t.Fatalf("status of %s: %v, want one constraint failure", failed, st)
	}
	f := failures[0].(map[string]any)
	index, reason := int(f["index"].(float64)), f["reason"].(string)
	b.open("#/intent/" + failed)
	marked := fmt.Sprintf(`li.failed[data-index="%d"]`, index)
	b.wait("the failed constraint to be marked", "document.querySelector("+jsString(marked)+")", 5*time.Second)
	if got := b.text(marked); !strings.Contains(got, reason) || !strings.Contains(got, fmt.Sprintf("constraint %d failed", index)) {
		t.Errorf("the marked constraint reads %q, want constraint %d and its reason %q", got, index, reason)
	}
	if n := b.count("li.failed"); n != 1 {
		t.Errorf("%d constraints are marked failed, want 1", n)
	}
	b.screenshot("intent-failure", "document.querySelector("+jsString(marked)+")")

	// An open intent counts down to its deadline.
	b.open("#/intent/" + open)
	countdown := `/^\d{2}:\d{2}:\d{2}$/.test((document.getElementById("countdown") || {}).textContent)`
	b.wait("the countdown", countdown, 5*time.Second)
	b.screenshot("intent-open", `document.querySelector("h1")`)
}

// checkProofPages checks that the Proof page verifies a real bundle, success and
// failure alike, against the server's key.
func checkProofPages(t *testing.T, b *consoleBrowser, passed, failed string) {
	for _, id := range []string{passed, failed} {
		b.open("#/proof/" + id)
		// The last page's verdict may still be up for a moment: wait for this one's.
		b.wait("the verdict on "+id, fmt.Sprintf(`(document.getElementById("verdict") || {textContent: ""}).textContent.includes(%s)`, jsString(id)), 10*time.Second)
		if got := b.text("#verdict"); !strings.HasPrefix(got, "verified: the proof of intent "+id+" holds") {
			t.Errorf("the Proof page of %s says %q, want verified", id, got)
		}
		for _, check := range []string{"bundle", "key", "signature", "authored_intent_digest", "proposal_digest", "evidence_digest", "policy", "intent", "authorship", "evaluation", "agent"} {
			if got := b.attr(fmt.Sprintf(`li[data-check=%q]`, check), "data-status"); got != "pass" {
				t.Errorf("proof of %s: check %s is %q, want pass", id, check, got)
			}
		}
	}
	b.screenshot("proof-verified", `document.querySelector("h1")`)
}

// checkDroppedBundle drops in a bundle with one byte changed, with the server's key
// typed in: the page names the check that fails, as intentctl verify does; and the
// whole bundle, which verifies.
func checkDroppedBundle(t *testing.T, s *testServer, b *consoleBrowser, passed string) {
	r := s.do("GET", "/intents/"+passed+"/proof", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET proof: %s", r)
	}
	var info struct {
		PublicKey string `json:"public_key"`
	}
	if ir := s.do("GET", "/info", "", nil); json.Unmarshal(ir.body, &info) != nil || info.PublicKey == "" {
		t.Fatalf("GET /info: %s", ir)
	}
	changed := bytes.Replace(r.body, []byte(`"price_cents":1999`), []byte(`"price_cents":1998`), 1)
	if bytes.Equal(changed, r.body) {
		t.Fatalf("the bundle has no evidence price of 1999 to change: %s", r.body)
	}
	for _, c := range []struct{ name, check string }{{"tampered", "evidence_digest"}, {"whole", ""}} {
		body := changed
		if c.check == "" {
			body = r.body
		}
		file := filepath.Join(t.TempDir(), c.name+".json")
		if err := os.WriteFile(file, body, 0o600); err != nil {
			t.Fatal(err)
		}
		b.open("#/proof")
		b.wait("the drop zone", `document.getElementById("bundle-file")`, 5*time.Second)
		b.eval(fmt.Sprintf(`document.getElementById("trusted-key").value = %s`, jsString(info.PublicKey)), nil)
		b.eval(`document.getElementById("verdict")?.remove()`, nil) // the last file's
		b.run(chromedp.SetUploadFiles(chromedp.CSS("#bundle-file"), []string{file}))
		b.wait("the verdict on the "+c.name+" file", `document.getElementById("verdict")`, 10*time.Second)
		got := b.text("#verdict")
		if c.check == "" {
			if !strings.HasPrefix(got, "verified:") {
				t.Errorf("the whole file: %q, want verified", got)
			}
			continue
		}
		if !strings.HasPrefix(got, "verification FAILED: check "+c.check+": ") {
			t.Errorf("the %s file: %q, want the %s check named", c.name, got, c.check)
		}
		if st := b.attr(fmt.Sprintf(`li[data-check=%q]`, c.check), "data-status"); st != "fail" {
			t.Errorf("the %s file: check %s is %q, want fail", c.name, c.check, st)
		}
		b.screenshot("proof-tampered", `document.querySelector('li[data-check="evidence_digest"]')`)
	}
}

// count is the number of elements a selector finds.
func (b *consoleBrowser) count(selector string) int {
	b.t.Helper()
	var n int
	b.eval(fmt.Sprintf(`document.querySelectorAll(%q).length`, selector), &n)
	return n
}

// attr is an attribute of the first element a selector finds, or "".
func (b *consoleBrowser) attr(selector, name string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf(`(document.querySelector(%q) || {getAttribute: () => ""}).getAttribute(%q) || ""`, selector, name), &s)
	return s
}

// TestConsoleToken checks the console of a server with tokens: it asks for the token
// before it calls the API at all, then works with it, and the token never appears in
// the address of a request (the stream included, which an EventSource could only
// authenticate through its URL).
func TestConsoleToken(t *testing.T) {
	// Not parallel: runs Chromium, whose 5s page waits two browsers at once could miss.
	s := startServer(t, []string{"--tokens", writeTokens(t)})
	b := newConsoleBrowser(t, s)

	var mu sync.Mutex
	type request struct {
		url  string
		auth bool
	}
	var requests []request
	chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			_, auth := e.Request.Headers["Authorization"]
			mu.Lock()
			requests = append(requests, request{e.Request.URL + e.Request.URLFragment, auth})
			mu.Unlock()
		}
	})
	apiCalls := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, r := range requests {
			if !strings.HasPrefix(r.url, b.base) {
				out = append(out, r.url)
			}
		}
		return out
	}

	b.open("#/live")
	b.wait("the token form", `document.getElementById("token-form")`, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // time for anything the page would load by itself
	if calls := apiCalls(); len(calls) > 0 {
		t.Errorf("before the token was given the console called %q", calls)
	}
	if got := b.text("main"); strings.Contains(got, "Live outcomes") {
		t.Errorf("before the token was given the console shows the Live page: %q", got)
	}
	b.screenshot("token", `document.getElementById("token-form")`)

	b.run(chromedp.SendKeys(chromedp.CSS("#token"), readToken+"\n"))
	b.wait("the stream to connect with the token", `document.getElementById("conn").dataset.state === "connected"`, 10*time.Second)
	id := s.submit()
	if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal: %s", r)
	}
	b.wait("the success on the Live page", fmt.Sprintf(`document.querySelector('#events a[href="#/intent/%s"]')`, id), 5*time.Second)
	b.open("#/intent/" + id)
	b.wait("the Intent page", `document.getElementById("tl-h")`, 5*time.Second)

	calls := apiCalls()
	if len(calls) == 0 {
		t.Fatal("the console made no API call after the token was given")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range requests {
		if strings.Contains(r.url, readToken) {
			t.Errorf("the token is in the address of a request: %s", r.url)
		}
		if !strings.HasPrefix(r.url, b.base) && !r.auth {
			t.Errorf("the API call %s has no Authorization header", r.url)
		}
	}
}

// TestConsoleServed checks what serves the console: on by default with its files and
// their headers, off with --ui=false, and the times of an intent behind the read role.
func TestConsoleServed(t *testing.T) {
	t.Parallel()
	// Not http.DefaultClient: it checks every answer against the API's OpenAPI
	// document, and the console is no part of the API.
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(url string, header ...string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body)
	}

	s := startServer(t, []string{"--tokens", writeTokens(t)})
	code, h, body := get(s.url + "/ui/")
	if code != http.StatusOK || !strings.Contains(body, `<script type="module" src="app.js">`) {
		t.Fatalf("GET /ui/: %d %.200s", code, body)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("GET /ui/: Content-Security-Policy %q", csp)
	}
	if code, h, _ := get(s.url + "/ui/app.js"); code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/javascript") {
		t.Errorf("GET /ui/app.js: %d %s", code, h.Get("Content-Type"))
	} else if code, _, _ := get(s.url+"/ui/app.js", "If-None-Match", h.Get("ETag")); code != http.StatusNotModified {
		t.Errorf("GET /ui/app.js with its ETag: %d, want 304", code)
	}
	if _, _, body := get(s.url + "/ui/config.json"); strings.TrimSpace(body) != `{"auth_required":true}` {
		t.Errorf("GET /ui/config.json: %s", body)
	}
	id := s.submit()
	// The console reads the times from the API's extension, which needs the read role.
	timeline := s.url + "/intents/" + id + "/timeline"
	if code, _, _ := get(timeline); code != http.StatusUnauthorized {
		t.Errorf("GET the timeline without a token: %d, want 401", code)
	}
	if code, _, _ := get(timeline, "Authorization", "Bearer "+metricsToken); code != http.StatusForbidden {
		t.Errorf("GET the timeline with a token without the read role: %d, want 403", code)
	}
	code, _, body = get(timeline, "Authorization", "Bearer "+readToken)
	var times struct {
		CreatedAt  time.Time  `json:"created_at"`
		ExpiresAt  time.Time  `json:"expires_at"`
		ProposedAt *time.Time `json:"proposed_at"`
	}
	if err := json.Unmarshal([]byte(body), &times); code != http.StatusOK || err != nil || times.CreatedAt.IsZero() ||
		times.ExpiresAt.Sub(times.CreatedAt) != 24*time.Hour || times.ProposedAt != nil {
		t.Errorf("GET the timeline of an open intent: %d %s (%v)", code, body, err)
	}
	if code, _, body := get(s.url+"/intents/not-an-id/timeline", "Authorization", "Bearer "+readToken); code != http.StatusNotFound || !strings.Contains(body, "intent_not_found") {
		t.Errorf("GET the timeline of a malformed id: %d %s", code, body)
	}
	// The console's former path of it is no route.
	if code, _, body := get(s.url+"/ui/api/intents/"+id+"/timeline", "Authorization", "Bearer "+readToken); code != http.StatusNotFound || !strings.Contains(body, `"not_found"`) {
		t.Errorf("GET /ui/api/intents/{id}/timeline: %d %s, want 404 not_found", code, body)
	}

	off := startServer(t, []string{"--ui=false"})
	for _, p := range []string{"/ui/", "/ui/app.js", "/ui/config.json"} {
		if code, _, _ := get(off.url + p); code != http.StatusNotFound {
			t.Errorf("--ui=false: GET %s answered %d, want 404", p, code)
		}
	}
	// The timeline is the API's, served with the console off.
	if code, _, body := get(off.url + "/intents/" + off.submit() + "/timeline"); code != http.StatusOK {
		t.Errorf("--ui=false: GET the timeline: %d %s, want 200", code, body)
	}
}

// TestConsoleResume cuts the Live page's stream, through a proxy between the browser and
// the server, while outcomes are decided, and checks that the page says it is
// reconnecting, then resumed from the last id it saw, and shows each outcome once: the
// ones decided while it was cut arrive, and none twice.
func TestConsoleResume(t *testing.T) {
	// Not parallel: runs Chromium, whose 5s page waits two browsers at once could miss.
	s := startServer(t, nil)
	b := newConsoleBrowser(t, s)

	target, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // the stream goes through as it comes
	var (
		mu      sync.Mutex
		cuts    []context.CancelFunc
		resumes []string // the Last-Event-ID of each request of the stream
	)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/events" {
			ctx, cancel := context.WithCancel(r.Context())
			mu.Lock()
			cuts, resumes = append(cuts, cancel), append(resumes, r.Header.Get("Last-Event-ID"))
			mu.Unlock()
			r = r.WithContext(ctx)
		}
		rp.ServeHTTP(w, r)
	}))
	cut := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cuts {
			c()
		}
	}
	// The page's stream is open till the browser goes, after this cleanup: cut it, or
	// Close waits for it.
	t.Cleanup(func() { cut(); proxy.CloseClientConnections(); proxy.Close() })
	b.base = proxy.URL + "/ui/"

	state := `document.getElementById("conn").dataset.state`
	rows := func() (ids []int, intents []string) {
		t.Helper()
		var out []struct {
			ID     int    `json:"id"`
			Intent string `json:"intent"`
		}
		b.eval(`[...document.querySelectorAll("#events tr")].map(r => ({id: Number(r.dataset.id), intent: r.querySelector("a").textContent}))`, &out)
		for _, r := range out {
			ids, intents = append(ids, r.ID), append(intents, r.Intent)
		}
		return ids, intents
	}
	has := func(id string) string {
		return fmt.Sprintf(`document.querySelector('#events a[href="#/intent/%s"]')`, id)
	}

	b.open("#/live")
	b.wait("the stream to connect", state+` === "connected"`, 10*time.Second)
	first := s.submit()
	if r := s.propose(first, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal: %s", r)
	}
	b.wait("the first outcome", has(first), 5*time.Second)
	ids, _ := rows()
	lastSeen := ids[0]

	// Cut the stream; decide two more while the page waits to reconnect.
	cut()
	b.wait("the page to see the drop", state+` === "reconnecting"`, 5*time.Second)
	second, third := s.submit(), s.submit()
	for _, p := range []struct{ id, solution, want string }{{second, solutionOutOfStock, "failure"}, {third, solutionPasses, "success"}} {
		if r := s.propose(p.id, p.solution); r.status != http.StatusOK {
			t.Fatalf("proposal: %s", r)
		}
		s.waitStatus(p.id, p.want)
	}
	var st string
	if b.eval(state, &st); st != "reconnecting" {
		t.Fatalf("the page reconnected before the outcomes were decided (state %q): the test proves no resume", st)
	}
	b.wait("the page to resume", state+` === "resumed"`, 10*time.Second)
	if got, want := b.text("#conn"), fmt.Sprintf("resumed from id %d", lastSeen); !strings.Contains(got, want) {
		t.Errorf("the connection state reads %q, want it to say %q", got, want)
	}
	b.wait("the outcomes decided during the drop", has(second)+" && "+has(third), 5*time.Second)

	// A second cut with nothing new: the page resumes and shows nothing twice.
	cut()
	b.wait("the page to see the second drop", state+` === "reconnecting"`, 5*time.Second)
	b.wait("the page to resume again", state+` === "resumed"`, 10*time.Second)
	time.Sleep(300 * time.Millisecond)

	ids, intents := rows()
	if len(ids) != 3 || intents[0] != third || intents[1] != second || intents[2] != first {
		t.Fatalf("the Live page shows events %v of intents %v; want the three outcomes once each, newest first (%s, %s, %s)", ids, intents, third, second, first)
	}
	if !(ids[0] > ids[1] && ids[1] > ids[2]) {
		t.Errorf("event ids %v are not newest first without repeats", ids)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"", strconv.Itoa(lastSeen), strconv.Itoa(ids[0])}; !slices.Equal(resumes, want) {
		t.Errorf("the stream was asked for with Last-Event-ID %q, want %q", resumes, want)
	}
}
