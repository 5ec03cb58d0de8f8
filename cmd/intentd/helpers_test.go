package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/internal/syncbuf"
)

// demoPolicy is the policy the demo catalog is written for, the t-shirt purchase of
// docs/policy-language.md.
var demoPolicy = evidence.DemoPolicy

// Solutions of the demo catalog and what the demo policy makes of them for an intent of
// size M, colours {navy, white} and a budget of 3000.
const (
	solutionPasses     = "https://shop.example/products/tshirt-navy-m"
	solutionOutOfStock = "https://shop.example/products/tshirt-white-m" // fails constraint 5
	solutionBlackL     = "sku:PO-BLACK-L"                               // fails constraints 1, 2 and 3
	solutionUnknown    = "https://shop.example/products/no-such-thing"  // not in the catalog
)

// testServer is a whole intentd started through Main on a free port.
type testServer struct {
	t      *testing.T
	m      *Main
	url    string
	key    ed25519.PrivateKey
	policy string
	logs   *syncbuf.Buffer
	// token is sent by do unless a request names its own Authorization; set when the
	// server has --tokens, to helperToken.
	token string
	// client sends do's requests and opens openStream's streams; http.DefaultClient
	// when nil. A server with TLS needs one that trusts its CA.
	client *http.Client
}

// serverSetup adjusts a Main before Run.
type serverSetup func(m *Main)

// startServer runs intentd with the given flags after --listen 127.0.0.1:0 and a fresh
// data folder, with the demo policy stored.
func startServer(t *testing.T, args []string, setups ...serverSetup) *testServer {
	t.Helper()
	return startServerIn(t, t.TempDir(), args, setups...)
}

func startServerIn(t *testing.T, dir string, args []string, setups ...serverSetup) *testServer {
	t.Helper()
	return startServerClient(t, dir, nil, args, setups...)
}

// startServerClient is startServerIn with the client the test talks to the server
// through (nil: http.DefaultClient).
func startServerClient(t *testing.T, dir string, client *http.Client, args []string, setups ...serverSetup) *testServer {
	t.Helper()
	logs := &syncbuf.Buffer{}
	m := NewMain()
	m.Stderr = logs
	m.LookupEnv = func(string) (string, bool) { return "", false }
	all := append([]string{"--listen", "127.0.0.1:0", "--data", dir, "--log-level", "debug"}, storeArgs(dir, args)...)
	all = append(all, args...)
	if err := m.ParseFlags(all); err != nil {
		t.Fatalf("ParseFlags(%q): %v", all, err)
	}
	for _, setup := range setups {
		setup(m)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatalf("Run: %v\n%s", err, logs)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	s := &testServer{t: t, m: m, url: m.URL(), key: key, logs: logs, client: client}
	apiCheck.watch(t, s.url)
	if m.Config.API.Tokens != "" {
		s.token = helperToken
	}
	t.Cleanup(func() {
		// A connection the client's pool dialled but never used is new to the server,
		// and a shutdown waits up to 5s for its first request.
		http.DefaultClient.CloseIdleConnections()
		if client != nil {
			client.CloseIdleConnections()
		}
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", logs)
		}
	})
	s.policy = s.putPolicy(demoPolicy)
	return s
}

// eventIDs reads the first n retained events on a stream of their own and returns
// their ids. Pebble numbers events from 1 with no gap and NATS skips numbers, so a test
// names an event by its place in the log and takes its id from here.
func (s *testServer) eventIDs(n int) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := s.openStream(ctx, "")
	defer st.close()
	ids := make([]string, n)
	for i := range ids {
		ev, err := st.next()
		if err != nil {
			s.t.Fatalf("event %d of the log: %v", i+1, err)
		}
		ids[i] = ev.id
	}
	return ids
}

// runRefused runs intentd with args (no environment) and returns the error its start
// ends with, for the tests of what it refuses to start on.
func runRefused(t *testing.T, args []string) error {
	t.Helper()
	m := NewMain()
	m.Stderr = &syncbuf.Buffer{}
	m.LookupEnv = func(string) (string, bool) { return "", false }
	if i := slices.Index(args, "--data"); i >= 0 && i+1 < len(args) {
		args = append(storeArgs(args[i+1], args), args...)
	}
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	err := m.Run(t.Context())
	m.Close()
	return err
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// errorBody decodes an error answer, failing the test unless it is exactly
// {"message", "code"} as JSON.
func (r response) errorBody(t *testing.T) (code, message string) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type = %q, want application/json (%s)", ct, r)
	}
	var e map[string]string
	dec := json.NewDecoder(bytes.NewReader(r.body))
	if err := dec.Decode(&e); err != nil || len(e) != 2 || e["message"] == "" || e["code"] == "" {
		t.Fatalf("error body %s is not {\"message\", \"code\"}: %v", r.body, err)
	}
	return e["code"], e["message"]
}

func (s *testServer) do(method, path, contentType string, body []byte, header ...string) response {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i]) // an empty value sends none
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// httpClient is the client the test talks to the server through.
func (s *testServer) httpClient() *http.Client {
	if s.client != nil {
		return s.client
	}
	return http.DefaultClient
}

func (s *testServer) putPolicy(source string) string {
	s.t.Helper()
	r := s.do("POST", "/policies", "text/plain; charset=utf-8", []byte(source))
	if r.status != http.StatusOK {
		s.t.Fatalf("POST /policies: %s", r)
	}
	var id string
	if err := json.Unmarshal(r.body, &id); err != nil || !intentd.ValidPolicyID(id) {
		s.t.Fatalf("POST /policies answered %s, want a JSON string holding a policy id (%v)", r.body, err)
	}
	return id
}

// intentJSON is an intent for the demo policy: size M, colours navy and white, a
// budget of 3000.
func (s *testServer) intentJSON(id string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}}}}`,
		id, s.policy)
}

// authored is the body of POST /intents.
func authored(t *testing.T, intent []byte, auth crypto.Authorship) []byte {
	t.Helper()
	a, err := json.Marshal(auth)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Appendf(nil, `{"intent":%s,"authorship":%s}`, intent, a)
}

func (s *testServer) signEd25519(intent []byte) crypto.Authorship {
	s.t.Helper()
	auth, err := crypto.SignEd25519(s.key, intent)
	if err != nil {
		s.t.Fatal(err)
	}
	return auth
}

func (s *testServer) postIntent(body []byte) response {
	s.t.Helper()
	return s.do("POST", "/intents", "application/json", body)
}

// submit stores a new Ed25519-signed intent and returns its id.
func (s *testServer) submit() string {
	s.t.Helper()
	id := uuid.NewString()
	intent := s.intentJSON(id)
	if r := s.postIntent(authored(s.t, intent, s.signEd25519(intent))); r.status != http.StatusOK || len(r.body) != 0 {
		s.t.Fatalf("POST /intents: %s, want 200 with no body", r)
	}
	return id
}

func (s *testServer) propose(id, solution string) response {
	s.t.Helper()
	body, _ := json.Marshal(map[string]string{"solution": solution})
	return s.do("POST", "/intents/"+id+"/proposal", "application/json", body)
}

// status is an IntentStatus as a generic object, so that tests see exactly the fields
// sent.
type status map[string]any

func (s *testServer) status(id string) status {
	s.t.Helper()
	r := s.do("GET", "/intents/"+id+"/status", "", nil)
	if r.status != http.StatusOK {
		s.t.Fatalf("GET status: %s", r)
	}
	var st status
	if err := json.Unmarshal(r.body, &st); err != nil {
		s.t.Fatalf("status %s: %v", r.body, err)
	}
	return st
}

// waitStatus polls until the intent's status is want.
func (s *testServer) waitStatus(id, want string) status {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.status(id)
		if st["status"] == want {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("intent %s is %v, want %s", id, st, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sseEvent is one dispatched SSE event.
type sseEvent struct {
	id, event, data string
	dataLines       int
}

// sseStream reads a text/event-stream by the rules of the HTML standard's event
// stream interpretation, keeping comments and retry for the tests that check them.
type sseStream struct {
	resp     *http.Response
	r        *bufio.Reader
	comments []string
	retry    string
}

// openStream starts GET /events with the given query and headers; it fails the test
// unless the answer is a 200 event stream.
func (s *testServer) openStream(ctx context.Context, query string, header ...string) *sseStream {
	s.t.Helper()
	st, err := openStreamWith(ctx, s.httpClient(), s.url, query, header...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { st.resp.Body.Close() })
	return st
}

func openStream(ctx context.Context, base, query string, header ...string) (*sseStream, error) {
	return openStreamWith(ctx, http.DefaultClient, base, query, header...)
}

// openStreamWith is openStream through the client hc.
func openStreamWith(ctx context.Context, hc *http.Client, base, query string, header ...string) (*sseStream, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/events"+query, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("GET /events%s: %d %s %s", query, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return &sseStream{resp: resp, r: bufio.NewReader(resp.Body)}, nil
}

// next returns the next event; comments and retry fields are recorded on the way.
// It returns io.EOF when the server ends the stream cleanly between events.
func (st *sseStream) next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	started := false
	for {
		line, err := st.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && (started || line != "") {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if data != nil {
				ev.data, ev.dataLines = strings.Join(data, "\n"), len(data)
				return ev, nil
			}
			ev, started = sseEvent{}, false
			continue
		}
		started = true
		if c, ok := strings.CutPrefix(line, ":"); ok {
			st.comments = append(st.comments, strings.TrimPrefix(c, " "))
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id = value
		case "event":
			ev.event = value
		case "data":
			data = append(data, value)
		case "retry":
			st.retry = value
		default:
			return ev, fmt.Errorf("unknown SSE field in line %q", line)
		}
	}
}

func (st *sseStream) close() { st.resp.Body.Close() }

// outcomeEvent is the data of an event: the OrchestratorEvent.
type outcomeEvent struct {
	Type     string `json:"type"`
	IntentID string `json:"intent_id"`
}

func decodeOutcome(t *testing.T, ev sseEvent) outcomeEvent {
	t.Helper()
	var o outcomeEvent
	if err := json.Unmarshal([]byte(ev.data), &o); err != nil {
		t.Fatalf("event data %q: %v", ev.data, err)
	}
	if o.Type != ev.event {
		t.Fatalf("event %s has event: %s but data type %s", ev.id, ev.event, o.Type)
	}
	return o
}
