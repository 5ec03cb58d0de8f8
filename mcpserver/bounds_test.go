package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/mcpserver"
)

// rpcAnswer is one JSON-RPC answer as /mcp sends it.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// postRPC posts body to url as an MCP client of the streamable HTTP transport does,
// with a token when one is given and the headers given, and returns the status and the
// body of the answer.
func postRPC(t *testing.T, url, token string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// toolCall is the JSON-RPC message of a call of tool with the arguments' JSON.
func toolCall(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// batchOf is the batch of the messages given, and n-len(last) calls of get_intent of
// intent before them.
func batchOf(n int, intent string, last ...string) []byte {
	msgs := make([]string, 0, n)
	for i := range n - len(last) {
		msgs = append(msgs, toolCall(i+1, "get_intent", fmt.Sprintf(`{"intent_id":%q}`, intent)))
	}
	return []byte("[" + strings.Join(append(msgs, last...), ",") + "]")
}

// wantRPCError checks that an answer is the one JSON-RPC error of code, with a null id
// and a message holding each of want.
func wantRPCError(t *testing.T, status int, body []byte, wantStatus, code int, want ...string) {
	t.Helper()
	var a rpcAnswer
	if err := json.Unmarshal(body, &a); err != nil || status != wantStatus || a.Error == nil || a.Error.Code != code || string(a.ID) != "null" {
		t.Fatalf("answer %d %.300s (%v), want %d and a JSON-RPC error of code %d with a null id", status, body, err, wantStatus, code)
	}
	for _, w := range want {
		if !strings.Contains(a.Error.Message, w) {
			t.Fatalf("error message %q does not say %q", a.Error.Message, w)
		}
	}
}

// TestBatchBound checks that /mcp makes the calls of a batch of MaxBatchMessages and
// refuses one of a message more whole, with a JSON-RPC error that names the bound and
// before any of its calls is made, whatever protocol version the request names; and
// that a batch the bound's reader cannot read is refused as not JSON rather than
// passed on uncounted.
func TestBatchBound(t *testing.T) {
	f := newFixture(t, nil)
	read := f.submit(t)
	bound := fmt.Sprint(mcpserver.MaxBatchMessages)
	for _, tc := range []struct {
		name   string
		n      int
		token  string
		header []string
		// invalid puts invalid UTF-8 in the first message.
		invalid bool
		// wantCode is the JSON-RPC error of the refusal; 0 for a batch whose calls are made.
		wantCode int
		want     string
	}{
		{name: "at the bound", n: mcpserver.MaxBatchMessages, token: agentToken},
		{name: "past the bound", n: mcpserver.MaxBatchMessages + 1, token: agentToken, wantCode: -32600, want: bound},
		{name: "past the bound, protocol 2025-03-26", n: mcpserver.MaxBatchMessages + 1, token: agentToken,
			header: []string{"MCP-Protocol-Version", "2025-03-26"}, wantCode: -32600, want: bound},
		{name: "past the bound, protocol 2025-11-25", n: mcpserver.MaxBatchMessages + 1, token: agentToken,
			header: []string{"MCP-Protocol-Version", "2025-11-25"}, wantCode: -32600, want: bound},
		// The request of the attack: 6,000 get_intent calls with a token that reads.
		{name: "6000 calls", n: 6000, token: readerToken, wantCode: -32600, want: bound},
		{name: "not JSON", n: 2, token: agentToken, invalid: true, wantCode: -32700, want: "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The last call proposes to an intent of its own, to tell whether the
			// batch's calls were made.
			target := f.submit(t)
			propose := toolCall(tc.n, "propose_solution", fmt.Sprintf(`{"intent_id":%q,"solution":%q}`, target, passing))
			body := batchOf(tc.n, read, propose)
			if tc.token == readerToken {
				body = batchOf(tc.n, read)
			}
			if tc.invalid {
				body = bytes.Replace(body, []byte(read), []byte(read[:35]+"\xff"), 1)
			}
			status, answer := postRPC(t, f.url+"/mcp", tc.token, body, tc.header...)
			st, err := f.api.Status(t.Context(), target)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantCode != 0 {
				wantRPCError(t, status, answer, http.StatusBadRequest, tc.wantCode, tc.want)
				if st.State != intentd.StateOpen || st.Proposal != nil {
					t.Fatalf("after the refusal the intent is %s with proposal %+v, want open without one", st.State, st.Proposal)
				}
				return
			}
			var answers []rpcAnswer
			if err := json.Unmarshal(answer, &answers); status != http.StatusOK || err != nil || len(answers) != tc.n {
				t.Fatalf("answer %d %.300s (%v), want 200 and %d answers", status, answer, err, tc.n)
			}
			for _, a := range answers {
				if a.Result == nil || a.Result.IsError {
					t.Fatalf("answer %s: %+v %+v, want a result", a.ID, a.Result, a.Error)
				}
			}
			if st.Proposal == nil || st.Proposal.Solution != passing {
				t.Fatalf("after the batch the intent is %s with proposal %+v, want %s proposed", st.State, st.Proposal, passing)
			}
		})
	}
}

// TestAnswerBound checks that an answer at /mcp holds no more than its bound: a batch
// whose results would take it past is answered with the results that fit and
// CodeAnswerTooLarge for the rest, one result past the bound alone is answered with
// that error, and an answer that ids take past the bound is refused whole. The
// handler is given a body bound of 16 KiB, so that its answers' bound is the least.
func TestAnswerBound(t *testing.T) {
	f := newFixture(t, nil)
	const maxBody = 16 << 10
	limit := mcpserver.MaxAnswerBytes(maxBody)
	if limit != mcpserver.MinAnswerBytes {
		t.Fatalf("MaxAnswerBytes(%d) = %d, want the least, %d", maxBody, limit, mcpserver.MinAnswerBytes)
	}
	srv := mcpserver.New(mcpserver.Local(f.e, f.key.PublicKey()), mcpserver.Options{})
	ts := httptest.NewServer(srv.HTTPHandler(maxBody))
	t.Cleanup(ts.Close)
	bound := fmt.Sprint(limit)

	t.Run("batch", func(t *testing.T) {
		id := f.submit(t)
		status, body := postRPC(t, ts.URL, "", batchOf(mcpserver.MaxBatchMessages, id))
		var answers []rpcAnswer
		if err := json.Unmarshal(body, &answers); status != http.StatusOK || err != nil || len(answers) != mcpserver.MaxBatchMessages {
			t.Fatalf("answer %d %.300s (%v), want 200 and %d answers", status, body, err, mcpserver.MaxBatchMessages)
		}
		if int64(len(body)) > limit {
			t.Fatalf("the answer is %d bytes, past the bound of %d", len(body), limit)
		}
		results, refused := 0, 0
		for _, a := range answers {
			switch {
			case a.Result != nil && !a.Result.IsError:
				results++
			case a.Error != nil && a.Error.Code == mcpserver.CodeAnswerTooLarge && strings.Contains(a.Error.Message, bound):
				refused++
			default:
				t.Fatalf("answer %s: %+v %+v, want a result or error %d naming the bound", a.ID, a.Result, a.Error, mcpserver.CodeAnswerTooLarge)
			}
		}
		if results == 0 || refused == 0 {
			t.Fatalf("%d results and %d refusals, want some of each", results, refused)
		}
	})

	t.Run("one answer", func(t *testing.T) {
		// Each < of the colours is six bytes in the structured output and seven in its
		// text: 12,000 of them answer about 156 KB.
		id := uuid.NewString()
		colors := []string{`"navy"`}
		for i := range 3 {
			colors = append(colors, fmt.Sprintf(`"%d%s"`, i, strings.Repeat("<", 4000)))
		}
		intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},`+
			`"colors":{"Set":{"String":[%s]}},"max_price_cents":{"Int":3000}}}}`, id, f.policy, strings.Join(colors, ","))
		auth, err := crypto.SignEd25519(f.author, intent)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.api.SubmitIntent(t.Context(), intent, auth); err != nil {
			t.Fatal(err)
		}
		status, body := postRPC(t, ts.URL, "", []byte(toolCall(7, "get_intent", fmt.Sprintf(`{"intent_id":%q}`, id))))
		var a rpcAnswer
		if err := json.Unmarshal(body, &a); err != nil || status != http.StatusOK || string(a.ID) != "7" || a.Error == nil ||
			a.Error.Code != mcpserver.CodeAnswerTooLarge || !strings.Contains(a.Error.Message, "get_intent: made") || !strings.Contains(a.Error.Message, bound) {
			t.Fatalf("answer %d %.300s (%v), want 200 and error %d of id 7 naming the tool and the bound", status, body, err, mcpserver.CodeAnswerTooLarge)
		}
	})

	t.Run("ids", func(t *testing.T) {
		// Pings answer {}, but each echoes an id of 180 <, which is 1,080 bytes once
		// escaped: 64 of them are past the bound, though the body is within its own.
		msgs := make([]string, mcpserver.MaxBatchMessages)
		for i := range msgs {
			msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":"%d%s","method":"ping"}`, i, strings.Repeat("<", 180))
		}
		body := []byte("[" + strings.Join(msgs, ",") + "]")
		if len(body) > maxBody {
			t.Fatalf("the batch is %d bytes, past the body bound", len(body))
		}
		status, answer := postRPC(t, ts.URL, "", body)
		wantRPCError(t, status, answer, http.StatusBadRequest, mcpserver.CodeAnswerTooLarge, bound, "not sent")
	})
}
