package http

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/proof"
)

const clientTestPolicy = `name tshirt
parameters {
  size: string
  max_price_cents: int
}
evidence {
  size: string
  price_cents: int
}
requires {
  evidence.size == parameters.size;
  evidence.price_cents <= parameters.max_price_cents;
}
`

// clientFixture is a client of the real handler over an in-memory engine that signs
// receipts, with a policy stored.
type clientFixture struct {
	c      *Client
	key    *crypto.SigningKey
	policy string
	author ed25519.PrivateKey
}

func newClientFixture(t *testing.T) *clientFixture {
	t.Helper()
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Prover = store, evidence.DefaultCatalog(), actors.ReceiptProver{Key: key}
	e, err := actors.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-e.Ready()
	ts := httptest.NewServer(NewServer(e, Options{Info: Info{PublicKey: crypto.EncodeBase58(key.PublicKey()), KeyID: key.ID()}}))
	t.Cleanup(func() { ts.Close(); e.Close(); store.Close() })
	c, err := NewClient(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	f := &clientFixture{c: c, key: key}
	if f.policy, err = c.PutPolicy(t.Context(), clientTestPolicy); err != nil {
		t.Fatal(err)
	}
	_, f.author, _ = ed25519.GenerateKey(nil)
	return f
}

// submit stores a signed intent of size M with the given budget and returns its id.
func (f *clientFixture) submit(t *testing.T, budget int) string {
	t.Helper()
	id := uuid.NewString()
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":%d}}}}`, id, f.policy, budget)
	auth, err := crypto.SignEd25519(f.author, intent)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.SubmitIntent(t.Context(), intent, auth); err != nil {
		t.Fatalf("SubmitIntent: %v", err)
	}
	return id
}

func (f *clientFixture) decided(t *testing.T, id string) *IntentStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := f.c.Status(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State.Terminal() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("intent %s is still %s", id, st.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

const navyM = "https://shop.example/products/tshirt-navy-m"

// TestClientCalls runs every call against the real handler and checks what it returns.
func TestClientCalls(t *testing.T) {
	f := newClientFixture(t)
	ctx := t.Context()

	info, err := f.c.Info(ctx)
	if err != nil || info.APIVersion != APIVersion || info.KeyID != f.key.ID() {
		t.Fatalf("Info = %+v, %v", info, err)
	}
	pub, err := f.c.PublicKey(ctx)
	if err != nil || !ed25519.PublicKey(pub).Equal(f.key.PublicKey()) {
		t.Fatalf("PublicKey = %x, %v; want the server's", pub, err)
	}
	pretty, err := f.c.Policy(ctx, f.policy)
	if err != nil || !strings.Contains(pretty, "name tshirt") {
		t.Fatalf("Policy = %q, %v", pretty, err)
	}

	id := f.submit(t, 2500)
	ai, err := f.c.Intent(ctx, id)
	if err != nil || ai.Authorship.Unsigned() || !strings.Contains(string(ai.Intent), id) {
		t.Fatalf("Intent = %+v, %v", ai, err)
	}
	if err := crypto.Verify(ai.Intent, ai.Authorship, crypto.VerifyOptions{}); err != nil {
		t.Fatalf("the intent read back does not verify: %v", err)
	}
	if st, err := f.c.Status(ctx, id); err != nil || st.State != intentd.StateOpen {
		t.Fatalf("Status = %+v, %v; want open", st, err)
	}
	if err := f.c.Propose(ctx, id, navyM); err != nil {
		t.Fatal(err)
	}
	st := f.decided(t, id)
	if st.State != intentd.StateSuccess || st.IntentID != id || st.Proposal == nil || st.Proposal.Solution != navyM || len(st.Evidence) == 0 {
		t.Fatalf("Status = %+v, want success with proposal and evidence", st)
	}
	bundle, err := f.c.Proof(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := proof.Verify(bundle, pub); err != nil || rep.IntentID != id {
		t.Fatalf("VerifyProof of the client's bundle: %+v, %v", rep, err)
	}

	// A policy no intent names any more can go; afterwards it is not found.
	other, err := f.c.PutPolicy(ctx, "name other\nrequires { true; }\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.DeletePolicy(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Policy(ctx, other); intentd.ErrorCode(err) != intentd.CodePolicyNotFound {
		t.Fatalf("Policy after delete: %v, want policy_not_found", err)
	}
}

// TestClientErrors checks that each error answer comes back with the server's status,
// code and message, and converts to the intentd.Error of the kind the status stands for.
func TestClientErrors(t *testing.T) {
	f := newClientFixture(t)
	open := f.submit(t, 2500)
	proposed := f.submit(t, 2500)
	if err := f.c.Propose(t.Context(), proposed, navyM); err != nil {
		t.Fatal(err)
	}
	unknown := uuid.NewString()
	intentJSON := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":1}}}}`, open, f.policy)
	signed, _ := crypto.SignEd25519(f.author, intentJSON)

	tests := []struct {
		name   string
		call   func(ctx context.Context) error
		status int
		code   string
		kind   intentd.Kind
	}{
		{"status of an unknown intent", func(ctx context.Context) error { _, err := f.c.Status(ctx, unknown); return err },
			404, intentd.CodeIntentNotFound, intentd.KindNotFound},
		{"intent that is not there", func(ctx context.Context) error { _, err := f.c.Intent(ctx, unknown); return err },
			404, intentd.CodeIntentNotFound, intentd.KindNotFound},
		{"a second intent of one id", func(ctx context.Context) error { return f.c.SubmitIntent(ctx, intentJSON, signed) },
			409, intentd.CodeIntentExists, intentd.KindConflict},
		{"unsigned where not permitted", func(ctx context.Context) error {
			return f.c.SubmitIntent(ctx, fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":1}}}}`, uuid.NewString(), f.policy), crypto.Authorship{})
		}, 400, intentd.CodeUnsignedNotPermitted, intentd.KindInvalid},
		{"intent that is not JSON", func(ctx context.Context) error { return f.c.SubmitIntent(ctx, []byte("{"), signed) },
			0, "", 0},
		{"a second proposal", func(ctx context.Context) error { return f.c.Propose(ctx, proposed, navyM) },
			409, intentd.CodeProposalExists, intentd.KindConflict},
		{"an empty solution", func(ctx context.Context) error { return f.c.Propose(ctx, open, "") },
			422, intentd.CodeInvalidProposal, intentd.KindUnprocessable},
		{"proof of an open intent", func(ctx context.Context) error { _, err := f.c.Proof(ctx, open); return err },
			404, intentd.CodeProofNotReady, intentd.KindNotFound},
		{"a policy that does not compile", func(ctx context.Context) error {
			_, err := f.c.PutPolicy(ctx, "name x\nrequires { 1 + ; }")
			return err
		},
			400, intentd.CodePolicyInvalid, intentd.KindInvalid},
		{"deleting a policy in use", func(ctx context.Context) error { return f.c.DeletePolicy(ctx, f.policy) },
			409, intentd.CodePolicyInUse, intentd.KindConflict},
		{"a policy that is not there", func(ctx context.Context) error {
			_, err := f.c.Policy(ctx, "11111111111111111111111111111111")
			return err
		}, 404, intentd.CodePolicyNotFound, intentd.KindNotFound},
		{"a stream filter that is not a UUID", func(ctx context.Context) error {
			_, err := f.c.Events(ctx, StreamOptions{IntentIDs: []string{"nope"}})
			return err
		}, 400, CodeInvalidFilter, intentd.KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(t.Context())
			if err == nil {
				t.Fatal("no error")
			}
			var ae *APIError
			if tt.status == 0 {
				if errors.As(err, &ae) {
					t.Fatalf("a local failure came back as a server answer: %v", err)
				}
				return
			}
			if !errors.As(err, &ae) || ae.Status != tt.status || ae.Code != tt.code || ae.Message == "" {
				t.Fatalf("err = %#v, want an *APIError %d %s with a message", err, tt.status, tt.code)
			}
			var ce *intentd.Error
			if !errors.As(err, &ce) || ce.Kind != tt.kind || ce.Code != tt.code || ce.Message != ae.Message {
				t.Fatalf("as *intentd.Error: %+v, want kind %s code %s", ce, tt.kind, tt.code)
			}
			if !strings.Contains(err.Error(), tt.code) {
				t.Fatalf("Error() = %q does not name the code", err)
			}
		})
	}
}

// TestAPIErrorFromOthers checks answers that are not the API's error object, as a
// proxy in front of the server would give, and the Retry-After of a 503.
func TestAPIErrorFromOthers(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		header      [2]string
		want        APIError
	}{
		{"proxy page", 502, "text/html", "<html>Bad gateway</html>", [2]string{}, APIError{Status: 502, Code: "http_502", Message: "<html>Bad gateway</html>"}},
		{"empty body", 401, "", "", [2]string{"WWW-Authenticate", "Bearer"}, APIError{Status: 401, Code: "http_401", Message: "Unauthorized"}},
		{"busy", 503, "application/json", `{"message":"full","code":"capacity_exceeded"}`, [2]string{"Retry-After", "2"},
			APIError{Status: 503, Code: "capacity_exceeded", Message: "full", RetryAfter: 2 * time.Second}},
		{"long page", 500, "text/plain", strings.Repeat("x", 300), [2]string{}, APIError{Status: 500, Code: "http_500", Message: strings.Repeat("x", 200) + "..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header[0] != "" {
					w.Header().Set(tt.header[0], tt.header[1])
				}
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer ts.Close()
			c, _ := NewClient(ts.URL)
			_, err := c.Info(t.Context())
			var ae *APIError
			if !errors.As(err, &ae) || *ae != tt.want {
				t.Fatalf("err = %#v, want %#v", err, tt.want)
			}
		})
	}
}

func TestNewClient(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"https://intents.example/api/", "https://intents.example/api", ""},
		{"127.0.0.1:8080", "", "http"},
		{"ftp://x", "", "http"},
		{"http://", "", "no host"},
		{"http://x/?a=b", "", "query"},
		{"http://[::1", "", "server URL"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := NewClient(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || c.BaseURL() != tt.want {
				t.Fatalf("NewClient = %v, %v; want %s", c, err, tt.want)
			}
		})
	}
}

// TestEventRead checks the stream reader on framings the standard allows.
func TestEventRead(t *testing.T) {
	tests := []struct {
		name     string
		stream   string
		want     []Event
		comments []string
		retry    time.Duration
		err      string
	}{
		{"one event", "retry: 3000\n\nid: 1\nevent: success\ndata: {\"a\":1}\n\n", []Event{{1, "success", []byte(`{"a":1}`)}}, nil, 3 * time.Second, "EOF"},
		{"CRLF and no space", "id:7\r\nevent:failure\r\ndata:{}\r\n\r\n", []Event{{7, "failure", []byte(`{}`)}}, nil, time.Second, "EOF"},
		{"data on two lines", "id: 2\ndata: a\ndata: b\n\n", []Event{{2, "message", []byte("a\nb")}}, nil, time.Second, "EOF"},
		{"comments between", ": heartbeat\n\nid: 3\nevent: expired\n: inside\ndata: {}\n\n", []Event{{3, "expired", []byte(`{}`)}}, []string{"heartbeat", "inside"}, time.Second, "EOF"},
		{"unknown field ignored", "id: 4\nfoo: bar\ndata: x\n\n", []Event{{4, "message", []byte("x")}}, nil, time.Second, "EOF"},
		{"cut mid-event", "id: 5\ndata: {", nil, nil, time.Second, "unexpected EOF"},
		{"no id", "data: {}\n\n", nil, nil, time.Second, "without an id"},
		{"bad id", "id: -1\ndata: {}\n\n", nil, nil, time.Second, "not an event id"},
		{"bad retry ignored", "retry: soon\n\nid: 1\ndata: x\n\n", []Event{{1, "message", []byte("x")}}, nil, time.Second, "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &EventStream{r: bufio.NewReader(strings.NewReader(tt.stream)), retry: time.Second}
			var got []Event
			var err error
			for {
				var ev Event
				if ev, err = s.read(); err != nil {
					break
				}
				got = append(got, ev)
			}
			if !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if !slices.EqualFunc(got, tt.want, func(a, b Event) bool { return a.ID == b.ID && a.Type == b.Type && string(a.Data) == string(b.Data) }) {
				t.Fatalf("events = %s, want %s", describeEvents(got), describeEvents(tt.want))
			}
			if c := s.Comments(); !slices.Equal(c, tt.comments) {
				t.Fatalf("comments = %q, want %q", c, tt.comments)
			}
			if s.retry != tt.retry {
				t.Fatalf("retry = %s, want %s", s.retry, tt.retry)
			}
		})
	}
}

func describeEvents(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "[%d %s %q]", ev.ID, ev.Type, ev.Data)
	}
	return b.String()
}

// flakyStream serves a stream of numbered events that drops the connection after each
// event, and records the Last-Event-ID of each connection.
type flakyStream struct {
	mu      sync.Mutex
	resumed []string
	total   uint64
}

func (fs *flakyStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	fs.resumed = append(fs.resumed, r.Header.Get("Last-Event-ID"))
	fs.mu.Unlock()
	var last uint64
	fmt.Sscan(r.Header.Get("Last-Event-ID"), &last)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "retry: 1\n\n")
	if last < fs.total {
		// One whole event, then half of the next: the reader must drop the half.
		fmt.Fprintf(w, "id: %d\nevent: success\ndata: {\"n\":%d}\n\nid: %d\ndata: {", last+1, last+1, last+2)
	}
}

// TestEventResume drops the connection after every event: Next resumes from the last
// id each time and returns each event once, in order.
func TestEventResume(t *testing.T) {
	fs := &flakyStream{total: 4}
	ts := httptest.NewServer(fs)
	defer ts.Close()
	c, _ := NewClient(ts.URL)
	var reconnects int
	s, err := c.Events(t.Context(), StreamOptions{From: 0, OnReconnect: func(error, int) { reconnects++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for want := uint64(1); want <= fs.total; want++ {
		ev, err := s.Next()
		if err != nil || ev.ID != want || string(ev.Data) != fmt.Sprintf(`{"n":%d}`, want) {
			t.Fatalf("Next = %+v, %v; want event %d", ev, err, want)
		}
	}
	fs.mu.Lock()
	resumed := fmt.Sprint(fs.resumed)
	fs.mu.Unlock()
	if resumed != "[ 1 2 3]" || reconnects != 3 {
		t.Fatalf("connections resumed from %s with %d reconnections, want [ 1 2 3] and 3", resumed, reconnects)
	}

	// The server has nothing more: a bounded stream gives up, and says after what.
	s.opts.MaxRetries = 2
	if _, err := s.Next(); err == nil || !strings.Contains(err.Error(), "gave up after 2") {
		t.Fatalf("Next past the end with MaxRetries 2: %v", err)
	}

	// The context ends a stream that would wait for ever.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	s2, err := c.Events(ctx, StreamOptions{From: fs.total})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Next(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next after the context ended: %v", err)
	}
}

// TestEventStreamLive follows the real handler: an event made after the stream opened
// arrives, decoded.
func TestEventStreamLive(t *testing.T) {
	f := newClientFixture(t)
	ok, bad := f.submit(t, 2500), f.submit(t, 100)
	s, err := f.c.Events(t.Context(), StreamOptions{IntentIDs: []string{bad}, Types: []intentd.State{intentd.StateFailure}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{ok, bad} {
		if err := f.c.Propose(t.Context(), id, navyM); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ev.Outcome()
	if err != nil || out.IntentID != bad || out.State != intentd.StateFailure || out.FailureKind != intentd.FailureConstraints ||
		len(out.Failures) != 1 || out.Proposal == nil || out.Proposal.Solution != navyM {
		t.Fatalf("event %d %s: %+v, %v; want the failure of %s", ev.ID, ev.Type, out, err, bad)
	}
	if _, err := (Event{ID: 1, Type: "success", Data: []byte(`{"type":"failure"}`)}).Outcome(); err == nil {
		t.Fatal("an event whose data contradicts its type decodes")
	}
}

// FuzzEventRead feeds the stream reader arbitrary bytes: it must return events or an
// error, never panic or loop, and every event it returns has an id.
func FuzzEventRead(f *testing.F) {
	for _, s := range []string{
		"retry: 3000\n\nid: 1\nevent: success\ndata: {}\n\n",
		"id:7\r\ndata:a\r\ndata:b\r\n\r\n",
		": c\n\n",
		"id: 5\ndata: {",
		"data\n\n",
		"id: 18446744073709551616\ndata: x\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &EventStream{r: bufio.NewReader(strings.NewReader(string(b))), retry: time.Second}
		for range len(b) + 1 {
			if _, err := s.read(); err != nil {
				return
			}
		}
		t.Fatalf("more events than bytes from %q", b)
	})
}
