package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
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
