package main

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/httpsig"

	"github.com/intentd/intentd/crypto"
)

// base58Key is a Base58 Ed25519 public key as the CLI prints one.
const base58Key = `[1-9A-HJ-NP-Za-km-z]{43,44}`

// agentKeyPair reads back what agent keygen wrote to file and file.pub: the private
// key loadAgentKey reads and the public key of the .pub file, which must be its own.
func agentKeyPair(t *testing.T, file string) (ed25519.PrivateKey, string) {
	t.Helper()
	priv, err := loadAgentKey(file)
	if err != nil {
		t.Fatalf("loadAgentKey(%s): %v", file, err)
	}
	b, err := os.ReadFile(file + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub := strings.TrimSpace(string(crypto.StripComments(b)))
	if want := crypto.EncodeBase58(priv.Public().(ed25519.PublicKey)); pub != want {
		t.Fatalf("%s.pub holds %s, the public key of %s is %s", file, pub, file, want)
	}
	return priv, pub
}

// TestAgentKeygen makes agent keys as a user would, with no server: the files, their
// modes and first lines, what is printed, and the mistakes refused with the exit code
// the CLI documents.
func TestAgentKeygen(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	dir := t.TempDir()
	t.Chdir(dir) // where keygen writes without -o
	const server = "http://127.0.0.1:1"
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a regular expression
		stderr string
		// file is the key file the command writes, checked afterwards; "" when it
		// writes none.
		file  string
		after func(t *testing.T, r result)
	}{
		{name: "default file", args: []string{"agent", "keygen"}, code: exitOK,
			stdout: `^agent private key: intentctl-agent\.key \(mode 0600\)\nagent public key:  intentctl-agent\.key\.pub\n(` + base58Key + `)\n` +
				`delegate to it in an intent whose policy names an agents parameter: --attr agents=(` + base58Key + `)\n$`,
			file: "intentctl-agent.key",
			after: func(t *testing.T, r result) {
				_, pub := agentKeyPair(t, "intentctl-agent.key")
				if strings.Count(r.stdout, pub) != 2 {
					t.Fatalf("the output does not print the .pub file's key %s twice:\n%s", pub, r.stdout)
				}
			}},
		{name: "another file", args: []string{"agent", "keygen", "-o", "shopper.key"}, code: exitOK,
			stdout: `agent private key: shopper\.key \(mode 0600\)\nagent public key:  shopper\.key\.pub\n`, file: "shopper.key"},
		{name: "as JSON", args: []string{"agent", "keygen", "-o", "json.key", "--json"}, code: exitOK, file: "json.key",
			after: func(t *testing.T, r result) {
				var out map[string]string
				if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
					t.Fatalf("--json: %v\n%s", err, r.stdout)
				}
				_, pub := agentKeyPair(t, "json.key")
				want := map[string]string{"type": "agent-ed25519", "private_key_file": "json.key", "public_key_file": "json.key.pub", "public_key": pub}
				if len(out) != len(want) {
					t.Fatalf("--json prints %v, want %v", out, want)
				}
				for k, v := range want {
					if out[k] != v {
						t.Fatalf("--json prints %v, want %v", out, want)
					}
				}
			}},
		{name: "never replaces a key", args: []string{"agent", "keygen", "-o", "shopper.key"}, code: exitRefused, stdout: `^$`,
			stderr: `shopper\.key exists; agent keygen never replaces a key file, choose another -o`,
			after: func(t *testing.T, r result) {
				// The key made before is the one still there.
				agentKeyPair(t, "shopper.key")
			}},
		{name: "no subcommand", args: []string{"agent"}, code: exitUsage, stderr: `want keygen \[-o FILE\] or sign URL BODY\nusage: intentctl agent keygen \[-o FILE\] \| sign URL BODY`},
		{name: "an unknown subcommand", args: []string{"agent", "enroll"}, code: exitUsage, stderr: `want keygen`},
		{name: "an argument", args: []string{"agent", "keygen", "extra.key"}, code: exitUsage, stderr: `want no arguments, got 1`},
		{name: "help", args: []string{"agent", "keygen", "-h"}, code: exitOK, stdout: `^Usage: intentctl agent keygen \[-o FILE\]\n(?s).*-o string`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, server, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, m := range []struct{ name, re, got string }{{"stdout", tt.stdout, r.stdout}, {"stderr", tt.stderr, r.stderr}} {
				if m.re != "" && !regexp.MustCompile(m.re).MatchString(m.got) {
					t.Fatalf("%s does not match %q:\n%s", m.name, m.re, m.got)
				}
			}
			if tt.file != "" {
				checkMode(t, tt.file, 0o600)
				checkMode(t, tt.file+".pub", 0o644)
				for name, header := range map[string]string{tt.file: agentKeyHeader, tt.file + ".pub": publicKeyHeader} {
					b, err := os.ReadFile(name)
					if err != nil {
						t.Fatal(err)
					}
					if first, _, _ := strings.Cut(string(b), "\n"); first != header {
						t.Errorf("%s starts %q, want %q", name, first, header)
					}
				}
				agentKeyPair(t, tt.file)
			}
			if tt.after != nil {
				tt.after(t, r)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "extra.key")); err == nil {
		t.Error("agent keygen with an argument wrote it")
	}
}

// TestAgentKeyIsTheAgents gives --agent-key every file a user may take for an agent's
// private key, and --key or --multisig the agent's: each is refused before the server
// is asked anything (none listens here), with exit 1 and a message that says what the
// file is and, where it can, which to pass. The agent's key itself gets as far as the
// server, with propose and with mcp.
func TestAgentKeyIsTheAgents(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	for _, args := range [][]string{
		{"keygen", "-o", file("alice.key")}, {"keygen", "--passkey", "-o", file("bob.passkey")}, {"agent", "keygen", "-o", file("shopper.key")},
	} {
		if r := runCLI(t, "http://unused", args...); r.code != exitOK {
			t.Fatalf("%s: %s", strings.Join(args, " "), r.stderr)
		}
	}
	pub, err := os.ReadFile(file("shopper.key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"copy.key": string(pub), "bare.key": string(crypto.StripComments(pub)), "notes.txt": "buy a navy t-shirt\n",
		"tls.key": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n",
	} {
		if err := os.WriteFile(file(name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const (
		server = "http://127.0.0.1:1" // nothing listens: a try to reach it exits 3
		intent = "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31"
		policy = "11111111111111111111111111111111"
	)
	for _, tt := range []struct {
		name string
		args []string
		mode os.FileMode // of the file given, when not 0
		code int
		want string
	}{
		{"a person's intent key", []string{"propose", intent, solutionPasses, "--agent-key", file("alice.key")}, 0, exitRefused,
			"--agent-key: " + file("alice.key") + " is a person's intent key (intentctl keygen): an agent signs with a key of its own, made by intentctl agent keygen"},
		{"a person's intent key others may read", []string{"propose", intent, solutionPasses, "--agent-key", file("alice.key")}, 0o644, exitRefused,
			"is a person's intent key"},
		{"a person's public key", []string{"propose", intent, solutionPasses, "--agent-key", file("alice.key.pub")}, 0, exitRefused,
			file("alice.key.pub") + " is the public key of " + file("alice.key") + ", a person's intent key"},
		{"the agent's public key", []string{"propose", intent, solutionPasses, "--agent-key", file("shopper.key.pub")}, 0, exitRefused,
			file("shopper.key.pub") + " is a public key (keygen writes it beside the private key): sign with --agent-key " + file("shopper.key") + ", the file without .pub"},
		{"a copy of the agent's public key", []string{"propose", intent, solutionPasses, "--agent-key", file("copy.key")}, 0, exitRefused,
			"copy.key is a public key (its first line says so), not a private key: sign with the agent's private key file"},
		{"the agent's public key without its header", []string{"propose", intent, solutionPasses, "--agent-key", file("bare.key")}, 0, exitRefused,
			"bare.key holds the public key of " + file("shopper.key.pub")},
		{"a passkey", []string{"propose", intent, solutionPasses, "--agent-key", file("bob.passkey")}, 0, exitRefused,
			"bob.passkey is a passkey file, which signs a person's intents"},
		{"a PEM key", []string{"propose", intent, solutionPasses, "--agent-key", file("tls.key")}, 0, exitRefused, "tls.key is a PEM file"},
		{"a text file", []string{"propose", intent, solutionPasses, "--agent-key", file("notes.txt")}, 0, exitRefused, "notes.txt is not a key file"},
		{"a missing file", []string{"propose", intent, solutionPasses, "--agent-key", file("missing.key")}, 0, exitRefused,
			"--agent-key: open " + file("missing.key") + ": no such file or directory"},
		{"the agent's key others may read", []string{"propose", intent, solutionPasses, "--agent-key", file("shopper.key")}, 0o644, exitRefused,
			"mode 0644 lets group or others read the key; run chmod 600"},
		{"a person's key to mcp", []string{"mcp", "--agent-key", file("alice.key")}, 0, exitRefused, "is a person's intent key"},
		{"--agent-tag alone", []string{"propose", intent, solutionPasses, "--agent-tag", "agent-payer-auth"}, 0, exitUsage,
			"--agent-tag goes with --agent-key\nusage: intentctl propose ID SOLUTION [--agent-key FILE [--agent-tag TAG]]"},
		{"--agent-tag alone to mcp", []string{"mcp", "--agent-tag", "agent-payer-auth"}, 0, exitUsage, "--agent-tag goes with --agent-key"},
		{"the agent's key as --key", []string{"intent", "new", "--policy", policy, "--key", file("shopper.key")}, 0, exitRefused,
			file("shopper.key") + " is an agent's key (intentctl agent keygen), which signs proposals (--agent-key): sign intents with the person's own key"},
		{"the agent's key others may read as --key", []string{"intent", "new", "--policy", policy, "--key", file("shopper.key")}, 0o644, exitRefused,
			"is an agent's key"},
		{"the agent's public key as --key", []string{"intent", "new", "--policy", policy, "--key", file("shopper.key.pub")}, 0, exitRefused,
			file("shopper.key.pub") + " is the public key of " + file("shopper.key") + ", an agent's key"},
		{"the agent's key in a multisig", []string{"intent", "new", "--policy", policy, "--multisig", file("alice.key"), "--multisig", file("shopper.key")}, 0, exitRefused,
			"is an agent's key"},
		{"the agent's key", []string{"propose", intent, solutionPasses, "--agent-key", file("shopper.key"), "--agent-tag", "agent-payer-auth"}, 0, exitUnreachable,
			"cannot reach " + server},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mode != 0 {
				given := tt.args[len(tt.args)-1]
				if err := os.Chmod(given, tt.mode); err != nil {
					t.Fatal(err)
				}
				defer os.Chmod(given, 0o600)
			}
			r := runCLI(t, server, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("intentctl %s: exit %d, %q; want exit %d saying %q", strings.Join(tt.args, " "), r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
}

// TestAgentJourney runs the agent's commands against a real server: a person's intent
// of examples/delegated.policy delegates to one agent; an unsigned proposal is refused
// with the hint, one signed by another agent with 403, each leaving the intent open;
// the agent's signed proposal is taken, and status, watch and verify name the agent.
// A second intent has the agent propose without a tag, and an intent of a policy that
// delegates to nobody takes the agent's signed proposal as any other, which verify
// tells apart.
func TestAgentJourney(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	j := newJourney(t)
	var agentPub, otherPub, delegatedPolicy string
	const (
		delegated = "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a41"
		untagged  = "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a42"
		anyone    = "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a43"
	)
	authority := strings.TrimPrefix(j.server, "http://")
	agentKey := func(name string) []string {
		return []string{"--agent-key", j.file(name)}
	}
	delegatedIntent := func(id string) func() []string {
		return func() []string {
			return []string{"intent", "new", "--policy", delegatedPolicy, "--id", id, "--attr", "size=M", "--attr", "colors=navy,white",
				"--attr", "max_price_cents=3000", "--attr", "agents=" + agentPub, "--key", j.file("alice.key")}
		}
	}
	propose := func(id string, extra ...string) func() []string {
		return func() []string { return append([]string{"propose", id, solutionPasses}, extra...) }
	}
	stillOpen := func(id string) func(t *testing.T, r result) {
		return func(t *testing.T, r result) {
			if st := runCLI(t, j.server, "status", id); st.code != 0 || !strings.HasPrefix(st.stdout, id+" open\n") || strings.Contains(st.stdout, "agent") {
				t.Fatalf("after the refusal, status says %+v; want the intent open, with no agent", st)
			}
		}
	}
	agentLine := func(tag string) func() string {
		return func() string { return "\n    agent " + agentPub + tag + "\n" }
	}
	steps := []journeyStep{
		{"keygen", static("keygen", "-o", j.file("alice.key")), 0, "", "", nil, true},
		{"agent keygen", static("agent", "keygen", "-o", j.file("shopper.key")), 0, "--attr agents=" + base58Key + "\n$", "", func(t *testing.T, r result) {
			_, agentPub = agentKeyPair(t, j.file("shopper.key"))
		}, true},
		{"another agent", static("agent", "keygen", "-o", j.file("other.key")), 0, "", "", func(t *testing.T, r result) {
			_, otherPub = agentKeyPair(t, j.file("other.key"))
		}, true},
		{"info", static("info", "--json"), 0, "", "", func(t *testing.T, r result) {
			var info struct {
				PublicKey string `json:"public_key"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.PublicKey == "" {
				t.Fatalf("info --json: %v\n%s", err, r.stdout)
			}
			j.serverKey = info.PublicKey
		}, false},
		{"policy push", static("policy", "push", filepath.Join("..", "..", "examples", "delegated.policy")), 0, "^" + base58Key + "\n$", "", func(t *testing.T, r result) {
			delegatedPolicy = strings.TrimSpace(r.stdout)
		}, false},
		{"an intent that delegates to the agent", delegatedIntent(delegated), 0, "^" + delegated + "\n$", "", nil, false},
		{"unsigned", propose(delegated), 1, "^$",
			`^intentctl propose: agent_signature_required \(401 Unauthorized\): intent ` + delegated + ` delegates to the agents its parameter agents lists: .*` +
				regexp.QuoteMeta(" (nothing changed; an agent the intent lists proposes with --agent-key FILE)") + "\n$",
			stillOpen(delegated), false},
		{"signed by another agent", func() []string { return propose(delegated, agentKey("other.key")...)() }, 1, "^$", "", func(t *testing.T, r result) {
			want := "intentctl propose: agent_not_delegated (403 Forbidden): intent " + delegated + " does not delegate to agent " + otherPub
			if !strings.HasPrefix(r.stderr, want) || strings.Contains(r.stderr, "--agent-key FILE") {
				t.Fatalf("stderr %q, want %q and no hint to sign", r.stderr, want)
			}
			stillOpen(delegated)(t, r)
		}, false},
		{"signed by the agent", propose(delegated, "--agent-key", j.file("shopper.key"), "--agent-tag", "agent-payer-auth"), 0, "^" + delegated + " processing", "", nil, false},
		{"a second proposal, signed", propose(delegated, agentKey("shopper.key")...), 1, "", "proposal_exists", nil, false},
		{"watch", static("watch", "--intent", delegated, "--until-terminal"), 0, "", "", func(t *testing.T, r result) {
			if !strings.Contains(r.stdout, delegated+" success  solution "+solutionPasses+agentLine(" (agent-payer-auth)")()) {
				t.Fatalf("watch does not show the agent %s:\n%s", agentPub, r.stdout)
			}
		}, false},
		{"status", static("status", delegated), 0, "", "", func(t *testing.T, r result) {
			if want := delegated + " success  solution " + solutionPasses + agentLine(" (agent-payer-auth)")(); r.stdout != want {
				t.Fatalf("status prints %q, want %q", r.stdout, want)
			}
		}, false},
		{"status as JSON", static("status", "--json", delegated), 0, "", "", func(t *testing.T, r result) {
			var st struct{ Agent struct{ Key, Tag string } }
			if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Agent.Key != agentPub || st.Agent.Tag != "agent-payer-auth" {
				t.Fatalf("status --json: %v\n%s", err, r.stdout)
			}
		}, false},
		{"proof", static("proof", delegated, "-o", j.file("agent.proof")), 0, "wrote the proof", "", nil, false},
		{"verify", func() []string { return []string{"verify", j.file("agent.proof"), "--key", j.serverKey} }, 0, "", "", func(t *testing.T, r result) {
			want := "\n  agent      " + agentPub + " (agent-payer-auth), signed the proposal to " + authority +
				"; delegated to by the author, who listed its key in the intent\n  signed by  key " + j.serverKey
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("verify does not show the agent after the author:\n%s\nwant %q", r.stdout, want)
			}
		}, true},
		{"verify as JSON", func() []string { return []string{"verify", "--json", j.file("agent.proof"), "--key", j.serverKey} }, 0, "", "", func(t *testing.T, r result) {
			var rep struct {
				Verified bool
				Agent    struct {
					Key, Tag, Authority string
					Delegated           bool
				}
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !rep.Verified || rep.Agent.Key != agentPub ||
				rep.Agent.Tag != "agent-payer-auth" || rep.Agent.Authority != authority || !rep.Agent.Delegated {
				t.Fatalf("verify --json: %v\n%s", err, r.stdout)
			}
		}, true},

		// Without --agent-tag the signature has no tag, and the lines show none.
		{"another intent", delegatedIntent(untagged), 0, "", "", nil, false},
		{"signed without a tag", propose(untagged, agentKey("shopper.key")...), 0, "processing", "", nil, false},
		{"status without a tag", static("watch", "--intent", untagged, "--until-terminal"), 0, "", "", func(t *testing.T, r result) {
			if !strings.Contains(r.stdout, " success  solution "+solutionPasses+agentLine("")()) {
				t.Fatalf("watch does not show the agent %s without a tag:\n%s", agentPub, r.stdout)
			}
		}, false},

		// An intent of a policy without an agents part takes a signed proposal too,
		// and verify says the author chose no agent.
		{"policy push undelegated", static("policy", "push", j.file("tshirt.policy")), 0, "", "", func(t *testing.T, r result) {
			j.policyID = strings.TrimSpace(r.stdout)
		}, false},
		{"an intent that delegates to nobody", j.newIntent(anyone, "--key", j.file("alice.key")), 0, "", "", nil, false},
		{"signed for it", propose(anyone, agentKey("shopper.key")...), 0, "processing", "", nil, false},
		{"wait for it", static("watch", "--intent", anyone, "--until-terminal"), 0, "", "", nil, false},
		{"proof of it", static("proof", anyone, "-o", j.file("anyone.proof")), 0, "", "", nil, false},
		{"verify it", func() []string { return []string{"verify", j.file("anyone.proof"), "--key", j.serverKey} }, 0,
			`\n  agent      ` + base58Key + `, signed the proposal to [^;]+; the intent delegates to no agent in particular\n`, "", nil, true},
	}
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) { j.run(t, st) }) {
			t.FailNow() // later steps build on this one
		}
	}
}

// TestAgentSign prints the headers of a signature of a purchase, which, set on the
// request curl would send, verify as the server verifies them; and refuses what
// cannot be signed.
func TestAgentSign(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if r := runCLI(t, "http://127.0.0.1:1", "agent", "keygen", "-o", "shopper.key"); r.code != exitOK {
		t.Fatalf("agent keygen: %d %s", r.code, r.stderr)
	}
	body := `{"intent_id":"5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e","solution":"https://shop.example/products/tshirt-navy-m"}`
	if err := os.WriteFile("body.json", []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	url := "localhost:8080/mandates/0b6f8f0e-8f59-4b5e-9a51-1b2b8a3c4d5e/purchases"
	for _, arg := range []string{body, "@body.json"} {
		r := runCLI(t, "http://127.0.0.1:1", "agent", "sign", "--agent-key", "shopper.key", "--agent-tag", "agent-payer-auth", url, arg)
		if r.code != exitOK {
			t.Fatalf("agent sign %s: %d %s", arg, r.code, r.stderr)
		}
		req := httptest.NewRequest("POST", "http://"+url, strings.NewReader(body))
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			name, value, ok := strings.Cut(line, ": ")
			if !ok {
				t.Fatalf("line %q is not a header", line)
			}
			req.Header.Add(name, value)
		}
		v, err := httpsig.Verify(req, []byte(body), time.Now(), httpsig.Options{MaxWindow: intentd.AgentSignatureMaxWindow, Skew: intentd.AgentSignatureSkew})
		if err != nil {
			t.Fatalf("the printed signature does not verify: %v\n%s", err, r.stdout)
		}
		if _, pub := agentKeyPair(t, "shopper.key"); v.KeyID != pub || v.Tag != "agent-payer-auth" {
			t.Fatalf("signed by %s tag %q, want %s", v.KeyID, v.Tag, pub)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "sign", url, body}, "--agent-key FILE is required"},
		{[]string{"agent", "sign", "--agent-key", "shopper.key", url}, "want URL BODY"},
		{[]string{"agent", "sign", "--agent-key", "shopper.key", "--window", "9m", url, body}, "at most 8m"},
		{[]string{"agent", "sign", "--agent-key", "shopper.key", url, "@missing.json"}, "missing.json"},
	} {
		if r := runCLI(t, "http://127.0.0.1:1", tt.args...); r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}
