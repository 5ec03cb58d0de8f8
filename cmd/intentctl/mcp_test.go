package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/syncbuf"
)

// mcpOpenIntent starts a server with the demo policy and one open intent, signed, for
// an agent to work on; it returns the server's URL, a client of it, the policy's id and
// the intent's.
func mcpOpenIntent(t *testing.T) (string, *client.Client, string, string) {
	server := startServer(t)
	api, err := client.NewClient(server)
	if err != nil {
		t.Fatal(err)
	}
	policyID, err := api.PutPolicy(t.Context(), demoPolicySource)
	if err != nil {
		t.Fatal(err)
	}
	_, author, _ := ed25519.GenerateKey(nil)
	id := uuid.NewString()
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},`+
		`"colors":{"Set":{"String":["navy","blue"]}},"max_price_cents":{"Int":3000}}}}`, id, policyID)
	auth, err := crypto.SignEd25519(author, intent)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.SubmitIntent(t.Context(), intent, auth); err != nil {
		t.Fatal(err)
	}
	return server, api, policyID, id
}

// TestMCP runs intentctl mcp as a desktop agent's host does, speaking the protocol on
// its standard input and output, and makes an agent's flow through it against a real
// server: the tools listed, the intent read with the server's deadline, two candidates previewed, the passing one
// proposed, its outcome awaited and its proof verified; then a second proposal refused
// with the service's code. Closing its input ends the command with status 0.
func TestMCP(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	server, api, policyID, id := mcpOpenIntent(t)

	m := startMCP(t, "--server", server, "mcp")
	cs := m.cs
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"await_outcome", "get_intent", "get_mandate", "get_proof", "get_requirements", "preview_solution", "propose_solution", "purchase"}; !slices.Equal(names, want) {
		t.Fatalf("intentctl mcp lists %q, want %q", names, want)
	}
	call := func(tool string, args map[string]any) (map[string]any, string) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if res.IsError {
			var te struct{ Code string }
			json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &te)
			return nil, te.Code
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(b, &out)
		return out, ""
	}
	must := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		out, code := call(tool, args)
		if code != "" {
			t.Fatalf("%s: tool error %s", tool, code)
		}
		return out
	}

	out := must("get_intent", map[string]any{"intent_id": id})
	if out["status"] != "open" || out["policy_id"] != policyID {
		t.Fatalf("get_intent = %v", out)
	}
	// The deadline over stdio is the server's, read from its timeline, as at /mcp.
	tl, err := api.Timeline(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if want := tl.ExpiresAt.UTC().Format(time.RFC3339); out["deadline"] != want {
		t.Fatalf("get_intent's deadline over stdio = %v, want the server's %s", out["deadline"], want)
	}
	if d, err := time.Parse(time.RFC3339, fmt.Sprint(out["deadline"])); err != nil || time.Until(d) < time.Hour {
		t.Fatalf("get_intent's deadline %v (%v) is not an open intent's", out["deadline"], err)
	}
	for solution, want := range map[string]string{solutionFails: "failure", solutionPasses: "success"} {
		if out := must("preview_solution", map[string]any{"intent_id": id, "solution": solution}); out["status"] != want || out["proof"] != false {
			t.Fatalf("preview_solution of %s = %v, want %s", solution, out, want)
		}
	}
	if st, err := api.Status(t.Context(), id); err != nil || st.State != "open" {
		t.Fatalf("after the previews the intent is %v (%v)", st, err)
	}
	must("propose_solution", map[string]any{"intent_id": id, "solution": solutionPasses})
	if out := must("await_outcome", map[string]any{"intent_id": id, "timeout_seconds": 10}); out["status"] != "success" || out["decided"] != true {
		t.Fatalf("await_outcome = %v", out)
	}
	if out := must("get_proof", map[string]any{"intent_id": id}); out["verified"] != true {
		t.Fatalf("get_proof = %v", out)
	}
	// A decided intent has no deadline left to report.
	if out := must("get_intent", map[string]any{"intent_id": id}); out["status"] != "success" || out["deadline"] != nil {
		t.Fatalf("get_intent of the decided intent = %v, want success and no deadline", out)
	}
	if _, code := call("propose_solution", map[string]any{"intent_id": id, "solution": solutionPasses}); code != "proposal_exists" {
		t.Fatalf("a second proposal through intentctl mcp: code %q, want proposal_exists", code)
	}

	m.close(t)
}

// stdioMCP is intentctl mcp running as a desktop agent's host runs it, and the host's
// session with it.
type stdioMCP struct {
	cs     *mcp.ClientSession
	in     io.Closer // the command's standard input, as the host writes it
	done   chan int  // the command's exit code, once it ends
	stderr *syncbuf.Buffer
}

// startMCP runs intentctl with args (mcp among them), speaking the protocol on its
// standard input and output, and connects to it.
func startMCP(t *testing.T, args ...string) *stdioMCP {
	t.Helper()
	// The command reads the agent's messages from inR and writes its answers to outW.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stdin = inR
	t.Cleanup(func() { stdin = nil })
	m := &stdioMCP{in: inW, done: make(chan int, 1), stderr: &syncbuf.Buffer{}}
	go func() {
		code := runContext(context.Background(), args, outW, m.stderr)
		outW.Close()
		m.done <- code
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop-agent", Version: "1"}, nil).Connect(t.Context(),
		&mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect to intentctl mcp: %v (stderr: %s)", err, m.stderr.String())
	}
	m.cs = cs
	return m
}

// close closes the command's input, as a host that goes away does: the command must
// end with status 0.
func (m *stdioMCP) close(t *testing.T) {
	t.Helper()
	m.in.Close()
	select {
	case code := <-m.done:
		if code != exitOK {
			t.Fatalf("intentctl mcp ended with %d when its input closed; stderr: %s", code, m.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("intentctl mcp did not end when its input closed")
	}
	m.cs.Close()
}

// mcpCall calls a tool and returns its structured output, or its tool error's code and
// message.
func mcpCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (out map[string]any, code, msg string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var te struct{ Code, Message string }
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &te); err != nil || te.Code == "" {
			t.Fatalf("%s: a tool error that is not {code, message}: %v", tool, res.Content[0])
		}
		return nil, te.Code, te.Message
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return out, "", ""
}

// TestMCPAgentKey runs intentctl mcp for an intent that delegates to an agent whose key
// agent keygen made: without --agent-key its propose_solution is refused with
// agent_signature_required and the advice to start it with --agent-key, the intent
// left open; with the agent's --agent-key and --agent-tag the proposal is signed and
// taken, await_outcome reports success, and the status names the agent.
func TestMCPAgentKey(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	server := startServer(t)
	keyFile := filepath.Join(t.TempDir(), "shopper.key")
	if r := runCLI(t, server, "agent", "keygen", "-o", keyFile); r.code != exitOK {
		t.Fatalf("agent keygen: %+v", r)
	}
	_, agentPub := agentKeyPair(t, keyFile)
	api, err := client.NewClient(server)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "delegated.policy"))
	if err != nil {
		t.Fatal(err)
	}
	policyID, err := api.PutPolicy(t.Context(), string(src))
	if err != nil {
		t.Fatal(err)
	}
	_, author, _ := ed25519.GenerateKey(nil)
	id := uuid.NewString()
	intent := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","blue"]}},`+
		`"max_price_cents":{"Int":3000},"agents":{"Set":{"String":[%q]}}}}}`, id, policyID, agentPub)
	auth, err := crypto.SignEd25519(author, intent)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.SubmitIntent(t.Context(), intent, auth); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"intent_id": id, "solution": solutionPasses}

	t.Run("without --agent-key", func(t *testing.T) {
		m := startMCP(t, "--server", server, "mcp")
		_, code, msg := mcpCall(t, m.cs, "propose_solution", args)
		if code != "agent_signature_required" || !strings.Contains(msg, "`intentctl mcp --agent-key FILE`") {
			t.Fatalf("propose_solution: %s %q, want agent_signature_required telling to run intentctl mcp --agent-key FILE", code, msg)
		}
		if st, err := api.Status(t.Context(), id); err != nil || st.State != "open" {
			t.Fatalf("after the refusal: %+v, %v; want the intent open", st, err)
		}
		m.close(t)
	})
	t.Run("with --agent-key", func(t *testing.T) {
		m := startMCP(t, "--server", server, "mcp", "--agent-key", keyFile, "--agent-tag", "agent-payer-auth")
		if out, code, msg := mcpCall(t, m.cs, "propose_solution", args); code != "" || out["status"] != "processing" {
			t.Fatalf("propose_solution: %v, %s %s; want processing", out, code, msg)
		}
		out, code, msg := mcpCall(t, m.cs, "await_outcome", map[string]any{"intent_id": id, "timeout_seconds": 10})
		if code != "" || out["status"] != "success" || out["decided"] != true {
			t.Fatalf("await_outcome: %v, %s %s; want success", out, code, msg)
		}
		st, err := api.Status(t.Context(), id)
		if err != nil || st.Agent == nil || st.Agent.Key != agentPub || st.Agent.Tag != "agent-payer-auth" {
			t.Fatalf("status %+v (%v), want the agent %s with its tag", st, err, agentPub)
		}
		m.close(t)
	})
}
