package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/internal/syncbuf"
)

// helperToken has every role: the test helpers send it to servers started with
// --tokens, so that their setup (storing the demo policy) goes through.
const helperToken = "helper-token-with-every-role"

// The tokens of the authentication tests, one per role.
const (
	adminToken   = "tok-admin-3f9c"
	submitToken  = "tok-submit-81aa"
	proposeToken = "tok-propose-5d02"
	readToken    = "tok-read-c7e1"
	metricsToken = "tok-metrics-09b4"
)

// writeTokens writes a tokens file with helperToken and one token per role.
func writeTokens(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# test tokens\n\n")
	fmt.Fprintf(&b, "%s admin,submit,propose,read,metrics helper\n", intenthttp.HashToken(helperToken))
	for _, tok := range []struct{ token, roles string }{
		{adminToken, "admin"}, {submitToken, "submit"}, {proposeToken, "propose"}, {readToken, "read"}, {metricsToken, "metrics"},
	} {
		fmt.Fprintf(&b, "%s %s %s-caller\n", intenthttp.HashToken(tok.token), tok.roles, tok.roles)
	}
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuth checks each route with no token, a wrong one, one without the role and one
// with it; the health checks need none.
func TestAuth(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--tokens", writeTokens(t)})
	decided := s.submit()
	if r := s.propose(decided, solutionPasses); r.status != 200 {
		t.Fatalf("propose: %s", r)
	}
	s.waitStatus(decided, "success")
	open := s.submit()
	newIntent := func() []byte {
		intent := s.intentJSON(uuid.NewString())
		return authored(t, intent, s.signEd25519(intent))
	}
	otherPolicy := strings.Replace(demoPolicy, "tshirt_purchase_v1", "tshirt_purchase_v2", 1)
	const jsonType = "application/json"

	tests := []struct {
		method, path, contentType string
		body                      func() []byte
		role                      string // the token that may; "" for none needed
		okStatus                  int
	}{
		{"POST", "/policies", "text/plain", func() []byte { return []byte(otherPolicy) }, adminToken, 200},
		{"GET", "/policies/" + s.policy, "", nil, readToken, 200},
		{"DELETE", "/policies/" + s.putPolicy(strings.Replace(demoPolicy, "tshirt_purchase_v1", "tshirt_purchase_v3", 1)), "", nil, adminToken, 200},
		{"POST", "/intents", jsonType, newIntent, submitToken, 200},
		{"GET", "/intents/" + decided, "", nil, readToken, 200},
		{"GET", "/intents/" + decided + "/status", "", nil, readToken, 200},
		{"POST", "/intents/" + open + "/proposal", jsonType, func() []byte { return []byte(`{"solution":"` + solutionPasses + `"}`) }, proposeToken, 200},
		{"GET", "/intents/" + decided + "/proof", "", nil, readToken, 200},
		{"GET", "/info", "", nil, readToken, 200},
		{"GET", "/openapi.json", "", nil, readToken, 200},
		{"GET", "/metrics", "", nil, metricsToken, 200},
		{"GET", "/healthz", "", nil, "", 200},
		{"GET", "/readyz", "", nil, "", 200},
		{"GET", "/no/such/route", "", nil, readToken, 404},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			body := func() []byte {
				if tt.body == nil {
					return nil
				}
				return tt.body()
			}
			for _, a := range authAttempts(tt.role, tt.okStatus) {
				r := s.do(tt.method, tt.path, tt.contentType, body(), "Authorization", a.auth)
				if r.status != a.status {
					t.Fatalf("%s: %s, want %d", a.name, r, a.status)
				}
				if a.code != "" {
					if code, _ := r.errorBody(t); code != a.code {
						t.Fatalf("%s: code %s, want %s", a.name, code, a.code)
					}
					if got := r.header.Get("WWW-Authenticate"); got != a.challenge {
						t.Fatalf("%s: WWW-Authenticate %q, want %q", a.name, got, a.challenge)
					}
				}
			}
		})
	}
	t.Run("events", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := openStream(ctx, s.url, ""); err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("a stream without a token: %v, want a 401", err)
		}
		if _, err := openStream(ctx, s.url, "", "Authorization", "Bearer "+metricsToken); err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("a stream with the metrics token: %v, want a 403", err)
		}
		st, err := openStream(ctx, s.url, "", "Authorization", "Bearer "+readToken)
		if err != nil {
			t.Fatal(err)
		}
		defer st.close()
		if ev, err := st.next(); err != nil || ev.event != "success" {
			t.Fatalf("first event: %+v, %v", ev, err)
		}
	})
	t.Run("info says so", func(t *testing.T) {
		var info map[string]any
		json.Unmarshal(s.do("GET", "/info", "", nil).body, &info)
		if info["auth_required"] != true {
			t.Fatalf("info = %v, want auth_required true", info)
		}
	})
	t.Run("no secret in the logs", func(t *testing.T) {
		logs := s.logs.String()
		for _, secret := range []string{helperToken, adminToken, submitToken, proposeToken, readToken, metricsToken, "not-a-token"} {
			if strings.Contains(logs, secret) {
				t.Fatalf("the logs hold the token %q", secret)
			}
		}
		if !strings.Contains(logs, "caller=propose-caller") || !strings.Contains(logs, "caller=helper") {
			t.Fatalf("the request logs do not name the callers:\n%s", logs)
		}
	})
}

// authAttempt is a request of TestAuth with the Authorization header auth, and its
// answer: the status and, on a refusal, the code and the WWW-Authenticate challenge.
type authAttempt struct {
	name, auth string
	status     int
	code       string
	challenge  string
}

// authAttempts are the requests made of a route that role's token may call, answered
// okStatus when allowed: with no token, wrong ones, another role's and role's own; a
// route open to all (role "") is called with none and a wrong one.
func authAttempts(role string, okStatus int) []authAttempt {
	var attempts []authAttempt
	if role != "" {
		attempts = append(attempts,
			authAttempt{"no token", "", 401, "unauthorized", `Bearer realm="intentd"`},
			authAttempt{"wrong token", "Bearer not-a-token", 401, "unauthorized", `Bearer realm="intentd", error="invalid_token"`},
			authAttempt{"not a bearer token", "Basic " + role, 401, "unauthorized", `Bearer realm="intentd", error="invalid_token"`},
		)
		if okStatus != 404 {
			other := readToken
			if role == readToken {
				other = submitToken
			}
			attempts = append(attempts, authAttempt{"token without the role", "Bearer " + other, 403, "forbidden", `Bearer realm="intentd", error="insufficient_scope"`})
		}
		attempts = append(attempts, authAttempt{"token with the role", "Bearer " + role, okStatus, "", ""})
	} else {
		attempts = append(attempts, authAttempt{"no token", "", okStatus, "", ""}, authAttempt{"wrong token", "Bearer nope", okStatus, "", ""})
	}
	return attempts
}

// TestTokensFile checks that a bad tokens file stops the start with a message naming it.
func TestTokensFile(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, content, want string }{
		{"empty", "# nothing\n", "no token"},
		{"a token, not its hash", "hunter2 admin\n", "line 1: the first field does not start with sha256:"},
		{"short hash", "sha256:abcd admin\n", "line 1: the hash is not 64 hex digits"},
		{"unknown role", intenthttp.HashToken("x") + " root\n", `line 1: unknown role "root"`},
		{"twice", intenthttp.HashToken("x") + " read\n" + intenthttp.HashToken("x") + " admin\n", "line 2: the hash is given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens")
			os.WriteFile(path, []byte(tt.content), 0o600)
			err := runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", t.TempDir(), "--tokens", path})
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("Run: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestListenWarning checks that listening beyond loopback without tokens is logged.
func TestListenWarning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		warn bool
	}{
		{"loopback", nil, false},
		{"every interface", []string{"--listen", "0.0.0.0:0"}, true},
		{"every interface with tokens", []string{"--listen", "0.0.0.0:0", "--tokens", writeTokens(t)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, tt.args)
			if got := strings.Contains(s.logs.String(), "no caller authentication"); got != tt.warn {
				t.Fatalf("warning logged: %v, want %v\n%s", got, tt.warn, s.logs)
			}
		})
	}
}

// TestLimits checks each limit met exactly (accepted) and exceeded by one (refused with
// the field and the limit named), and that /info reports each.
func TestLimits(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--max-attrs", "3", "--max-set", "2", "--max-string", "5", "--max-solution", "60",
		"--max-subscribers", "2", "--max-policy-source", strconv.Itoa(len(demoPolicy)), "--max-body", "700"})
	intent := func(attrs string) []byte {
		in := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{%s}}}`, uuid.NewString(), s.policy, attrs)
		return authored(t, in, s.signEd25519(in))
	}
	const base = `"size":{"String":"M"},"max_price_cents":{"Int":3000}`
	padTo := func(b []byte, n int) []byte {
		// Spaces after the JSON change nothing but its length.
		if len(b) > n {
			t.Fatalf("body of %d bytes, over %d already", len(b), n)
		}
		return append(b, strings.Repeat(" ", n-len(b))...)
	}
	solution := func(n int) []byte {
		sol := "sku:" + strings.Repeat("x", n-4)
		return []byte(`{"solution":"` + sol + `"}`)
	}
	tests := []struct {
		name        string
		path, ctype string
		body        []byte
		status      int
		code, words string
	}{
		{"attrs: 3 fields", "/intents", "application/json", intent(base + `,"colors":{"Set":{"String":["navy","white"]}}`), 200, "", ""},
		{"attrs: 4 fields", "/intents", "application/json", intent(base + `,"colors":{"Set":{"String":["navy"]}},"brands":{"Set":{"String":["a"]}}`), 422, "limit_exceeded", "intent.attrs.fields: 4 fields, over the limit of 3"},
		{"set: 2 elements", "/intents", "application/json", intent(base + `,"colors":{"Set":{"String":["navy","navy"]}}`), 200, "", ""},
		{"set: 3 elements", "/intents", "application/json", intent(base + `,"colors":{"Set":{"String":["navy","white","red"]}}`), 422, "limit_exceeded", "intent.attrs.fields.colors: a set of 3 elements, over the limit of 2"},
		{"string: 5 bytes", "/intents", "application/json", intent(`"size":{"String":"MMMMM"},"max_price_cents":{"Int":3000},"colors":{"Set":{"String":["white"]}}`), 200, "", ""},
		{"string: 6 bytes", "/intents", "application/json", intent(`"size":{"String":"MMMMMM"},"max_price_cents":{"Int":3000},"colors":{"Set":{"String":["white"]}}`), 422, "limit_exceeded", "intent.attrs.fields.size: a string of 6 bytes, over the limit of 5"},
		{"string in a set: 6 bytes", "/intents", "application/json", intent(base + `,"colors":{"Set":{"String":["whites"]}}`), 422, "limit_exceeded", "intent.attrs.fields.colors: a string of 6 bytes, over the limit of 5"},
		{"body: 700 bytes", "/intents", "application/json", padTo(intent(base+`,"colors":{"Set":{"String":["navy"]}}`), 700), 200, "", ""},
		{"body: 701 bytes", "/intents", "application/json", padTo(intent(base+`,"colors":{"Set":{"String":["navy"]}}`), 701), 413, "body_too_large", "700"},
		{"policy: at the limit", "/policies", "text/plain", []byte(demoPolicy), 200, "", ""},
		{"policy: one byte over", "/policies", "text/plain", []byte(demoPolicy + "\n"), 413, "policy_too_large", fmt.Sprintf("policy source: %d bytes, over the limit of %d", len(demoPolicy)+1, len(demoPolicy))},
		{"solution: 60 bytes", "/intents/" + s.submit() + "/proposal", "application/json", solution(60), 200, "", ""},
		{"solution: 61 bytes", "/intents/" + s.submit() + "/proposal", "application/json", solution(61), 422, "invalid_proposal", "solution: 61 bytes, over the limit of 60"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do("POST", tt.path, tt.ctype, tt.body)
			if r.status != tt.status {
				t.Fatalf("%s, want %d", r, tt.status)
			}
			if tt.code != "" {
				code, msg := r.errorBody(t)
				if code != tt.code || !strings.Contains(msg, tt.words) {
					t.Fatalf("%s, want code %s and a message saying %q", r, tt.code, tt.words)
				}
			}
		})
	}
	t.Run("subscribers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := range 2 {
			st, err := openStream(ctx, s.url, "")
			if err != nil {
				t.Fatalf("stream %d of 2: %v", i+1, err)
			}
			defer st.close()
		}
		r := s.do("GET", "/events", "", nil)
		// The transparency log holds a place of its own: the refusal names the limit
		// the operator set.
		if code, msg := r.errorBody(t); r.status != 503 || code != "too_many_subscribers" || r.header.Get("Retry-After") == "" ||
			!strings.Contains(msg, "maximum of 2 subscribers") {
			t.Fatalf("a third stream: %s, want 503 too_many_subscribers with Retry-After, naming the maximum of 2", r)
		}
	})
	t.Run("info", func(t *testing.T) {
		var info map[string]any
		json.Unmarshal(s.do("GET", "/info", "", nil).body, &info)
		want := map[string]float64{"max_attrs": 3, "max_set_elements": 2, "max_string_bytes": 5, "max_solution_bytes": 60,
			"max_subscribers": 2, "max_policy_source_bytes": float64(len(demoPolicy)), "max_body_bytes": 700}
		for k, v := range want {
			if info[k] != v {
				t.Errorf("info %s = %v, want %v", k, info[k], v)
			}
		}
		if info["auth_required"] != false {
			t.Errorf("info auth_required = %v, want false", info["auth_required"])
		}
	})
}

// TestLimitFlags checks that each limit flag refuses what cannot be enforced.
func TestLimitFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--max-solution", "0"}, {"--max-solution", "1048577"}, {"--max-solution", "2049", "--max-body", "2048"}, {"--max-attrs", "0"}, {"--max-set", "0"},
		{"--max-string", "0"}, {"--max-subscribers", "0"}, {"--max-policy-source", "65537"}, {"--shutdown-delay", "-1s"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			m := NewMain()
			m.Stderr = &syncbuf.Buffer{}
			m.LookupEnv = func(string) (string, bool) { return "", false }
			if err := m.ParseFlags(args); err == nil || !strings.Contains(err.Error(), args[0]) {
				t.Fatalf("ParseFlags(%q) = %v, want an error naming %s", args, err, args[0])
			}
		})
	}
}

// metricValue finds one series in a text exposition: its name with its labels as the
// exposition writes them (sorted by name), e.g. `x_total{a="1",b="2"}`.
func metricValue(t *testing.T, exposition, series string) (float64, bool) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(exposition))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("series %s has value %q", series, v)
			}
			return f, true
		}
	}
	return 0, false
}

// TestMetrics runs a journey (a success, a constraint failure, an extraction failure,
// a proposal refused for capacity, a stream) and reads the series it must have moved.
func TestMetrics(t *testing.T) {
	t.Parallel()
	es := newEvidenceService(t)
	s := startServer(t, []string{"--extractor-url", es.URL, "--max-proving", "1", "--proving-queue", "0"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := s.openStream(ctx, "")

	first, second := s.submit(), s.submit()
	if r := s.propose(first, solutionPasses); r.status != 200 {
		t.Fatal(r)
	}
	<-es.started
	if r := s.propose(second, solutionPasses); r.status != 503 {
		t.Fatalf("a proposal past capacity: %s", r)
	}
	scrape := func() string {
		r := s.do("GET", "/metrics", "", nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Fatalf("GET /metrics: %d %s", r.status, r.header.Get("Content-Type"))
		}
		return string(r.body)
	}
	// Counters are bumped just after the answer or the event the test waits for, so
	// each exposition is read again until it has settled.
	settled(t, scrape, map[string]float64{
		`intentd_proving_running`:                  1,
		`intentd_proving_queued`:                   0,
		`intentd_event_subscribers`:                1,
		`intentd_proposals_refused_capacity_total`: 1,
		`intentd_http_errors_total{code="capacity_exceeded",route="/intents/:id/proposal"}`: 1,
	})
	es.free()
	s.waitStatus(first, "success")
	if ev, err := st.next(); err != nil || ev.event != "success" {
		t.Fatalf("event: %+v %v", ev, err)
	}
	after := settled(t, scrape, map[string]float64{
		`intentd_proving_running`: 0,
		`intentd_http_requests_total{method="POST",route="/intents",status="200"}`:              2,
		`intentd_http_requests_total{method="POST",route="/intents/:id/proposal",status="503"}`: 1,
		`intentd_http_requests_total{method="POST",route="/policies",status="200"}`:             1,
		`intentd_http_request_duration_seconds_count{method="POST",route="/intents"}`:           2,
		`intentd_intent_transitions_total{failure_kind="",state="open"}`:                        2,
		`intentd_intent_transitions_total{failure_kind="",state="processing"}`:                  1,
		`intentd_intent_transitions_total{failure_kind="",state="success"}`:                     1,
		`intentd_extraction_duration_seconds_count{result="ok"}`:                                1,
		`intentd_proving_duration_seconds_count{failure_kind="",outcome="success"}`:             1,
		`intentd_events_published_total`:                                                        1,
		`intentd_store_write_duration_seconds_count{op="create_intent"}`:                        2,
		`intentd_store_write_duration_seconds_count{op="begin_processing"}`:                     1,
		`intentd_store_write_duration_seconds_count{op="finish"}`:                               1,
		`intentd_store_write_duration_seconds_count{op="put_policy"}`:                           1,
	})
	if _, ok := metricValue(t, after, `go_goroutines`); !ok {
		t.Error("no Go runtime metrics")
	}
	// At least one fsync per synced write of the journey, however many a group shared.
	// Pebble's own: a NATS server's syncs are its own to report.
	if n, ok := metricValue(t, after, `intentd_store_fsync_seconds_count`); testNATS == "" && (!ok || n < 1) {
		t.Errorf("intentd_store_fsync_seconds_count = %v (found: %v), want the fsyncs of the journey", n, ok)
	}
	// The NATS store's followers, none of which stood still on a healthy server.
	for _, f := range []string{"index", "events"} {
		name := `intentd_store_follower_replacements_total{follows="` + f + `"}`
		if n, ok := metricValue(t, after, name); testNATS != "" && (!ok || n != 0) {
			t.Errorf("%s = %v (found: %v), want 0", name, n, ok)
		}
	}

	// The failures: constraints and extraction.
	s2 := startServer(t, nil)
	a, b := s2.submit(), s2.submit()
	s2.propose(a, solutionBlackL)
	s2.propose(b, solutionUnknown)
	s2.waitStatus(a, "failure")
	s2.waitStatus(b, "failure")
	settled(t, func() string { return string(s2.do("GET", "/metrics", "", nil).body) }, map[string]float64{
		`intentd_intent_transitions_total{failure_kind="constraints",state="failure"}`:        1,
		`intentd_intent_transitions_total{failure_kind="extraction",state="failure"}`:         1,
		`intentd_extraction_duration_seconds_count{result="error"}`:                           1,
		`intentd_proving_duration_seconds_count{failure_kind="extraction",outcome="failure"}`: 1,
	})
}

// settled scrapes until every series has its wanted value, and fails the test with
// what differs if that takes more than 5 s. It returns the last exposition.
func settled(t *testing.T, scrape func() string, want map[string]float64) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		exp := scrape()
		var off []string
		for series, w := range want {
			if got, ok := metricValue(t, exp, series); !ok || got != w {
				off = append(off, fmt.Sprintf("%s = %v (found: %v), want %v", series, got, ok, w))
			}
		}
		if len(off) == 0 {
			return exp
		}
		if time.Now().After(deadline) {
			slices.Sort(off)
			t.Fatalf("metrics not as wanted after 5 s:\n%s", strings.Join(off, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReady checks /readyz and /healthz once serving and while draining before a
// shutdown.
func TestReady(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--shutdown-delay", "2s"})
	if r := s.do("GET", "/readyz", "", nil); r.status != 200 || string(r.body) != "ready\n" {
		t.Fatalf("GET /readyz: %s", r)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.m.Close() }()
	deadline := time.Now().Add(2 * time.Second)
	for {
		r := s.do("GET", "/readyz", "", nil)
		if r.status == 503 {
			if code, _ := r.errorBody(t); code != "shutting_down" {
				t.Fatalf("draining: %s", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz never answered 503 while draining")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := s.do("GET", "/healthz", "", nil); r.status != 200 {
		t.Fatalf("GET /healthz while draining: %s", r)
	}
	if r := s.do("GET", "/info", "", nil); r.status != 200 {
		t.Fatalf("GET /info while draining: %s", r)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// TestRequestLog checks the request log line: method, route, status, duration and the
// intent id, at info with --log-requests.
func TestRequestLog(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--log-level", "info", "--log-requests"})
	id := s.submit()
	s.propose(id, solutionPasses)
	logs := s.logs.String()
	for _, want := range []string{
		`msg=request component=http method=POST route=/intents status=200 duration=`,
		`msg=request component=http method=POST route=/intents/:id/proposal status=200 duration=`,
		`intent_id=` + id,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the logs lack %q:\n%s", want, logs)
		}
	}
	// The signature is in the body, which is never logged.
	if strings.Contains(logs, `"signature"`) || strings.Contains(logs, "Signed") {
		t.Errorf("the logs hold a signature:\n%s", logs)
	}
}

// TestRequestLogErrorsOnly checks the default: a request answered with an error is
// logged at info, one that succeeded is not.
func TestRequestLogErrorsOnly(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--log-level", "info"})
	id := s.submit()
	s.propose(id, solutionPasses)
	missing := uuid.NewString()
	if r := s.do("GET", "/intents/"+missing+"/status", "", nil); r.status != 404 {
		t.Fatalf("status of a missing intent: %s", r)
	}
	logs := s.logs.String()
	if want := `msg=request component=http method=GET route=/intents/:id/status status=404 duration=`; !strings.Contains(logs, want) {
		t.Errorf("the logs lack %q:\n%s", want, logs)
	}
	if strings.Contains(logs, "status=200") {
		t.Errorf("a request that succeeded was logged without --log-requests:\n%s", logs)
	}
}

// TestOpenAPIValidator checks that the validator under the end-to-end tests does
// catch answers the document does not allow, and that it saw the suite's answers.
func TestOpenAPIValidator(t *testing.T) {
	t.Parallel()
	before := apiCheck.validated.Load()
	s := startServer(t, nil)
	s.do("GET", "/info", "", nil)
	if apiCheck.validated.Load()-before < 2 {
		t.Fatal("the validator saw no answer")
	}
	tests := []struct {
		name, method, path string
		status             int
		ctype, body        string
		header             []string
	}{
		{"an undocumented field", "GET", "/info", 200, "application/json", `{"api_version":"0.10.0","surprise":1}`, nil},
		{"an undocumented status", "POST", "/intents", 418, "application/json", `{"message":"x","code":"internal"}`, nil},
		{"a code the status does not have", "GET", "/intents/" + uuid.NewString() + "/status", 404, "application/json", `{"message":"x","code":"capacity_exceeded"}`, nil},
		{"a status form with a missing field", "GET", "/intents/" + uuid.NewString() + "/status", 200, "application/json", `{"status":"success"}`, nil},
		{"a 503 without Retry-After", "POST", "/intents/" + uuid.NewString() + "/proposal", 503, "application/json", `{"message":"x","code":"capacity_exceeded"}`, nil},
		{"a 401 without a challenge", "GET", "/info", 401, "application/json", `{"message":"x","code":"unauthorized"}`, nil},
		{"an unknown route with a bad body", "GET", "/nowhere", 404, "application/json", `{"message":""}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://127.0.0.1:1"+tt.path, nil)
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Type", tt.ctype)
			rec.WriteHeader(tt.status)
			rec.WriteString(tt.body)
			if err := apiCheck.check(req, rec.Result()); err == nil {
				t.Fatal("the validator let it through")
			}
		})
	}
}
