package http

import (
	"bufio"
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
	"github.com/intentd/intentd/internal/syncbuf"
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
	logs := &syncbuf.Buffer{}
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

// TestErrorCodeLabels checks that the code label takes every code of the OpenAPI
// document and no other, but for canceled: the code of a caller that hung up, which
// is counted but never seen.
func TestErrorCodeLabels(t *testing.T) {
	doc := loadOpenAPI(t)
	var enum []string
	for _, v := range doc.Components.Schemas["ErrorCode"].Value.Enum {
		enum = append(enum, v.(string))
	}
	var codes []string
	for c := range errorCodes {
		if c != intentd.CodeCanceled {
			codes = append(codes, c)
		}
	}
	slices.Sort(enum)
	slices.Sort(codes)
	if !slices.Equal(codes, enum) {
		t.Fatalf("error code labels %q\nthe document's codes %q", codes, enum)
	}
	tests := []struct{ code, want string }{
		{CodeNotFound, CodeNotFound},
		{intentd.CodeCanceled, intentd.CodeCanceled},
		{"made_up", "other"},
		{"", "other"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			if got := errorCodeLabel(tt.code); got != tt.want {
				t.Fatalf("errorCodeLabel(%q) = %q, want %q", tt.code, got, tt.want)
			}
		})
	}
}

// TestMethodLabel checks the method label of known, made-up and miscased methods.
func TestMethodLabel(t *testing.T) {
	tests := []struct{ method, want string }{
		{"GET", "GET"}, {"HEAD", "HEAD"}, {"POST", "POST"}, {"PUT", "PUT"}, {"PATCH", "PATCH"},
		{"DELETE", "DELETE"}, {"CONNECT", "CONNECT"}, {"OPTIONS", "OPTIONS"}, {"TRACE", "TRACE"},
		{"get", "other"}, {"BREW", "other"}, {"M0X", "other"}, {"", "other"},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			if got := methodLabel(tt.method); got != tt.want {
				t.Fatalf("methodLabel(%q) = %q, want %q", tt.method, got, tt.want)
			}
		})
	}
}

// seriesLabels matches one label of a series line.
var seriesLabels = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// scanSeries counts the series of a text exposition, its lines that are not comments,
// and checks the labels of the HTTP series against the values they may take.
func scanSeries(t *testing.T, exposition string) int {
	t.Helper()
	patterns := map[string]bool{unmatchedRoute: true}
	for _, rt := range routes {
		patterns[rt.pattern] = true
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(exposition))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		if !strings.HasPrefix(line, "intentd_http_") {
			continue
		}
		for _, m := range seriesLabels.FindAllStringSubmatch(line, -1) {
			ok := true
			switch m[1] {
			case "method":
				ok = methodLabel(m[2]) == m[2] || m[2] == "other"
			case "route":
				ok = patterns[m[2]]
			case "code":
				ok = errorCodeLabel(m[2]) == m[2]
			case "status":
				ok = regexp.MustCompile(`^[1-5][0-9][0-9]$`).MatchString(m[2])
			}
			if !ok {
				t.Errorf("series %s: label %s takes the value %q", line, m[1], m[2])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMetricsLabelsBounded floods a server with made-up methods and unknown paths,
// with and without tokens, and checks that /metrics gains no series: each label of a
// request takes one of a few values, whatever the request.
func TestMetricsLabelsBounded(t *testing.T) {
	const flood = 3000
	tests := []struct {
		name   string
		tokens *Tokens
		auth   []string // the Authorization headers of the flood's requests, in turn
	}{
		{"no tokens", nil, []string{""}},
		{"tokens", allTokens(t), []string{"", "Bearer all", "Bearer wrong", "Bearer metrics"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(openEngine(t), Options{Tokens: tt.tokens})
			scrape := func() string {
				rec := serve(srv, "GET", "/metrics", "Bearer all")
				if rec.Code != http.StatusOK {
					t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
				}
				return rec.Body.String()
			}
			send := func(i int) {
				auth := tt.auth[i%len(tt.auth)]
				serve(srv, fmt.Sprintf("M%dX", i), "/x", auth)
				serve(srv, "GET", fmt.Sprintf("/nowhere/%d", i), auth)
				serve(srv, fmt.Sprintf("M%dX", i), fmt.Sprintf("/nowhere/%d", i), auth)
				serve(srv, fmt.Sprintf("M%dX", i), "/intents", auth)
				serve(srv, "OPTIONS", fmt.Sprintf("/intents/%d/proof", i), auth)
			}
			// Each kind of request with each header first, so that every series the
			// flood may touch exists before the count.
			for i := range len(tt.auth) {
				send(i)
			}
			scrape()
			before := scanSeries(t, scrape())
			for i := range flood {
				send(i)
			}
			after := scanSeries(t, scrape())
			t.Logf("%d series before %d requests, %d after", before, 5*flood, after)
			if after != before {
				t.Fatalf("%d series before the flood, %d after", before, after)
			}
		})
	}
}
