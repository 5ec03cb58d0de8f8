package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tsSDKVersion is the version of the official TypeScript SDK the foreign-client test
// installs.
const tsSDKVersion = "1.32.2"

// tsFlow is an agent written against the official TypeScript SDK: it lists the tools,
// runs the flow of TestFlow over the streamable HTTP transport, reads the intent's
// requirements and a mandate,
// printing one JSON object of what it saw.
const tsFlow = `
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, intentId, mandateId, ...candidates] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: "Bearer " + token } },
});
const client = new Client({ name: "ts-agent", version: "1.0.0" });
await client.connect(transport);
const out = { tools: (await client.listTools()).tools.map((t) => t.name).sort(), previews: {} };
let passing = null;
for (const solution of candidates) {
  const r = await client.callTool({ name: "preview_solution", arguments: { intent_id: intentId, solution } });
  out.previews[solution] = r.structuredContent.status;
  if (r.structuredContent.status === "success" && passing === null) passing = solution;
}
out.proposed = (await client.callTool({ name: "propose_solution", arguments: { intent_id: intentId, solution: passing } })).structuredContent.status;
out.outcome = (await client.callTool({ name: "await_outcome", arguments: { intent_id: intentId, timeout_seconds: 10 } })).structuredContent.status;
out.verified = (await client.callTool({ name: "get_proof", arguments: { intent_id: intentId } })).structuredContent.verified;
const req = (await client.callTool({ name: "get_requirements", arguments: { intent_id: intentId } })).structuredContent;
out.requirements = { residual: req.constraints[1].residual, size: req.schema.properties.size.const };
const second = await client.callTool({ name: "propose_solution", arguments: { intent_id: intentId, solution: passing } });
out.second = second.isError ? JSON.parse(second.content[0].text).code : "accepted";
const mandate = (await client.callTool({ name: "get_mandate", arguments: { mandate_id: mandateId } })).structuredContent;
out.mandate = { status: mandate.status, remaining_cents: mandate.remaining_cents, budget_cents: mandate.attrs.budget_cents };
console.log(JSON.stringify(out));
await client.close();
`

// TestTypeScriptClient runs an agent on the official TypeScript SDK, which this project
// did not write, against intentd's /mcp: the tools listed, previews of three
// candidates, the proposal of the passing one, its outcome, its proof and its
// requirements, and a mandate read. The SDK is installed from the npm registry into a temporary folder.
func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: it installs the TypeScript SDK from the npm registry")
	}
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("skipped: Node.js and npm are not installed (Debian: apt-get install nodejs npm); the TypeScript MCP client needs them")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"ts-agent","private":true,"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "@modelcontextprotocol/sdk@"+tsSDKVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install @modelcontextprotocol/sdk@%s: %v\n%s", tsSDKVersion, err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.mjs"), []byte(tsFlow), 0o644); err != nil {
		t.Fatal(err)
	}

	f := newFixture(t, nil)
	id, mandateID := f.submit(t), f.mandate(t, mandateSpec{})
	run := exec.CommandContext(ctx, node, "agent.mjs", f.url+"/mcp", agentToken, id, mandateID, overBudget, wrongColor, passing)
	run.Dir = dir
	var stderr strings.Builder
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("the TypeScript agent: %v\n%s", err, stderr.String())
	}
	var got struct {
		Tools    []string          `json:"tools"`
		Previews map[string]string `json:"previews"`
		Proposed string            `json:"proposed"`
		Outcome  string            `json:"outcome"`
		Verified bool              `json:"verified"`
		Second   string            `json:"second"`
		Req      struct {
			Residual string `json:"residual"`
			Size     string `json:"size"`
		} `json:"requirements"`
		Mandate struct {
			Status         string `json:"status"`
			RemainingCents int    `json:"remaining_cents"`
			BudgetCents    int    `json:"budget_cents"`
		} `json:"mandate"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the TypeScript agent printed %s: %v", out, err)
	}
	if strings.Join(got.Tools, ",") != "await_outcome,get_intent,get_mandate,get_proof,get_requirements,preview_solution,propose_solution,purchase" ||
		got.Previews[passing] != "success" || got.Previews[overBudget] != "failure" || got.Previews[wrongColor] != "failure" ||
		got.Proposed != "processing" || got.Outcome != "success" || !got.Verified || got.Second != "proposal_exists" ||
		got.Req.Residual != `evidence.size == "M"` || got.Req.Size != "M" ||
		got.Mandate.Status != "active" || got.Mandate.RemainingCents != budget || got.Mandate.BudgetCents != budget {
		t.Fatalf("the TypeScript agent saw %s", out)
	}
}
