package http

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestParseCORSOrigin(t *testing.T) {
	tests := []struct {
		in, want string // want "": refused
	}{
		{"https://shop.example", "https://shop.example"},
		{"HTTPS://Shop.Example", "https://shop.example"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://localhost:80", "http://localhost"},
		{"https://shop.example:443", "https://shop.example"},
		{"http://shop.example:443", "http://shop.example:443"},
		{"http://[::1]:3000", "http://[::1]:3000"},
		{"http://[::1]:80", "http://[::1]"},
		{"chrome-extension://abcdef", "chrome-extension://abcdef"},
		{"*", "*"},
		{"https://shop.example/", ""},
		{"https://shop.example/app", ""},
		{"https://shop.example?x=1", ""},
		{"https://shop.example?", ""},
		{"https://shop.example#top", ""},
		{"https://shop.example#", ""},
		{"https://user@shop.example", ""},
		{"https://shop.example:", ""},
		{"https://shop.example:0", ""},
		{"https://shop.example:65536", ""},
		{"https://shop.example:http", ""},
		{"shop.example", ""},
		{"//shop.example", ""},
		{"https://", ""},
		{"https://:8080", ""},
		{"null", ""},
		{"", ""},
		{"**", ""},
		{"https://*.example", ""},
	}
	for _, tt := range tests {
		got, err := ParseCORSOrigin(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ParseCORSOrigin(%q) = %q, want an error", tt.in, got)
		case tt.want != "" && (err != nil || got != tt.want):
			t.Errorf("ParseCORSOrigin(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// corsRequest sends one request through srv with an Origin (none if empty), an
// Access-Control-Request-Method (none if empty) and an Authorization (none if empty).
func corsRequest(srv http.Handler, method, path, origin, requestMethod, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/", nil)
	req.Method, req.URL.Path = method, path
	for k, v := range map[string]string{"Origin": origin, "Access-Control-Request-Method": requestMethod, "Authorization": auth} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

// TestCORS checks the CORS answers, preflights and other requests, of servers with and
// without tokens, with listed origins and the wildcard: what an allowed origin is
// answered, and that any other request is answered as without CORS but for Vary.
func TestCORS(t *testing.T) {
	const (
		app  = "https://app.example"
		evil = "https://evil.example"
	)
	servers := map[string]*Server{
		"off":             NewServer(openEngine(t), Options{}),
		"listed":          NewServer(openEngine(t), Options{CORSOrigins: []string{app, "http://127.0.0.1:3000"}}),
		"listed, tokens":  NewServer(openEngine(t), Options{CORSOrigins: []string{app}, Tokens: allTokens(t)}),
		"any":             NewServer(openEngine(t), Options{CORSOrigins: []string{"*"}}),
		"any+app, tokens": NewServer(openEngine(t), Options{CORSOrigins: []string{"*", app}, Tokens: allTokens(t)}),
	}
	tests := []struct {
		server, name                              string
		method, path, origin, requestMethod, auth string
		status                                    int
		allowOrigin, allowMethods, allow          string
	}{
		// Preflights.
		{"off", "preflight", "OPTIONS", "/intents", app, "POST", "", 200, "", "", "OPTIONS, POST"},
		{"listed", "preflight", "OPTIONS", "/intents", app, "POST", "", 204, app, "POST", ""},
		{"listed", "preflight, the other origin", "OPTIONS", "/intents/x/status", "http://127.0.0.1:3000", "GET", "", 204, "http://127.0.0.1:3000", "GET", ""},
		{"listed", "preflight, two methods", "OPTIONS", "/policies/abc", app, "DELETE", "", 204, app, "DELETE, GET", ""},
		{"listed", "preflight, a method the path does not serve", "OPTIONS", "/intents", app, "PUT", "", 204, app, "POST", ""},
		{"listed", "preflight, another origin", "OPTIONS", "/intents", evil, "POST", "", 200, "", "", "OPTIONS, POST"},
		{"listed", "preflight, another port", "OPTIONS", "/intents", "http://127.0.0.1:3001", "POST", "", 200, "", "", "OPTIONS, POST"},
		{"listed", "preflight, origin null", "OPTIONS", "/intents", "null", "POST", "", 200, "", "", "OPTIONS, POST"},
		{"listed", "preflight, empty id", "OPTIONS", "/intents//status", app, "GET", "", 200, app, "", "GET, OPTIONS"},
		{"listed", "preflight, unknown path", "OPTIONS", "/nowhere", app, "GET", "", 404, app, "", ""},
		{"listed", "OPTIONS, not a preflight", "OPTIONS", "/intents", app, "", "", 200, app, "", "OPTIONS, POST"},
		{"listed, tokens", "preflight, no token", "OPTIONS", "/intents", app, "POST", "", 204, app, "POST", ""},
		{"listed, tokens", "preflight of a health check", "OPTIONS", "/healthz", app, "GET", "", 204, app, "GET", ""},
		{"listed, tokens", "preflight, another origin", "OPTIONS", "/intents", evil, "POST", "", 401, "", "", ""},
		{"listed, tokens", "preflight, another origin, a token", "OPTIONS", "/intents", evil, "POST", "Bearer read", 200, "", "", "OPTIONS, POST"},
		{"listed, tokens", "OPTIONS, not a preflight", "OPTIONS", "/intents", app, "", "", 401, app, "", ""},
		{"any", "preflight", "OPTIONS", "/policies/abc", evil, "GET", "", 204, "*", "DELETE, GET", ""},
		{"any", "preflight, no Origin", "OPTIONS", "/policies/abc", "", "GET", "", 200, "", "", "DELETE, GET, OPTIONS"},
		{"any+app, tokens", "preflight, a route with a token", "OPTIONS", "/policies/abc", evil, "GET", "", 401, "", "", ""},
		{"any+app, tokens", "preflight, a health check", "OPTIONS", "/healthz", evil, "GET", "", 204, "*", "GET", ""},
		{"any+app, tokens", "preflight, a listed origin", "OPTIONS", "/policies/abc", app, "GET", "", 204, app, "DELETE, GET", ""},
		{"any+app, tokens", "preflight of a health check, a listed origin", "OPTIONS", "/readyz", app, "GET", "", 204, "*", "GET", ""},

		// Requests that are not preflights.
		{"off", "GET", "GET", "/info", app, "", "", 200, "", "", ""},
		{"listed", "GET", "GET", "/info", app, "", "", 200, app, "", ""},
		{"listed", "GET, another origin", "GET", "/info", evil, "", "", 200, "", "", ""},
		{"listed", "GET, no Origin", "GET", "/info", "", "", "", 200, "", "", ""},
		{"listed", "an error", "GET", "/intents/x/status", app, "", "", 404, app, "", ""},
		{"listed", "a method the path does not serve", "PUT", "/intents", app, "", "", 405, app, "", "OPTIONS, POST"},
		{"listed, tokens", "no token", "GET", "/info", app, "", "", 401, app, "", ""},
		{"listed, tokens", "a token", "GET", "/info", app, "", "Bearer read", 200, app, "", ""},
		{"listed, tokens", "a token, another origin", "GET", "/info", evil, "", "Bearer read", 200, "", "", ""},
		{"listed, tokens", "unknown path, no token", "GET", "/nowhere", app, "", "", 401, app, "", ""},
		{"any", "GET", "GET", "/info", evil, "", "", 200, "*", "", ""},
		{"any", "unknown path", "GET", "/nowhere", evil, "", "", 404, "*", "", ""},
		{"any+app, tokens", "a route with a token", "GET", "/info", evil, "", "Bearer read", 200, "", "", ""},
		{"any+app, tokens", "a route with a token, a listed origin", "GET", "/info", app, "", "Bearer read", 200, app, "", ""},
		{"any+app, tokens", "a health check", "GET", "/healthz", evil, "", "", 200, "*", "", ""},
		{"any+app, tokens", "unknown path", "GET", "/nowhere", evil, "", "", 401, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.server+"/"+tt.name, func(t *testing.T) {
			rec := corsRequest(servers[tt.server], tt.method, tt.path, tt.origin, tt.requestMethod, tt.auth)
			h := rec.Header()
			if rec.Code != tt.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tt.status)
			}
			if got := h.Get("Access-Control-Allow-Origin"); got != tt.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tt.allowOrigin)
			}
			if got := h.Get("Access-Control-Allow-Methods"); got != tt.allowMethods {
				t.Errorf("Access-Control-Allow-Methods %q, want %q", got, tt.allowMethods)
			}
			if got := h.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
			if _, ok := h["Access-Control-Allow-Credentials"]; ok {
				t.Errorf("Access-Control-Allow-Credentials is sent")
			}
			wantVary := ""
			if tt.server != "off" {
				wantVary = "Origin"
			}
			if got := strings.Join(h.Values("Vary"), ", "); got != wantVary {
				t.Errorf("Vary %q, want %q", got, wantVary)
			}
			preflight := tt.allowMethods != ""
			checks := []struct{ name, want string }{
				{"Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID"},
				{"Access-Control-Max-Age", strconv.Itoa(CORSMaxAge)},
			}
			for _, c := range checks {
				want := ""
				if preflight {
					want = c.want
				}
				if got := h.Get(c.name); got != want {
					t.Errorf("%s %q, want %q", c.name, got, want)
				}
			}
			wantExpose := ""
			if tt.allowOrigin != "" && !preflight {
				wantExpose = "Retry-After"
			}
			if got := h.Get("Access-Control-Expose-Headers"); got != wantExpose {
				t.Errorf("Access-Control-Expose-Headers %q, want %q", got, wantExpose)
			}
			if preflight && rec.Body.Len() != 0 {
				t.Errorf("a preflight answer has a body: %s", rec.Body)
			}
		})
	}
}

// TestCORSLabelsBounded floods a server that answers preflights with them, to every
// kind of path, from allowed origins and others, and checks that /metrics gains no
// series: a preflight is counted under its route's pattern, and any other OPTIONS
// request as unmatched.
func TestCORSLabelsBounded(t *testing.T) {
	const flood = 2000
	for _, tokens := range []*Tokens{nil, allTokens(t)} {
		t.Run(fmt.Sprintf("tokens=%v", tokens != nil), func(t *testing.T) {
			srv := NewServer(openEngine(t), Options{Tokens: tokens, CORSOrigins: []string{"https://app.example", "*"}})
			scrape := func() string {
				rec := serve(srv, "GET", "/metrics", "Bearer all")
				if rec.Code != http.StatusOK {
					t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
				}
				return rec.Body.String()
			}
			origins := []string{"https://app.example", "https://evil.example", ""}
			send := func(i int) {
				origin := origins[i%len(origins)]
				if i%len(origins) == 2 {
					origin = fmt.Sprintf("https://o%d.example", i)
				}
				m := fmt.Sprintf("M%dX", i)
				corsRequest(srv, "OPTIONS", fmt.Sprintf("/intents/%d/proof", i), origin, m, "")
				corsRequest(srv, "OPTIONS", fmt.Sprintf("/policies/%d", i), origin, "GET", "")
				corsRequest(srv, "OPTIONS", fmt.Sprintf("/nowhere/%d", i), origin, "GET", "")
				corsRequest(srv, "OPTIONS", "/intents//status", origin, "GET", "")
				corsRequest(srv, "OPTIONS", "/healthz", origin, m, "")
				corsRequest(srv, m, "/intents", origin, "", "")
			}
			for i := range 3 * len(origins) {
				send(i)
			}
			scrape()
			before := scanSeries(t, scrape())
			for i := range flood {
				send(i)
			}
			after := scanSeries(t, scrape())
			if after != before {
				t.Fatalf("%d series before the flood, %d after", before, after)
			}
			if exp := scrape(); !strings.Contains(exp, `intentd_http_requests_total{method="OPTIONS",route="/healthz",status="204"}`) {
				t.Errorf("no preflight of /healthz counted under its route in\n%s", exp)
			}
		})
	}
}
