package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/proof"
)

// nodeSigVersion is the version of the npm package http-message-signatures the
// foreign signer uses, the one httpsig's TestNodeSigner installs.
const nodeSigVersion = "1.0.6"

// nodeSigner is httpsig/testdata/sign.mjs installed beside http-message-signatures.
type nodeSigner struct {
	t         *testing.T
	node, dir string
}

// installNodeSigner installs http-message-signatures from the npm registry into a
// temporary folder with the script, or skips the test where it cannot run.
func installNodeSigner(t *testing.T) *nodeSigner {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: it installs http-message-signatures from the npm registry")
	}
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("skipped: Node.js and npm are not installed (Debian: apt-get install nodejs npm); the foreign signer needs them")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"node-signer","private":true,"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "http-message-signatures@"+nodeSigVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install http-message-signatures@%s: %v\n%s", nodeSigVersion, err, out)
	}
	// Node resolves the script's import from the script's own folder, so it runs from
	// there, not from httpsig/testdata.
	script, err := os.ReadFile(filepath.Join("..", "..", "httpsig", "testdata", "sign.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sign.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return &nodeSigner{t: t, node: node, dir: dir}
}

// send has Node sign body with key (and tag) and post it to url, carrying sent instead
// when it is not "": a body changed after signing. It returns the answer.
func (n *nodeSigner) send(url string, key agentKey, tag, body, sent string) response {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(n.t.Context(), time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, n.node, "sign.mjs", url, hex.EncodeToString(key.priv.Seed()), body, tag)
	run.Dir = n.dir
	run.Env = os.Environ()
	if sent != "" {
		run.Env = append(run.Env, "SEND_BODY="+sent)
	}
	var stderr strings.Builder
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		n.t.Fatalf("node sign.mjs: %v\n%s", err, stderr.String())
	}
	line, rest, _ := strings.Cut(string(out), "\n")
	status, err := strconv.Atoi(line)
	if err != nil {
		n.t.Fatalf("node sign.mjs printed %q, want the status on the first line", out)
	}
	// The script prints the body as it came, and a newline after it; not the headers.
	return response{status: status, body: []byte(strings.TrimSuffix(rest, "\n"))}
}

// TestNodeAgent has an agent that intentd did not write, Node.js with the npm package
// http-message-signatures (httpsig/testdata/sign.mjs), propose a solution to a
// delegated intent on the whole server: the proposal is accepted, the intent succeeds,
// its status names the agent and its proof verifies with the agent delegated. A
// request Node signed whose body changed afterwards is refused first, and the intent
// stays open. On both stores (make test).
func TestNodeAgent(t *testing.T) {
	t.Parallel()
	node := installNodeSigner(t)
	s := startServer(t, nil)
	s.policy = s.putPolicy(delegatedPolicy(t))
	pub, _ := s.serviceKey()
	agent := newAgentKey(t)
	id, intent := delegatedIntent(s.policy, agent.pub)
	if r := s.postIntent(authored(t, intent, s.signEd25519(intent))); r.status != http.StatusOK {
		t.Fatalf("POST /intents: %s", r)
	}
	url := s.url + "/intents/" + id + "/proposal"
	proposal := func(solution string) string {
		b, _ := json.Marshal(map[string]string{"solution": solution})
		return string(b)
	}
	for _, tc := range []struct {
		name       string
		sent       string // the body sent instead of the one signed, if any
		status     int
		code, want string // the error's code; the intent's status after
	}{
		{"the body changed after signing", proposal(solutionOutOfStock), 401, "agent_signature_invalid", "open"},
		{"as signed", "", 200, "", "success"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := node.send(url, agent, "agent-payer-auth", proposal(solutionPasses), tc.sent)
			if r.status != tc.status {
				t.Fatalf("the Node-signed proposal: %s, want %d", r, tc.status)
			}
			var e struct{ Code string }
			if json.Unmarshal(r.body, &e); e.Code != tc.code {
				t.Errorf("the Node-signed proposal: %s, want the code %q", r, tc.code)
			}
			st := s.waitStatus(id, tc.want)
			if tc.want == "open" {
				return
			}
			if a, _ := st["agent"].(map[string]any); a["key"] != agent.pub || a["tag"] != "agent-payer-auth" {
				t.Errorf("status agent = %v, want key %s and tag agent-payer-auth", st["agent"], agent.pub)
			}
		})
	}

	r := s.do("GET", "/intents/"+id+"/proof", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET proof: %s", r)
	}
	report, err := proof.Verify(r.body, pub)
	if err != nil {
		t.Fatalf("the proof of the Node agent's proposal does not verify: %v", err)
	}
	if report.Agent == nil || report.Agent.Key != agent.pub || !report.Agent.Delegated {
		t.Errorf("the proof's agent report %+v, want the delegated agent %s", report.Agent, agent.pub)
	}
}
