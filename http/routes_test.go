package http

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
)

// matchRoute finds the route of a request and the value of its :id, or nil, as the
// server does: the route table registered with httprouter, looked up, and a match with
// an empty parameter taken for none. The tests that check the table against other
// lists of routes use it.
func matchRoute(method, path string) (*route, string) {
	r := httprouter.New()
	var got *route
	for i := range routes {
		rt := &routes[i]
		r.Handle(rt.method, rt.pattern, func(http.ResponseWriter, *http.Request, httprouter.Params) { got = rt })
	}
	h, ps, _ := r.Lookup(method, path)
	if h == nil || emptyParam(ps) {
		return nil, ""
	}
	h(nil, nil, ps)
	return got, ps.ByName("id")
}

// allTokens has a token per role, named after it, and "all" with every role.
func allTokens(t *testing.T) *Tokens {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s admin,submit,propose,read,metrics all\n", HashToken("all"))
	for _, role := range allRoles {
		fmt.Fprintf(&b, "%s %s %s\n", HashToken(string(role)), role, role)
	}
	tok, err := ParseTokens(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// serve sends one request through srv. The path is set as is, so that it may be one
// that no client would send.
func serve(srv http.Handler, method, path, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/", nil)
	req.Method, req.URL.Path = method, path
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

// TestRouteTable checks that each route is listed once and registers without a
// conflict, and that its log line names what its :id identifies.
func TestRouteTable(t *testing.T) {
	seen := map[string]bool{}
	for _, rt := range routes {
		key := rt.method + " " + rt.pattern
		if seen[key] {
			t.Errorf("%s is listed twice", key)
		}
		seen[key] = true
		if rt.handle == nil {
			t.Errorf("%s has no handler", key)
		}
		if rt.role != "" && !slices.Contains(allRoles, rt.role) {
			t.Errorf("%s needs the unknown role %q", key, rt.role)
		}
		if strings.Contains(rt.pattern, ":id") && idLogKey(rt.pattern) == "" {
			t.Errorf("%s: the request log has no name for its :id", key)
		}
	}
	// httprouter panics on a conflict between patterns.
	NewServer(openEngine(t), Options{})
}

// TestRouteLabels checks the route each request is given, by the router and by the
// chain that labels its metrics and log line: the route pattern and the :id, or
// "unmatched" and none.
func TestRouteLabels(t *testing.T) {
	tests := []struct {
		method, path, pattern, id string
	}{
		{"GET", "/healthz", "/healthz", ""},
		{"POST", "/policies", "/policies", ""},
		{"GET", "/policies/abc", "/policies/:id", "abc"},
		{"DELETE", "/policies/abc", "/policies/:id", "abc"},
		{"GET", "/intents/x", "/intents/:id", "x"},
		{"GET", "/intents/x/status", "/intents/:id/status", "x"},
		{"POST", "/intents/x/proposal", "/intents/:id/proposal", "x"},
		{"GET", "/intents/x/proof", "/intents/:id/proof", "x"},
		{"GET", "/events", "/events", ""},
		{"GET", "/intents/", "", ""},
		{"GET", "/intents//status", "", ""},
		{"GET", "/events/", "", ""},
		{"PUT", "/policies", "", ""},
		{"POST", "/intents/x", "", ""},
		{"GET", "healthz", "", ""},
	}
	logs := &lockedBuffer{}
	srv := NewServer(openEngine(t), Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rt, id := matchRoute(tt.method, tt.path)
			got := ""
			if rt != nil {
				got = rt.pattern
			}
			if got != tt.pattern || id != tt.id {
				t.Fatalf("matchRoute = %q, %q; want %q, %q", got, id, tt.pattern, tt.id)
			}

			before := len(logs.String())
			// A context already ended ends an event stream at once; the labels do not
			// depend on how the handler fares.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			req := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
			req.Method, req.URL.Path = tt.method, tt.path
			srv.ServeHTTP(httptest.NewRecorder(), req)
			line := lastRequestLine(logs.String()[before:])
			wantRoute := tt.pattern
			if wantRoute == "" {
				wantRoute = unmatchedRoute
			}
			if !strings.Contains(line, " route="+wantRoute+" ") {
				t.Errorf("log line %q, want route=%s", line, wantRoute)
			}
			idAttr := regexp.MustCompile(`\b(intent_id|policy_id)=(\S+)`).FindStringSubmatch(line)
			switch {
			case tt.id == "" && idAttr != nil:
				t.Errorf("log line %q names an id", line)
			case tt.id != "" && (idAttr == nil || idAttr[2] != tt.id || idAttr[1] != idLogKey(tt.pattern)):
				t.Errorf("log line %q, want %s=%s", line, idLogKey(tt.pattern), tt.id)
			}
		})
	}
}

// lastRequestLine is the last request log line of logs.
func lastRequestLine(logs string) string {
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "msg=request ") {
			return lines[i]
		}
	}
	return ""
}

// TestUnmatchedAuth checks what a request that no route serves is answered when the
// server has tokens: 401 without a valid token, whatever the path or method, and
// without the Allow header that would list a path's methods; with one, the 404, 405
// or OPTIONS answer. A path with an empty id is no route, whatever the token's roles.
func TestUnmatchedAuth(t *testing.T) {
	srv := NewServer(openEngine(t), Options{Tokens: allTokens(t)})
	const (
		noToken = `Bearer realm="intentd"`
		invalid = `Bearer realm="intentd", error="invalid_token"`
		scope   = `Bearer realm="intentd", error="insufficient_scope"`
	)
	tests := []struct {
		name, method, path, auth string
		status                   int
		code, challenge, allow   string
	}{
		{"unknown path", "GET", "/nowhere", "", 401, CodeUnauthorized, noToken, ""},
		{"unknown path, wrong token", "GET", "/nowhere", "Bearer nope", 401, CodeUnauthorized, invalid, ""},
		{"unknown path, any role", "GET", "/nowhere", "Bearer metrics", 404, CodeNotFound, "", ""},
		{"wrong method", "PUT", "/intents", "", 401, CodeUnauthorized, noToken, ""},
		{"wrong method, any role", "PUT", "/intents", "Bearer metrics", 405, CodeMethodNotAllowed, "", "OPTIONS, POST"},
		{"made-up method", "M0X", "/intents", "", 401, CodeUnauthorized, noToken, ""},
		{"made-up method, any role", "M0X", "/intents", "Bearer read", 405, CodeMethodNotAllowed, "", "OPTIONS, POST"},
		{"made-up method, unknown path", "M1X", "/x", "Bearer read", 404, CodeNotFound, "", ""},
		{"OPTIONS", "OPTIONS", "/policies/abc", "", 401, CodeUnauthorized, noToken, ""},
		{"OPTIONS, any role", "OPTIONS", "/policies/abc", "Bearer submit", 200, "", "", "DELETE, GET, OPTIONS"},
		{"OPTIONS, unknown path", "OPTIONS", "/x", "Bearer submit", 404, CodeNotFound, "", ""},
		{"HEAD of a health check", "HEAD", "/healthz", "", 401, CodeUnauthorized, noToken, ""},
		{"HEAD of a health check, any role", "HEAD", "/healthz", "Bearer read", 405, CodeMethodNotAllowed, "", "GET, OPTIONS"},
		{"health check", "GET", "/healthz", "", 200, "", "", ""},
		{"a route, without its role", "GET", "/intents/x", "Bearer metrics", 403, CodeForbidden, scope, ""},
		{"a route, with its role", "GET", "/intents/x", "Bearer read", 404, intentd.CodeIntentNotFound, "", ""},
		{"no path", "CONNECT", "", "", 401, CodeUnauthorized, noToken, ""},
		{"no path, any role", "CONNECT", "", "Bearer metrics", 404, CodeNotFound, "", ""},
		{"empty id", "POST", "/intents//proposal", "", 401, CodeUnauthorized, noToken, ""},
		{"empty id, without the role", "GET", "/intents//status", "Bearer metrics", 404, CodeNotFound, "", ""},
		{"empty id, with the role", "POST", "/intents//proposal", "Bearer propose", 404, CodeNotFound, "", ""},
		{"empty id, wrong method", "PUT", "/intents//status", "Bearer metrics", 405, CodeMethodNotAllowed, "", "GET, OPTIONS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(srv, tt.method, tt.path, tt.auth)
			if rec.Code != tt.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tt.status)
			}
			if tt.code != "" && !strings.Contains(rec.Body.String(), `"code":"`+tt.code+`"`) {
				t.Errorf("body %s, want code %s", rec.Body, tt.code)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
}

// TestChainCountsPanics checks that a handler's panic is answered 500 and still
// counted under its route.
func TestChainCountsPanics(t *testing.T) {
	srv := NewServer(faultyEngine{Engine: openEngine(t)}, Options{})
	if rec := serve(srv, "GET", "/intents/6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10/status", ""); rec.Code != 500 {
		t.Fatalf("%d %s, want 500", rec.Code, rec.Body)
	}
	exp := serve(srv, "GET", "/metrics", "").Body.String()
	for _, series := range []string{
		`intentd_http_requests_total{method="GET",route="/intents/:id/status",status="500"} 1`,
		`intentd_http_errors_total{code="internal",route="/intents/:id/status"} 1`,
		`intentd_http_requests_in_flight 1`, // the scrape itself
	} {
		if !strings.Contains(exp, series+"\n") {
			t.Errorf("no %s in\n%s", series, exp)
		}
	}
}
