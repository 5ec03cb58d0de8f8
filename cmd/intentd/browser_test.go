package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
)

// browserPage is the page of another origin that calls intentd in TestBrowser. It does
// what only a browser can: make a passkey and sign with it, and call the API across
// origins with fetch and EventSource. Encoding stays with the Go side.
const browserPage = `<!doctype html>
<meta charset="utf-8">
<title>intentd from another origin</title>
<script>
"use strict";
function enc(buf) {
  let s = "";
  for (const c of new Uint8Array(buf)) s += String.fromCharCode(c);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
function dec(s) {
  s = s.replace(/-/g, "+").replace(/_/g, "/");
  while (s.length % 4) s += "=";
  return Uint8Array.from(atob(s), c => c.charCodeAt(0));
}
let credentialID;
async function createPasskey() {
  const cred = await navigator.credentials.create({publicKey: {
    rp: {id: location.hostname, name: "intentd test"},
    user: {id: crypto.getRandomValues(new Uint8Array(16)), name: "buyer", displayName: "Buyer"},
    challenge: crypto.getRandomValues(new Uint8Array(32)),
    pubKeyCredParams: [{type: "public-key", alg: -7}],
    authenticatorSelection: {residentKey: "required", userVerification: "required"},
  }});
  credentialID = cred.rawId;
  return enc(cred.response.getPublicKey());
}
async function sign(challenge) {
  const a = await navigator.credentials.get({publicKey: {
    rpId: location.hostname,
    challenge: dec(challenge),
    allowCredentials: [{type: "public-key", id: credentialID}],
    userVerification: "required",
  }});
  return {
    signature: enc(a.response.signature),
    clientData: new TextDecoder().decode(a.response.clientDataJSON),
    authenticatorData: enc(a.response.authenticatorData),
  };
}
async function post(url, body) {
  const r = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"}, body: body});
  return {status: r.status, body: await r.text()};
}
const stream = {opens: 0, errors: 0, events: []};
let source;
function follow(url) {
  source = new EventSource(url);
  source.onopen = () => { stream.opens++; };
  source.onerror = () => { stream.errors++; };
  for (const type of ["success", "failure", "expired"]) {
    source.addEventListener(type, e => stream.events.push({id: e.lastEventId, type: type, intent_id: JSON.parse(e.data).intent_id}));
  }
}
function state() { return Object.assign({state: source.readyState}, stream); }
</script>
`

// chromiumPath finds Debian's chromium, or "".
func chromiumPath() string {
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// startChromium starts a headless Chromium for the test's life and returns its first
// tab; ctx bounds the whole session.
func startChromium(t *testing.T, ctx context.Context, chromium string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// The machine may have no network: without these Chromium keeps dialling
		// Google's services.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	browser, cancelBrowser := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return browser
}

// pageState is what the page saw of the event stream.
type pageState struct {
	State  int `json:"state"` // EventSource.readyState: 0 connecting, 1 open, 2 closed
	Opens  int `json:"opens"`
	Errors int `json:"errors"`
	Events []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		IntentID string `json:"intent_id"`
	} `json:"events"`
}

func (p pageState) count(typ, intentID string) int {
	n := 0
	for _, e := range p.Events {
		if e.Type == typ && e.IntentID == intentID {
			n++
		}
	}
	return n
}

// TestBrowser has a headless Chromium do what a shop's page on another origin would: make
// a passkey on a virtual authenticator, sign an intent with it, submit the intent and a
// proposal with fetch, and follow the outcome with EventSource, across a restart of
// intentd on the same port and data folder. The page is on localhost, intentd on
// 127.0.0.1: two origins, so every call is a CORS request, some with a preflight.
func TestBrowser(t *testing.T) {
	// Not parallel: restarts the server on the port it had, which a test beside it could take; and runs Chromium.
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("no Chromium (chromium in PATH or /usr/bin/chromium): the browser test needs Debian's chromium package (apt-get install chromium)")
	}
	if testing.Short() {
		t.Skip("the browser test starts Chromium")
	}
	start := time.Now()

	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(browserPage))
	}))
	t.Cleanup(page.Close)
	_, pagePort, _ := net.SplitHostPort(page.Listener.Addr().String())
	// A WebAuthn relying party id is a domain, never an IP address.
	origin := "http://localhost:" + pagePort

	dir := t.TempDir()
	args := []string{"--cors-origin", origin, "--passkey-origin", origin, "--passkey-rp-id", "localhost"}
	// How long the page's EventSource waits before it reconnects: enough for the
	// restart below to be over by its first try, short enough to keep the test quick.
	retry := func(m *Main) { m.HTTP.Retry = time.Second }
	s := startServerIn(t, dir, args, retry)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	browser := startChromium(t, ctx, chromium)

	if err := openWithAuthenticator(browser, origin); err != nil {
		t.Fatalf("start Chromium on %s: %v", origin, err)
	}
	t.Logf("Chromium ready after %s", time.Since(start).Round(time.Millisecond))

	pd := pageDriver{t: t, browser: browser}
	eval, js := pd.eval, pd.js

	point := pd.createPasskey()

	eval(fmt.Sprintf("follow(%s)", js(s.url+"/events")), nil)

	// The intent, signed in the page.
	id := uuid.NewString()
	intent := s.intentJSON(id)
	body := pd.signIntent(intent, point)

	type answer struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	var a answer
	eval(fmt.Sprintf("post(%s, %s)", js(s.url+"/intents"), js(string(body))), &a)
	if a.Status != http.StatusOK {
		t.Fatalf("POST /intents from the page: %d %s", a.Status, a.Body)
	}
	proposal := js(map[string]string{"solution": solutionPasses})
	eval(fmt.Sprintf("post(%s, %s)", js(s.url+"/intents/"+id+"/proposal"), js(proposal)), &a)
	if a.Status/100 != 2 {
		t.Fatalf("POST /intents/%s/proposal from the page: %d %s", id, a.Status, a.Body)
	}

	waitPage := func(what string, done func(pageState) bool) pageState {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			var st pageState
			eval("state()", &st)
			if done(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page waited in vain for %s; it saw %+v", what, st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	st := waitPage("the success event", func(st pageState) bool { return st.count("success", id) > 0 })
	opens := st.Opens

	// The JSON bodies made the browser ask first.
	if !strings.Contains(s.logs.String(), "method=OPTIONS route=/intents status=204") {
		t.Errorf("no preflight of POST /intents in the server's logs")
	}

	// A restart on the same port and data folder: the stream ends, and the page's
	// EventSource reconnects by itself with the last id in Last-Event-ID, so that it is
	// not sent the success again (a stream without one starts with every retained event).
	if err := s.m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = startServerIn(t, dir, append(args, "--listen", "127.0.0.1:"+port), retry)
	st = waitPage("the stream to reopen", func(st pageState) bool { return st.Opens > opens && st.State == 1 })
	if st.Errors == 0 {
		t.Errorf("the page's EventSource never saw its stream end: %+v", st)
	}

	// An outcome after the restart reaches the page, and the success is still the only
	// one it has for the first intent.
	other := s.submit()
	if r := s.propose(other, solutionOutOfStock); r.status/100 != 2 {
		t.Fatalf("proposal: %s", r)
	}
	st = waitPage("the failure event after the restart", func(st pageState) bool { return st.count("failure", other) > 0 })
	if n := st.count("success", id); n != 1 {
		t.Errorf("the page saw the success of %s %d times, want once: %+v", id, n, st.Events)
	}
	if len(st.Events) != 2 || st.Events[0].ID == st.Events[1].ID {
		t.Errorf("the page saw %+v, want the success and then the failure, each once", st.Events)
	}
	if st.State != 1 {
		t.Errorf("the page's EventSource is in state %d, want 1 (open)", st.State)
	}
	t.Logf("the browser test took %s", time.Since(start).Round(time.Millisecond))
}

// openWithAuthenticator opens the page at origin in browser, with a virtual
// authenticator that holds passkeys and verifies its user without asking.
func openWithAuthenticator(browser context.Context, origin string) error {
	return chromedp.Do(browser,
		chromedp.Navigate(origin+"/"),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
				Options: &webauthn.VirtualAuthenticatorOptions{
					Protocol:                    webauthn.AuthenticatorProtocolCtap2,
					Transport:                   webauthn.AuthenticatorTransportInternal,
					HasResidentKey:              true,
					HasUserVerification:         true,
					IsUserVerified:              true,
					AutomaticPresenceSimulation: true,
				},
			})
			return err
		}),
	)
}

// pageDriver runs scripts in TestBrowser's page.
type pageDriver struct {
	t       *testing.T
	browser context.Context
}

// eval runs a script in the page, waits for its promise, and decodes its value
// into out unless out is nil.
func (p pageDriver) eval(expr string, out any) {
	p.t.Helper()
	v, err := chromedp.Run(p.browser, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("page: %s: %v", clipScript(expr), err)
	}
	if out != nil {
		if err := json.Unmarshal(v, out); err != nil {
			p.t.Fatalf("page: %s answered %s: %v", clipScript(expr), v, err)
		}
	}
}

// js is v as a script's literal.
func (p pageDriver) js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	return string(b)
}

// createPasskey makes a passkey in the page and returns its public key as the service
// takes it: the P-256 point, uncompressed.
func (p pageDriver) createPasskey() []byte {
	t := p.t
	var spki string
	p.eval("createPasskey()", &spki)
	der, err := base64.RawURLEncoding.DecodeString(spki)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		t.Fatalf("the passkey's public key: %v", err)
	}
	ecPub, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		t.Fatalf("the passkey's public key is a %T, want P-256", pub)
	}
	point, err := ecPub.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return point
}

// signIntent signs intent in the page, with the passkey of public key point: the
// challenge is what the Go side derives from its canonical form, and the assertion is
// the browser's own. It returns the authored intent.
func (p pageDriver) signIntent(intent []byte, point []byte) []byte {
	t := p.t
	challenge, err := crypto.PasskeyChallenge(intent)
	if err != nil {
		t.Fatal(err)
	}
	var assertion struct {
		Signature         string `json:"signature"`
		ClientData        string `json:"clientData"`
		AuthenticatorData string `json:"authenticatorData"`
	}
	p.eval(fmt.Sprintf("sign(%s)", p.js(challenge)), &assertion)
	sig, err1 := base64.RawURLEncoding.DecodeString(assertion.Signature)
	authData, err2 := base64.RawURLEncoding.DecodeString(assertion.AuthenticatorData)
	if err1 != nil || err2 != nil {
		t.Fatalf("assertion %+v: %v, %v", assertion, err1, err2)
	}
	return authored(t, intent, crypto.Authorship{Signature: &crypto.Signature{Passkey: &crypto.PasskeySignature{
		PubKey: point, Signature: sig, ClientData: assertion.ClientData, AuthenticatorData: authData,
	}}})
}

// clipScript shortens a script for a failure message: some carry a whole request body.
func clipScript(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
