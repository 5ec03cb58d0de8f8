package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// toolAnswer is the result of a tools/call at /mcp: its structured output, or the
// {code, message} of a tool error.
type toolAnswer struct {
	out   map[string]any
	code  string
	msg   string
	isErr bool
}

// callTool calls an MCP tool at /mcp with one JSON-RPC request, as an agent's host
// sends it over the streamable HTTP transport; arguments is the arguments' JSON as sent.
func (s *testServer) callTool(tool, arguments string) toolAnswer {
	s.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, arguments)
	r := s.do("POST", "/mcp", "application/json", []byte(body), "Accept", "application/json, text/event-stream")
	if r.status != http.StatusOK {
		s.t.Fatalf("POST /mcp %s: %s", tool, r)
	}
	var rpc struct {
		Result *struct {
			IsError           bool                    `json:"isError"`
			Content           []struct{ Text string } `json:"content"`
			StructuredContent map[string]any          `json:"structuredContent"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &rpc); err != nil || rpc.Result == nil {
		s.t.Fatalf("POST /mcp %s: %s (%v)", tool, r.body, err)
	}
	a := toolAnswer{out: rpc.Result.StructuredContent, isErr: rpc.Result.IsError}
	if a.isErr {
		var te struct{ Code, Message string }
		if len(rpc.Result.Content) == 1 {
			json.Unmarshal([]byte(rpc.Result.Content[0].Text), &te)
		}
		a.code, a.msg = te.Code, te.Message
	}
	return a
}

// TestMCPSolutionLimit checks that the MCP tools preview_solution and propose_solution
// at /mcp take a solution at --max-solution and refuse one byte more, as
// POST /intents/{id}/proposal does, by default and with the limit lowered or raised.
func TestMCPSolutionLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		limit int
	}{
		{"default", nil, 16 << 10},
		{"lowered", []string{"--max-solution", "100"}, 100},
		{"raised", []string{"--max-solution", "100000"}, 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.args)
			at, over := strings.Repeat("x", tc.limit), strings.Repeat("x", tc.limit+1)
			want := "solution: " + strconv.Itoa(tc.limit+1) + " bytes, over the limit of " + strconv.Itoa(tc.limit)
			for _, tool := range []string{"preview_solution", "propose_solution"} {
				t.Run(tool, func(t *testing.T) {
					id := s.submit()
					if r := s.propose(id, over); r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), want) {
						t.Fatalf("POST .../proposal one byte past the limit: %s", r)
					}
					a := s.callTool(tool, fmt.Sprintf(`{"intent_id":%q,"solution":%q}`, id, over))
					if !a.isErr || a.code != "invalid_proposal" || a.msg != want {
						t.Fatalf("%s one byte past the limit: %+v, want invalid_proposal %q", tool, a, want)
					}
					if st := s.status(id); st["status"] != "open" {
						t.Fatalf("after the refusal the intent is %v", st)
					}
					if a := s.callTool(tool, fmt.Sprintf(`{"intent_id":%q,"solution":%q}`, id, at)); a.isErr {
						t.Fatalf("%s at the limit: %s: %s", tool, a.code, a.msg)
					}
				})
			}
		})
	}
}

// mcpBatch is a JSON-RPC batch of n get_intent calls of intent at /mcp, with last in
// place of the final ones.
func mcpBatch(n int, intent string, last ...string) []byte {
	msgs := make([]string, 0, n)
	for i := range n - len(last) {
		msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_intent","arguments":{"intent_id":%q}}}`, i+1, intent))
	}
	return []byte("[" + strings.Join(append(msgs, last...), ",") + "]")
}

// TestMCPBounds checks the bounds of /mcp end to end, each answer held to the OpenAPI
// document: a batch of 64 messages is answered whole and one of 65 refused whole, none
// of its calls made, as is the request of 6,000 get_intent calls that the bound was
// made for; with --max-body 16384 an answer holds at most 64 KiB, the calls past it
// answered with the JSON-RPC error -32050 (get_requirements' answers as get_intent's),
// and a body past --max-body is the 413 of every route.
func TestMCPBounds(t *testing.T) {
	t.Parallel()
	type rpcAnswer struct {
		Result *struct{ IsError bool } `json:"result"`
		Error  *struct {
			Code    int
			Message string
		} `json:"error"`
	}
	s := startServer(t, nil)
	small := startServer(t, []string{"--max-body", "16384"})
	for _, tc := range []struct {
		name string
		s    *testServer
		n    int
		// wantCode is the code of the JSON-RPC error of a batch refused whole, 0 when
		// its calls are made.
		wantCode int
		// boundOf is the bound of the answer when some of its calls should be refused
		// for it, 0 when every call should be answered with its result.
		boundOf int
	}{
		{"at the bound", s, 64, 0, 0},
		{"past the bound", s, 65, -32600, 0},
		{"6000 calls", s, 6000, -32600, 0},
		{"past the answer's bound", small, 64, 0, 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read, target := tc.s.submit(), tc.s.submit()
			propose := fmt.Sprintf(`{"jsonrpc":"2.0","id":"propose","method":"tools/call","params":{"name":"propose_solution","arguments":{"intent_id":%q,"solution":"https://shop.example/products/tshirt-navy-m"}}}`, target)
			r := tc.s.do("POST", "/mcp", "application/json", mcpBatch(tc.n, read, propose), "Accept", "application/json, text/event-stream")
			proposed := tc.s.status(target)["status"] != "open"
			if tc.wantCode != 0 {
				var a rpcAnswer
				if err := json.Unmarshal(r.body, &a); err != nil || r.status != http.StatusBadRequest || a.Error == nil ||
					a.Error.Code != tc.wantCode || !strings.Contains(a.Error.Message, "at most 64 messages") {
					t.Fatalf("POST /mcp with %d messages: %.300s, want 400 and the JSON-RPC error %d naming the bound", tc.n, r, tc.wantCode)
				}
				if proposed {
					t.Fatal("the batch refused made its proposal")
				}
				return
			}
			var answers []rpcAnswer
			if err := json.Unmarshal(r.body, &answers); err != nil || r.status != http.StatusOK || len(answers) != tc.n {
				t.Fatalf("POST /mcp with %d messages: %.300s, want 200 and %d answers", tc.n, r, tc.n)
			}
			refused := 0
			for _, a := range answers {
				switch {
				case a.Result != nil && !a.Result.IsError:
				case tc.boundOf != 0 && a.Error != nil && a.Error.Code == -32050 && strings.Contains(a.Error.Message, strconv.Itoa(tc.boundOf)):
					refused++
				default:
					t.Fatalf("an answer of the batch: %+v %+v", a.Result, a.Error)
				}
			}
			if tc.boundOf == 0 && !proposed {
				t.Fatal("the batch answered did not make its proposal")
			}
			if tc.boundOf != 0 && (refused == 0 || len(r.body) > tc.boundOf) {
				t.Fatalf("an answer of %d bytes with %d calls refused, want some refused and at most %d bytes", len(r.body), refused, tc.boundOf)
			}
		})
	}
	t.Run("get_requirements past the answer's bound", func(t *testing.T) {
		id := small.submit()
		calls := make([]string, 64)
		for i := range calls {
			calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_requirements","arguments":{"intent_id":%q}}}`, i+1, id)
		}
		r := small.do("POST", "/mcp", "application/json", []byte("["+strings.Join(calls, ",")+"]"), "Accept", "application/json, text/event-stream")
		var answers []rpcAnswer
		if err := json.Unmarshal(r.body, &answers); err != nil || r.status != http.StatusOK || len(answers) != len(calls) {
			t.Fatalf("POST /mcp with %d get_requirements calls: %.300s", len(calls), r)
		}
		answered, refused := 0, 0
		for _, a := range answers {
			switch {
			case a.Result != nil && !a.Result.IsError:
				answered++
			case a.Error != nil && a.Error.Code == -32050:
				refused++
			default:
				t.Fatalf("an answer of the batch: %+v %+v", a.Result, a.Error)
			}
		}
		if answered == 0 || refused == 0 || len(r.body) > 64<<10 {
			t.Fatalf("%d answered, %d refused in %d bytes; want both, within 64 KiB", answered, refused, len(r.body))
		}
	})
	t.Run("body past --max-body", func(t *testing.T) {
		r := small.do("POST", "/mcp", "application/json", mcpBatch(64, strings.Repeat("x", 300)), "Accept", "application/json, text/event-stream")
		if code, msg := r.errorBody(t); r.status != http.StatusRequestEntityTooLarge || code != "body_too_large" || !strings.Contains(msg, "16384") {
			t.Fatalf("POST /mcp past --max-body: %s", r)
		}
	})
}

// TestMCPProofLog checks that get_proof at /mcp answers the bundle of
// GET /intents/{id}/proof, transparency log inclusion included, and verifies it with
// that inclusion, for an outcome of each kind.
func TestMCPProofLog(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	ids := s.decideMany(2) // the first is refused by the policy, the second passes
	s.logReader().waitCheckpoint(t, uint64(len(ids)))
	for _, tc := range []struct {
		name, id, outcome string
	}{
		{"failure", ids[0], "failure"},
		{"success", ids[1], "success"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do("GET", "/intents/"+tc.id+"/proof", "", nil)
			var want map[string]any
			if err := json.Unmarshal(r.body, &want); err != nil || r.status != http.StatusOK || want["log"] == nil {
				t.Fatalf("GET /intents/%s/proof: %s, want 200 with a log inclusion (%v)", tc.id, r, err)
			}
			a := s.callTool("get_proof", fmt.Sprintf(`{"intent_id":%q}`, tc.id))
			if a.isErr {
				t.Fatalf("get_proof: %s: %s", a.code, a.msg)
			}
			got, _ := a.out["bundle"].(map[string]any)
			if got["log"] == nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("get_proof's bundle differs from GET /intents/%s/proof:\n got %v\nwant %v", tc.id, got, want)
			}
			if a.out["verified"] != true || a.out["outcome"] != tc.outcome {
				t.Fatalf("get_proof = verified %v, outcome %v (%v), want verified %s", a.out["verified"], a.out["outcome"], a.out["verify_error"], tc.outcome)
			}
		})
	}
}

// TestMCPDelegatedIntent calls propose_solution at /mcp for an intent that delegates to
// an agent: the tools there hold no agent key, so the proposal is refused with the
// code of the proposal route, agent_signature_required, and a message that tells the
// agent how to sign (intentctl mcp --agent-key, or RFC 9421 on its own request), the
// intent left open; the agent's signed request to the route is then taken.
func TestMCPDelegatedIntent(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.policy = s.putPolicy(delegatedPolicy(t))
	agent := newAgentKey(t)
	id, intent := delegatedIntent(s.policy, agent.pub)
	if r := s.postIntent(authored(t, intent, s.signEd25519(intent))); r.status != http.StatusOK {
		t.Fatalf("POST /intents: %s", r)
	}
	args := fmt.Sprintf(`{"intent_id":%q,"solution":%q}`, id, solutionPasses)
	a := s.callTool("propose_solution", args)
	if !a.isErr || a.code != "agent_signature_required" {
		t.Fatalf("propose_solution of a delegated intent: %+v, want the tool error agent_signature_required", a)
	}
	for _, want := range []string{"intent " + id, "these tools hold no agent key", "`intentctl mcp --agent-key FILE`", "RFC 9421"} {
		if !strings.Contains(a.msg, want) {
			t.Errorf("the tool error %q does not say %q", a.msg, want)
		}
	}
	if st := s.status(id); st["status"] != "open" {
		t.Fatalf("after the refusal the intent is %v, want open", st)
	}
	now := time.Now()
	if r := s.send(id, s.signProposal(id, solutionPasses, agent, now, now.Add(time.Minute))); r.status != http.StatusOK {
		t.Fatalf("the agent's signed proposal after the tool's refusal: %s", r)
	}
	if a := s.callTool("await_outcome", fmt.Sprintf(`{"intent_id":%q,"timeout_seconds":10}`, id)); a.isErr || a.out["status"] != "success" {
		t.Fatalf("await_outcome: %+v, want success", a)
	}
}
