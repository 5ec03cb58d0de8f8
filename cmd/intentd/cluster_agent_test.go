package main_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/httpsig"
	"github.com/intentd/intentd/proof"
)

// Solutions of the demo catalog for an intent of the delegated policy (size M, colours
// navy and white, a budget of 3000).
const (
	agentSolution   = "https://shop.example/products/tshirt-navy-m"  // passes
	agentOutOfStock = "https://shop.example/products/tshirt-white-m" // out of stock
)

// checkAgents runs an intent that delegates to one agent through the cluster: the
// refusals of docs/agents.md come from whichever member is asked, a request whose nonce
// one member spent is refused as a replay by another (nonces are spent in the store
// the members share), and the intent stays open through them all. Then the agent's
// proposal, sent to a member that does not own the intent, succeeds; another member's
// status names the agent, and the proof it serves verifies offline with the agent
// delegated.
func checkAgents(t *testing.T, r *rig) {
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "delegated.policy"))
	if err != nil {
		t.Fatal(err)
	}
	policyID := postPolicy(t, r.nodes[0].url, string(src))
	agent, other := newAgent(t), newAgent(t)
	id := uuid.NewString()
	raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000},"agents":{"Set":{"String":[%q]}}}}}`,
		id, policyID, agent.pub)
	r.submit(t, r.nodes[0], id, r.authored(raw))

	// a and b are the two members that do not own the intent: each decides the
	// proposals it takes, and the store lets one of them take the intent's one proposal.
	owner := r.owner(t, id)
	a, b := r.nodes[(owner+1)%3], r.nodes[(owner+2)%3]
	checkRequirements(t, a, id)
	now := time.Now()
	byOther := signFor(t, a, id, agentSolution, other, now, now.Add(4*time.Minute))
	changed := signFor(t, a, id, agentSolution, agent, now, now.Add(4*time.Minute))
	changed.body = fmt.Appendf(nil, `{"solution":%q}`, agentOutOfStock)
	for _, tc := range []struct {
		name       string
		to         *crashServer
		p          signedRequest
		status     int
		code, says string
	}{
		{"unsigned", a, signedRequest{host: hostOf(a), body: fmt.Appendf(nil, `{"solution":%q}`, agentSolution)}, 401, "agent_signature_required", "sign the proposal"},
		{"signed by another agent", a, byOther, 403, "agent_not_delegated", "does not delegate to agent " + other.pub},
		// The same bytes to another member: the nonce is spent for the whole service,
		// and the intent is still open, so only the nonce can refuse it.
		{"the same request on another member", b, byOther, 401, "agent_signature_replayed", "was used before"},
		{"expired", b, signFor(t, b, id, agentSolution, agent, now.Add(-10*time.Minute), now.Add(-5*time.Minute)), 401, "agent_signature_invalid", "expired"},
		{"the body changed after signing", a, changed, 401, "agent_signature_invalid", "Content-Digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, why := sendSigned(tc.to, id, tc.p); status != tc.status || !strings.HasPrefix(why, tc.code+":") || !strings.Contains(why, tc.says) {
				t.Errorf("%s: %d %s, want %d %s saying %q", tc.name, status, why, tc.status, tc.code, tc.says)
			}
			if st := getStatus(t, r.nodes[owner].url, id); st != "open" {
				t.Errorf("after %s the intent is %s, want open", tc.name, st)
			}
		})
	}

	if status, why := sendSigned(a, id, signFor(t, a, id, agentSolution, agent, now, now.Add(4*time.Minute))); status != http.StatusOK {
		t.Fatalf("the delegated agent's proposal through a member that does not own the intent: %d %s", status, why)
	}
	waitTerminal(t, b.url, id, "success")
	var st struct {
		Agent struct{ Key, Tag string } `json:"agent"`
	}
	getJSON(t, b.url+"/intents/"+id+"/status", &st)
	if st.Agent.Key != agent.pub || st.Agent.Tag != "agent-payer-auth" {
		t.Errorf("the status read on another member names the agent %+v, want %s with its tag", st.Agent, agent.pub)
	}
	var info struct {
		PublicKey string `json:"public_key"`
	}
	getJSON(t, b.url+"/info", &info)
	pub, err := crypto.DecodeBase58(info.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	bundle := getBody(t, b.url+"/intents/"+id+"/proof")
	report, err := proof.Verify(bundle, pub)
	if err != nil {
		t.Fatalf("the proof does not verify: %v", err)
	}
	if report.Agent == nil || report.Agent.Key != agent.pub || !report.Agent.Delegated {
		t.Errorf("the proof's agent report %+v, want the delegated agent %s", report.Agent, agent.pub)
	}
}

// owner is the index of the member that owns intent id's grain, placed as protoactor's
// disthash places it: by rendezvous hashing over the members' addresses, which are
// their --cluster-bind.
func (r *rig) owner(t *testing.T, id string) int {
	t.Helper()
	var info struct {
		Cluster struct{ Members []string } `json:"cluster"`
	}
	getJSON(t, r.nodes[0].url+"/info", &info)
	var members cluster.Members
	for _, addr := range info.Cluster.Members {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		members = append(members, &cluster.Member{Id: addr, Host: host, Port: int32(p), Kinds: []string{"intent"}})
	}
	rv := cluster.NewRendezvous()
	rv.UpdateMembers(members)
	addr := rv.GetByClusterIdentity(&cluster.ClusterIdentity{Kind: "intent", Identity: id})
	for i, n := range r.nodes {
		if k := slices.Index(n.args, "--cluster-bind"); k >= 0 && n.args[k+1] == addr {
			return i
		}
	}
	t.Fatalf("no node is the owner %q of %s among the members %v", addr, id, info.Cluster.Members)
	return 0
}

// agent is an agent's key pair with its Base58 public key.
type agent struct {
	priv ed25519.PrivateKey
	pub  string
}

func newAgent(t *testing.T) agent {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return agent{priv: priv, pub: crypto.EncodeBase58(pub)}
}

// signedRequest is a proposal's request as an agent signed it, for the authority host:
// the same bytes can go to any member, as behind a load balancer.
type signedRequest struct {
	host   string
	header http.Header
	body   []byte
}

func hostOf(n *crashServer) string { return strings.TrimPrefix(n.url, "http://") }

// signFor signs the proposal of solution for intent id, addressed to node n, with key,
// its window from created to expires.
func signFor(t *testing.T, n *crashServer, id, solution string, key agent, created, expires time.Time) signedRequest {
	t.Helper()
	body := fmt.Appendf(nil, `{"solution":%q}`, solution)
	req, err := http.NewRequest("POST", n.url+"/intents/"+id+"/proposal", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := httpsig.Sign(req, body, key.priv, httpsig.Params{Created: created, Expires: expires, Tag: "agent-payer-auth"}); err != nil {
		t.Fatal(err)
	}
	return signedRequest{host: req.Host, header: req.Header, body: body}
}

// sendSigned sends a proposal's request to node n as it is, whichever member it was
// addressed to, and returns the status with the error's code and message.
func sendSigned(n *crashServer, id string, p signedRequest) (int, string) {
	req, err := http.NewRequest("POST", n.url+"/intents/"+id+"/proposal", bytes.NewReader(p.body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header = p.header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Host = p.host
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var e struct{ Code, Message string }
	json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Code + ": " + e.Message
}

func getBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s (%v)", url, resp.StatusCode, b, err)
	}
	return b
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.Unmarshal(getBody(t, url), v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// checkRequirements reads the requirements of intent id, of the delegated policy, from
// node n, which need not own it: they are the intent's parameters put into its
// policy, read from the store the members share.
func checkRequirements(t *testing.T, n *crashServer, id string) {
	t.Helper()
	resp, err := client.Get(n.url + "/intents/" + id + "/requirements")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var req struct {
		IntentID    string `json:"intent_id"`
		Constraints []struct {
			Residual string `json:"residual"`
		} `json:"constraints"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET requirements from %s: %d %v", n.url, resp.StatusCode, err)
	}
	if want := `evidence.color in {"navy", "white"}`; req.IntentID != id || len(req.Constraints) < 3 || req.Constraints[2].Residual != want {
		t.Fatalf("requirements from %s: %+v, want constraint 2 to be %s", n.url, req, want)
	}
}
