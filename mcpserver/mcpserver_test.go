package mcpserver_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/mcpserver"
	"github.com/intentd/intentd/persistence"
)

// The demo catalog's candidates for the demo intent (size M, navy or blue, at most
// 30.00 with shipping): one passes, one is over budget, one is the wrong colour.
const (
	passing    = "https://shop.example/products/tshirt-navy-m"
	overBudget = "https://shop.example/products/premium-tee-navy-m"
	wrongColor = "https://shop.example/products/tshirt-black-m"
)

// The tokens of the fixture's server: one with every role, one that only reads.
const (
	agentToken  = "agent-token-with-every-role"
	readerToken = "reader-token-that-only-reads"
)

// blockingExtractor is the demo catalog, except that a solution "block:X" waits for
// release before it is looked up as X, to fill proving on demand.
type blockingExtractor struct {
	evidence.Extractor
	started chan struct{}
	release chan struct{}
}

func (b *blockingExtractor) Extract(ctx context.Context, req evidence.Request) (evidence.Evidence, error) {
	if sol, ok := strings.CutPrefix(req.Solution, "block:"); ok {
		b.started <- struct{}{}
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		req.Solution = sol
	}
	return b.Extractor.Extract(ctx, req)
}

// fixture is an engine over the demo catalog behind the real HTTP server, with tokens,
// and the demo policy stored.
type fixture struct {
	e      *actors.Engine
	ext    *blockingExtractor
	key    *crypto.SigningKey
	url    string
	api    *client.Client
	policy string
	author ed25519.PrivateKey
	skew   atomic.Int64 // added to the engine's clock
}

func newFixture(t *testing.T, tweak func(*actors.Config)) *fixture {
	t.Helper()
	f := &fixture{ext: &blockingExtractor{Extractor: evidence.DefaultCatalog(), started: make(chan struct{}, 16), release: make(chan struct{})}}
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	if f.key, err = crypto.GenerateSigningKey(); err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Prover = store, f.ext, actors.ReceiptProver{Key: f.key}
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(f.skew.Load())) }
	if tweak != nil {
		tweak(&cfg)
	}
	if f.e, err = actors.Open(cfg); err != nil {
		t.Fatal(err)
	}
	<-f.e.Ready()
	tokens, err := intenthttp.ParseTokens(strings.NewReader(
		intenthttp.HashToken(agentToken) + " admin,submit,propose,read agent\n" +
			intenthttp.HashToken(readerToken) + " read reader\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(intenthttp.NewServer(f.e, intenthttp.Options{
		Tokens: tokens,
		Info:   intentd.Info{PublicKey: crypto.EncodeBase58(f.key.PublicKey()), KeyID: f.key.ID()},
	}))
	t.Cleanup(func() {
		select {
		case <-f.ext.release:
		default:
			close(f.ext.release)
		}
		ts.Close()
		f.e.Close()
		store.Close()
	})
	f.url = ts.URL
	if f.api, err = client.NewClient(ts.URL); err != nil {
		t.Fatal(err)
	}
	f.api.Token = agentToken
	if f.policy, err = f.api.PutPolicy(t.Context(), evidence.DemoPolicy); err != nil {
		t.Fatal(err)
	}
	_, f.author, _ = ed25519.GenerateKey(nil)
	return f
}

// submit stores a signed demo intent and returns its id.
func (f *fixture) submit(t *testing.T) string {
	t.Helper()
	id := uuid.NewString()
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},`+
		`"colors":{"Set":{"String":["navy","blue"]}},"max_price_cents":{"Int":3000}}}}`, id, f.policy)
	auth, err := crypto.SignEd25519(f.author, intent)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.api.SubmitIntent(t.Context(), intent, auth); err != nil {
		t.Fatalf("SubmitIntent: %v", err)
	}
	return id
}

// inProcess connects the SDK's client to the tools over the engine, in memory.
func (f *fixture) inProcess(t *testing.T) *mcp.ClientSession {
	t.Helper()
	srv := mcpserver.New(mcpserver.Local(f.e, f.key.PublicKey()), mcpserver.Options{})
	return connect(t, srv, mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil))
}

// remote connects the SDK's client to the tools over the fixture's HTTP API, as
// intentctl mcp serves them.
func (f *fixture) remote(t *testing.T) *mcp.ClientSession {
	t.Helper()
	srv := mcpserver.New(mcpserver.Remote(f.api), mcpserver.Options{})
	return connect(t, srv, mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil))
}

func connect(t *testing.T, srv *mcpserver.Server, c *mcp.Client) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// overHTTP connects the SDK's client to intentd's own /mcp endpoint with a token.
func (f *fixture) overHTTP(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: f.url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// call calls a tool and returns its structured output, or its error's code. args is
// anything the client marshals: a map, or a json.RawMessage sent as it is written.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) (map[string]any, *mcpserver.ToolError) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var te mcpserver.ToolError
		text := res.Content[0].(*mcp.TextContent).Text
		if err := json.Unmarshal([]byte(text), &te); err != nil || te.Code == "" {
			t.Fatalf("%s: a tool error that is not {code, message}: %s", tool, text)
		}
		return nil, &te
	}
	out, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s: structured output %s: %v", tool, out, err)
	}
	return m, nil
}

func mustCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	out, te := call(t, cs, tool, args)
	if te != nil {
		t.Fatalf("%s: %s: %s", tool, te.Code, te.Message)
	}
	return out
}

func wantRefusal(t *testing.T, cs *mcp.ClientSession, tool string, args any, code string) *mcpserver.ToolError {
	t.Helper()
	out, te := call(t, cs, tool, args)
	if te == nil || te.Code != code {
		t.Fatalf("%s: %v, %+v; want a tool error of code %s", tool, out, te, code)
	}
	return te
}

// TestTools lists the tools and checks that each has schemas and a description.
func TestTools(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.inProcess(t)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil || len(tool.Description) < 80 {
			t.Errorf("tool %s: input schema %v, output schema %v, description %q", tool.Name, tool.InputSchema != nil, tool.OutputSchema != nil, tool.Description)
		}
	}
	slices.Sort(names)
	if want := []string{"await_outcome", "get_intent", "get_mandate", "get_proof", "get_requirements", "preview_solution", "propose_solution", "purchase"}; !slices.Equal(names, want) {
		t.Fatalf("tools %q, want %q", names, want)
	}
	for _, tool := range res.Tools {
		if tool.Name == "propose_solution" && !strings.Contains(tool.Description, "ONCE") {
			t.Errorf("propose_solution's description does not warn that it is made once: %q", tool.Description)
		}
		if tool.Name == "purchase" && !strings.Contains(tool.Description, "WARNING") {
			t.Errorf("purchase's description does not warn that it is final: %q", tool.Description)
		}
		if tool.Name == "get_mandate" && !strings.Contains(tool.Description, "ONLY for an int parameter named exactly budget_cents") {
			t.Errorf("get_mandate's description does not say which parameter remaining_cents is computed for: %q", tool.Description)
		}
	}
}

// TestGetIntent checks what get_intent tells an agent.
func TestGetIntent(t *testing.T) {
	f := newFixture(t, nil)
	id := f.submit(t)
	out := mustCall(t, f.inProcess(t), "get_intent", map[string]any{"intent_id": id})
	attrs, _ := out["attrs"].(map[string]any)
	if out["status"] != "open" || out["policy_id"] != f.policy || out["policy_name"] != "tshirt_purchase_v1" ||
		attrs["size"] != "M" || attrs["max_price_cents"] != 3000.0 || fmt.Sprint(attrs["colors"]) != "[navy blue]" {
		t.Fatalf("get_intent = %v", out)
	}
	if !strings.Contains(out["policy"].(string), "evidence.price_cents + evidence.shipping_cents <= parameters.max_price_cents") {
		t.Fatalf("get_intent's policy text = %q", out["policy"])
	}
	if ev := fmt.Sprint(out["evidence"]); !strings.Contains(ev, "map[name:shipping_cents type:int]") {
		t.Fatalf("get_intent's evidence fields = %s", ev)
	}
	deadline, err := time.Parse(time.RFC3339, fmt.Sprint(out["deadline"]))
	if err != nil || deadline.Before(time.Now().Add(23*time.Hour)) {
		t.Fatalf("get_intent's deadline = %v (%v)", out["deadline"], err)
	}
}

// TestRefusals checks each refusal of the tools: unknown intent, second proposal,
// expired intent, capacity full, the preview limit and a token without the role.
func TestRefusals(t *testing.T) {
	f := newFixture(t, func(c *actors.Config) { c.MaxPreviewing = 1; c.MaxPreviewsPerIntent = 2 })
	cs := f.inProcess(t)
	unknown := map[string]any{"intent_id": uuid.NewString()}
	for _, tool := range []string{"get_intent", "await_outcome", "get_proof"} {
		wantRefusal(t, cs, tool, unknown, intentd.CodeIntentNotFound)
	}
	for _, tool := range []string{"preview_solution", "propose_solution"} {
		wantRefusal(t, cs, tool, map[string]any{"intent_id": uuid.NewString(), "solution": passing}, intentd.CodeIntentNotFound)
	}
	wantRefusal(t, cs, "get_intent", map[string]any{"intent_id": "not-an-id"}, intentd.CodeIntentNotFound)
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "preview_solution", Arguments: map[string]any{"intent_id": uuid.NewString()}}); err == nil && !res.IsError {
		t.Fatal("preview_solution without a solution was not refused")
	}

	id := f.submit(t)
	args := map[string]any{"intent_id": id, "solution": passing}
	wantRefusal(t, cs, "get_proof", map[string]any{"intent_id": id}, intentd.CodeProofNotReady)

	// Capacity: the one preview place is taken by a preview that waits.
	busy := f.submit(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.e.Preview(context.Background(), busy, intentd.Proposal{Solution: "block:" + passing})
	}()
	<-f.ext.started
	te := wantRefusal(t, cs, "preview_solution", args, intentd.CodeCapacityExceeded)
	if te.RetryAfterSeconds != 1 {
		t.Fatalf("capacity_exceeded without retry_after_seconds: %+v", te)
	}
	close(f.ext.release)
	<-done

	// The preview limit.
	for range 2 {
		mustCall(t, cs, "preview_solution", args)
	}
	wantRefusal(t, cs, "preview_solution", args, intentd.CodePreviewLimit)

	// A token without the propose role may read but not preview or propose.
	reader := f.overHTTP(t, readerToken)
	mustCall(t, reader, "get_intent", map[string]any{"intent_id": id})
	wantRefusal(t, reader, "preview_solution", args, "forbidden")
	wantRefusal(t, reader, "propose_solution", args, "forbidden")

	// The second proposal.
	mustCall(t, cs, "propose_solution", args)
	wantRefusal(t, cs, "propose_solution", map[string]any{"intent_id": id, "solution": overBudget}, intentd.CodeProposalExists)
	wantRefusal(t, cs, "preview_solution", args, intentd.CodeProposalExists)

	// An expired intent.
	old := f.submit(t)
	f.skew.Store(int64(25 * time.Hour))
	wantRefusal(t, cs, "preview_solution", map[string]any{"intent_id": old, "solution": passing}, intentd.CodeIntentExpired)
	wantRefusal(t, cs, "propose_solution", map[string]any{"intent_id": old, "solution": passing}, intentd.CodeIntentExpired)
	out := mustCall(t, cs, "await_outcome", map[string]any{"intent_id": old, "timeout_seconds": 1})
	if out["status"] != "expired" || out["decided"] != true {
		t.Fatalf("await_outcome of an expired intent = %v", out)
	}
	wantRefusal(t, cs, "get_proof", map[string]any{"intent_id": old}, intentd.CodeNoProof)

	// Without a token, the endpoint itself refuses.
	resp, err := http.Post(f.url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST /mcp without a token: %d, want 401", resp.StatusCode)
	}
}

// TestAwaitBounded checks that a wait that ends before the decision says so.
func TestAwaitBounded(t *testing.T) {
	f := newFixture(t, nil)
	id := f.submit(t)
	if err := f.api.Propose(t.Context(), id, "block:"+passing); err != nil {
		t.Fatal(err)
	}
	<-f.ext.started
	out := mustCall(t, f.inProcess(t), "await_outcome", map[string]any{"intent_id": id, "timeout_seconds": 1})
	if out["decided"] != false || out["status"] != "processing" {
		t.Fatalf("await_outcome cut short = %v", out)
	}
}

// TestFlow is an agent's whole flow, over each way in: previews of three demo-catalog
// candidates, one proposal of the one that passes, its outcome awaited, its proof
// verified.
func TestFlow(t *testing.T) {
	f := newFixture(t, nil)
	for _, way := range []struct {
		name    string
		connect func(*testing.T) *mcp.ClientSession
	}{
		{"in-process", f.inProcess},
		{"remote", f.remote},
		{"http", func(t *testing.T) *mcp.ClientSession { return f.overHTTP(t, agentToken) }},
	} {
		t.Run(way.name, func(t *testing.T) {
			id := f.submit(t)
			cs := way.connect(t)
			before, err := f.api.Status(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			passes := ""
			for _, candidate := range []string{overBudget, wrongColor, passing} {
				out := mustCall(t, cs, "preview_solution", map[string]any{"intent_id": id, "solution": candidate})
				if out["proof"] != false || !strings.Contains(fmt.Sprint(out["note"]), "not a proof") {
					t.Fatalf("a preview that does not say it is no proof: %v", out)
				}
				if out["status"] == "success" {
					passes = candidate
					continue
				}
				failed, _ := out["failed_constraints"].([]any)
				if out["failure_kind"] != "constraints" || len(failed) == 0 {
					t.Fatalf("preview of %s = %v", candidate, out)
				}
			}
			if passes != passing {
				t.Fatalf("the previews found %q passing, want %s", passes, passing)
			}
			if after, _ := f.api.Status(t.Context(), id); after.State != before.State || after.State != intentd.StateOpen {
				t.Fatalf("after the previews the intent is %s", after.State)
			}
			out := mustCall(t, cs, "propose_solution", map[string]any{"intent_id": id, "solution": passes})
			if out["status"] != "processing" {
				t.Fatalf("propose_solution = %v", out)
			}
			out = mustCall(t, cs, "await_outcome", map[string]any{"intent_id": id, "timeout_seconds": 10})
			if out["status"] != "success" || out["decided"] != true || out["solution"] != passing {
				t.Fatalf("await_outcome = %v", out)
			}
			out = mustCall(t, cs, "get_proof", map[string]any{"intent_id": id})
			if out["verified"] != true || out["outcome"] != "success" || out["key_id"] != f.key.ID() {
				t.Fatalf("get_proof = %v", out)
			}
		})
	}
}

// TestSolutionLimit checks that preview_solution and propose_solution take a solution
// at the engine's limit and refuse one byte more as POST /intents/{id}/proposal does,
// with the limit named, whatever the limit is set to.
func TestSolutionLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		tweak func(*actors.Config)
	}{
		{"default", intentd.DefaultSolutionBytes, nil},
		{"lowered", 100, func(c *actors.Config) { c.MaxSolutionBytes = 100 }},
		{"raised", 100_000, func(c *actors.Config) { c.MaxSolutionBytes = 100_000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.tweak)
			cs := f.inProcess(t)
			at, over := strings.Repeat("x", tc.limit), strings.Repeat("x", tc.limit+1)
			want := fmt.Sprintf("solution: %d bytes, over the limit of %d", tc.limit+1, tc.limit)
			for _, tool := range []string{"preview_solution", "propose_solution"} {
				t.Run(tool, func(t *testing.T) {
					id := f.submit(t)
					te := wantRefusal(t, cs, tool, map[string]any{"intent_id": id, "solution": over}, intentd.CodeInvalidProposal)
					if te.Message != want {
						t.Fatalf("%s one byte past the limit: %q, want %q", tool, te.Message, want)
					}
					if st, err := f.api.Status(t.Context(), id); err != nil || st.State != intentd.StateOpen || st.Proposal != nil {
						t.Fatalf("after the refusal the intent is %+v (%v), want open without a proposal", st, err)
					}
					mustCall(t, cs, tool, map[string]any{"intent_id": id, "solution": at})
				})
			}
		})
	}
}

// TestAwaitTimeout checks that await_outcome holds timeout_seconds, whatever integer it
// is, to 1 s and the server's longest wait before it waits, so that no value overflows
// into a wait that ends at once, and that the answer of a wait that ended first names
// the intent.
func TestAwaitTimeout(t *testing.T) {
	f := newFixture(t, nil)
	const most = 2 * time.Second
	srv := mcpserver.New(mcpserver.Local(f.e, f.key.PublicKey()), mcpserver.Options{MaxWait: most})
	cs := connect(t, srv, mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil))
	id := f.submit(t)
	if err := f.api.Propose(t.Context(), id, "block:"+passing); err != nil {
		t.Fatal(err)
	}
	<-f.ext.started
	for _, tc := range []struct {
		name    string
		timeout string // the JSON of timeout_seconds; "" leaves it out
		want    time.Duration
	}{
		{"absent", "", most},
		{"one", "1", time.Second},
		{"zero", "0", time.Second},
		{"negative", "-1", time.Second},
		{"least int64", "-9223372036854775808", time.Second},
		{"below int64", "-99999999999999999999", time.Second},
		{"past the longest", "61", most},
		{"ten digits", "9999999999", most},
		{"most int64", "9223372036854775807", most},
		{"past int64", "99999999999999999999", most},
		{"exponent", "1e30", most},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := fmt.Sprintf(`{"intent_id":%q}`, id)
			if tc.timeout != "" {
				args = fmt.Sprintf(`{"intent_id":%q,"timeout_seconds":%s}`, id, tc.timeout)
			}
			start := time.Now()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "await_outcome", Arguments: json.RawMessage(args)})
			took := time.Since(start)
			if err != nil || res.IsError {
				t.Fatalf("await_outcome %s: %v %+v", args, err, res)
			}
			out := res.StructuredContent.(map[string]any)
			wantText := fmt.Sprintf("Not decided within %s:", tc.want)
			if out["decided"] != false || out["status"] != "processing" || out["intent_id"] != id ||
				!strings.HasPrefix(fmt.Sprint(out["explanation"]), wantText) {
				t.Fatalf("await_outcome %s = %v, want undecided, intent_id %s and %q", args, out, id, wantText)
			}
			if took < tc.want || took > tc.want+5*time.Second {
				t.Fatalf("await_outcome %s answered after %s, want %s", args, took, tc.want)
			}
		})
	}
}

// TestDuplicateArguments checks that a tool refuses arguments that name a member twice,
// as the HTTP API refuses such a body, naming the member, over each way in, and that a
// proposal so refused is not made.
func TestDuplicateArguments(t *testing.T) {
	f := newFixture(t, nil)
	for _, way := range []struct {
		name    string
		connect func(*testing.T) *mcp.ClientSession
	}{
		{"in-process", f.inProcess},
		{"http", func(t *testing.T) *mcp.ClientSession { return f.overHTTP(t, agentToken) }},
	} {
		t.Run(way.name, func(t *testing.T) {
			cs := way.connect(t)
			id, other := f.submit(t), f.submit(t)
			for _, tc := range []struct {
				tool, args, member string
			}{
				{"get_intent", `{"intent_id":%[1]q,"intent_id":%[2]q}`, "intent_id"},
				{"get_proof", `{"intent_id":%[1]q,"intent_id":%[1]q}`, "intent_id"},
				{"await_outcome", `{"intent_id":%[1]q,"timeout_seconds":1,"timeout_seconds":2}`, "timeout_seconds"},
				{"preview_solution", `{"intent_id":%[1]q,"solution":"` + wrongColor + `","solution":"` + passing + `"}`, "solution"},
				{"propose_solution", `{"intent_id":%[2]q,"solution":"` + passing + `","intent_id":%[1]q}`, "intent_id"},
				{"propose_solution", `{"solution":"` + wrongColor + `","intent_id":%[1]q,"solution":"` + passing + `"}`, "solution"},
			} {
				t.Run(tc.tool+"/"+tc.member, func(t *testing.T) {
					args := json.RawMessage(fmt.Sprintf(tc.args, id, other))
					te := wantRefusal(t, cs, tc.tool, args, "invalid_arguments")
					if want := tc.member + ": duplicate key"; te.Message != want {
						t.Fatalf("%s %s: %q, want %q", tc.tool, args, te.Message, want)
					}
				})
			}
			for _, intent := range []string{id, other} {
				if st, err := f.api.Status(t.Context(), intent); err != nil || st.State != intentd.StateOpen {
					t.Fatalf("after the refusals intent %s is %+v (%v), want open", intent, st, err)
				}
			}
		})
	}
}

// TestUnknownTool checks that a call of a tool the server does not have is answered
// with the JSON-RPC error -32602 (invalid params) naming the tool, as the MCP spec has
// it, not with a tool error: at /mcp, under each protocol version a client may name
// (the SDK's client names the newest) and whatever roles its token has.
func TestUnknownTool(t *testing.T) {
	f := newFixture(t, nil)
	const want = `unknown tool "frobnicate"`
	for _, tc := range []struct {
		name, token, version string
	}{
		{"no version", agentToken, ""},
		{"2025-03-26", agentToken, "2025-03-26"},
		{"2025-06-18", agentToken, "2025-06-18"},
		{"2025-11-25", agentToken, "2025-11-25"},
		{"a token that only reads", readerToken, "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var header []string
			if tc.version != "" {
				header = []string{"MCP-Protocol-Version", tc.version}
			}
			status, body := postRPC(t, f.url+"/mcp", tc.token, []byte(toolCall(7, "frobnicate", `{"intent_id":"x"}`)), header...)
			var a rpcAnswer
			if err := json.Unmarshal(body, &a); err != nil || status != http.StatusOK || string(a.ID) != "7" || a.Result != nil ||
				a.Error == nil || a.Error.Code != jsonrpc.CodeInvalidParams || a.Error.Message != want {
				t.Fatalf("answer %d %s (%v), want 200 and the JSON-RPC error %d %q of id 7", status, body, err, jsonrpc.CodeInvalidParams, want)
			}
		})
	}
	t.Run("the SDK's client", func(t *testing.T) {
		res, err := f.overHTTP(t, agentToken).CallTool(t.Context(), &mcp.CallToolParams{Name: "frobnicate", Arguments: map[string]any{}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || rpcErr.Message != want {
			t.Fatalf("CallTool = %+v, %v; want the JSON-RPC error %d %q", res, err, jsonrpc.CodeInvalidParams, want)
		}
	})
}
