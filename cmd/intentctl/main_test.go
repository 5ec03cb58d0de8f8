package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/proof"
)

const (
	solutionPasses = "https://shop.example/products/tshirt-navy-m"
	solutionFails  = "sku:PO-BLACK-L" // fails constraints 1, 2 and 3
)

// startServer runs the real handler over an engine on a data folder, signing receipts,
// as intentd does, with the demo catalog; it returns the server's URL.
func startServer(t *testing.T) string {
	t.Helper()
	return startServerWith(t, evidence.DefaultCatalog(), 0)
}

// startServerWith is startServer with another extractor and, when not 0, a limit on
// the event stream's subscribers; tune sets the server's other options.
func startServerWith(t *testing.T, ex evidence.Extractor, maxSubscribers int, tune ...func(*intenthttp.Options)) string {
	t.Helper()
	store, err := persistence.Open(filepath.Join(t.TempDir(), "data"), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Store, cfg.Extractor, cfg.Prover = store, ex, actors.ReceiptProver{Key: key}
	if maxSubscribers > 0 {
		cfg.MaxSubscribers = maxSubscribers
	}
	e, err := actors.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-e.Ready()
	opts := intenthttp.Options{Info: intentd.Info{
		PublicKey: crypto.EncodeBase58(key.PublicKey()), KeyID: key.ID(),
	}}
	for _, f := range tune {
		f(&opts)
	}
	ts := httptest.NewServer(intenthttp.NewServer(e, opts))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		e.Close()
		store.Close()
	})
	return ts.URL
}

// result is one run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t testing.TB, server string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	all := append([]string{"--server", server, "--timeout", "10s"}, args...)
	code := run(all, &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// TestJourney runs every command against a real server, in the order a user would,
// from a fresh key to verified proofs, with the failures a user meets on the way.
func TestJourney(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	server := startServer(t)
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(file("tshirt.policy"), []byte(demoPolicySource), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file("broken.policy"), []byte("name broken\nrequires {\n  evidence.size == ;\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Values found by one step and used by later ones.
	var policyID, serverKey string
	ids := map[string]string{
		"ed25519": "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31", "passkey": "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a32",
		"multisig": "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a33", "failing": "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a34",
	}
	attrs := []string{"--attr", "size=M", "--attr", "colors=navy, white", "--attr", "max_price_cents=3000"}
	newIntent := func(id string, extra ...string) func() []string {
		return func() []string {
			return append(append([]string{"intent", "new", "--policy", policyID, "--id", id}, attrs...), extra...)
		}
	}
	static := func(args ...string) func() []string { return func() []string { return args } }

	steps := []struct {
		name   string
		args   func() []string
		code   int
		stdout string // a regular expression the output must match
		stderr string
		after  func(t *testing.T, r result)
		// offline steps run with a server that cannot be reached, to show they need none
		offline bool
	}{
		{"keygen", static("keygen", "-o", file("alice.key")), 0, `public key: .*alice\.key\.pub\n[1-9A-HJ-NP-Za-km-z]{43,44}\n`, "", func(t *testing.T, r result) {
			checkMode(t, file("alice.key"), 0o600)
			pub, _ := os.ReadFile(file("alice.key.pub"))
			if !strings.HasSuffix(r.stdout, string(crypto.StripComments(pub))) {
				t.Fatalf("printed key %q is not the .pub file's %q", r.stdout, pub)
			}
			if _, err := crypto.LoadSigningKey(file("alice.key")); err != nil {
				t.Fatalf("the key file is not in the service's key form: %v", err)
			}
		}, true},
		{"keygen never replaces a key", static("keygen", "-o", file("alice.key")), 1, "", "exists", nil, true},
		{"keygen passkey", static("keygen", "--passkey", "-o", file("bob.passkey")), 0, `bob\.passkey`, "", func(t *testing.T, r result) {
			checkMode(t, file("bob.passkey"), 0o600)
		}, true},
		{"policy check", static("policy", "check", file("tshirt.policy")), 0, `^[1-9A-HJ-NP-Za-km-z]{43,44}\n$`, "", func(t *testing.T, r result) {
			policyID = strings.TrimSpace(r.stdout)
		}, true},
		{"policy check shows a caret", static("policy", "check", file("broken.policy")), 1, "^$", `(?s)evidence\.size == ;\n\s*\^.*does not compile`, nil, true},
		{"policy push", static("policy", "push", file("tshirt.policy")), 0, "", "", func(t *testing.T, r result) {
			if got := strings.TrimSpace(r.stdout); got != policyID {
				t.Fatalf("pushed id %s, check said %s", got, policyID)
			}
		}, false},
		{"policy push refused", static("policy", "push", file("broken.policy")), 1, "^$", `policy_invalid`, nil, false},
		{"policy get", func() []string { return []string{"policy", "get", policyID} }, 0, `name tshirt_purchase_v1`, "", nil, false},
		{"policy get unknown", static("policy", "get", "11111111111111111111111111111111"), 1, "", `policy_not_found \(404`, nil, false},
		{"info", static("info", "--json"), 0, `"public_key"`, "", func(t *testing.T, r result) {
			var info intentd.Info
			if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.PublicKey == "" {
				t.Fatalf("info --json: %v\n%s", err, r.stdout)
			}
			serverKey = info.PublicKey
		}, false},
		{"intent dry run", newIntent(ids["ed25519"], "--key", file("alice.key"), "--dry-run"), 0, `(?s)"Signed".*"Ed25519"`, "", func(t *testing.T, r result) {
			var ai intentd.AuthoredIntent
			if err := json.Unmarshal([]byte(r.stdout), &ai); err != nil {
				t.Fatalf("dry run output is not an AuthoredIntent: %v\n%s", err, r.stdout)
			}
			if err := crypto.Verify(ai.Intent, ai.Authorship, crypto.VerifyOptions{}); err != nil {
				t.Fatalf("dry run's signature does not verify: %v", err)
			}
			var compact bytes.Buffer
			json.Compact(&compact, ai.Intent)
			if !strings.Contains(compact.String(), `"colors":{"Set":{"String":["navy","white"]}}`) {
				t.Fatalf("attribute types not taken from the policy: %s", ai.Intent)
			}
		}, false},
		{"intent with Ed25519", newIntent(ids["ed25519"], "--key", file("alice.key")), 0, "^" + ids["ed25519"] + "\n$", "", nil, false},
		{"intent with a passkey", newIntent(ids["passkey"], "--passkey", file("bob.passkey")), 0, ids["passkey"], "", nil, false},
		{"intent with a multisig", newIntent(ids["multisig"], "--multisig", file("alice.key"), "--multisig", file("bob.passkey"), "--threshold", "2"), 0, ids["multisig"], "", nil, false},
		{"intent from the policy file", func() []string {
			return append([]string{"intent", "new", "--policy-file", file("tshirt.policy"), "--id", ids["failing"], "--key", file("alice.key")}, attrs...)
		}, 0, ids["failing"], "", nil, false},
		{"intent twice", newIntent(ids["ed25519"], "--key", file("alice.key")), 1, "", "intent_exists", nil, false},
		{"intent unsigned refused", newIntent("", "--unsigned"), 1, "", "unsigned_not_permitted", nil, false},
		{"intent wrong attribute type", func() []string {
			return []string{"intent", "new", "--policy", policyID, "--key", file("alice.key"), "--attr", "size=M", "--attr", "colors=navy", "--attr", "max_price_cents=cheap"}
		}, 2, "", `max_price_cents=cheap: want an int`, nil, false},
		{"intent missing attribute", func() []string {
			return []string{"intent", "new", "--policy", policyID, "--key", file("alice.key"), "--attr", "size=M"}
		}, 2, "", `missing: the policy requires parameter`, nil, false},
		{"intent two signers", newIntent("", "--key", file("alice.key"), "--unsigned"), 2, "", "exactly one of", nil, false},
		{"status open", func() []string { return []string{"status", ids["ed25519"]} }, 0, ids["ed25519"] + " open", "", nil, false},
		{"proof not ready", func() []string { return []string{"proof", ids["ed25519"]} }, 1, "", "proof_not_ready", nil, false},
		{"propose", func() []string { return []string{"propose", ids["ed25519"], solutionPasses} }, 0, "processing", "", nil, false},
		{"propose the others", func() []string {
			for _, k := range []string{"passkey", "multisig"} {
				if r := runCLI(t, server, "propose", ids[k], solutionPasses); r.code != 0 {
					t.Fatalf("propose %s: %+v", k, r)
				}
			}
			return []string{"propose", ids["failing"], solutionFails}
		}, 0, "processing", "", nil, false},
		{"propose twice", func() []string { return []string{"propose", ids["ed25519"], solutionPasses} }, 1, "", "proposal_exists", nil, false},
		{"watch until all succeed", func() []string {
			return []string{"watch", "--intent", ids["ed25519"], "--intent", ids["passkey"], "--intent", ids["multisig"], "--until-terminal"}
		}, 0, `(?s)(#\d+|\(status\)) 6f1c.*all 3 watched intent\(s\) ended: 3 success\n$`, "", nil, false},
		{"watch until one fails", func() []string {
			return []string{"watch", "--intent", ids["ed25519"], "--intent", ids["failing"], "--until-terminal"}
		}, 5, `(?s)` + ids["failing"] + ` failure \(constraints\)  solution sku:PO-BLACK-L\n.*constraint 1 .*ended: 1 failure, 1 success`, "not all succeeded", nil, false},
		{"watch as JSON lines", func() []string {
			return []string{"watch", "--json", "--from", "0", "--intent", ids["failing"], "--until-terminal"}
		}, 5, `^\{"id":\d+,"outcome":\{"status":"failure"`, "", nil, false},
		{"watch needs intents to end", static("watch", "--until-terminal"), 2, "", "--intent", nil, false},
		{"status success", func() []string { return []string{"status", ids["ed25519"]} }, 0, ids["ed25519"] + ` success  solution ` + solutionPasses, "", nil, false},
		{"status as JSON", func() []string { return []string{"status", "--json", ids["failing"]} }, 0, `"failure_kind": "constraints"`, "", nil, false},
		{"get", func() []string { return []string{"get", ids["passkey"]} }, 0, `(?s)"intent".*"Passkey"`, "", nil, false},
		{"proof to a file", func() []string { return []string{"proof", ids["ed25519"], "-o", file("ok.proof")} }, 0, "wrote the proof", "", nil, false},
		{"proof of a failure", func() []string { return []string{"proof", ids["failing"], "-o", file("failing.proof")} }, 0, "", "", nil, false},
		{"proof of the multisig", func() []string { return []string{"proof", ids["multisig"]} }, 0, `^\{"receipt":`, "", func(t *testing.T, r result) {
			if _, err := proof.Verify([]byte(r.stdout), nil); err != nil {
				t.Fatalf("the bundle printed does not verify: %v", err)
			}
		}, false},
		{"verify", func() []string { return []string{"verify", file("ok.proof"), "--key", serverKey} }, 0, `(?s)verified: .*outcome    success.*author     Ed25519 .*trusted \(given with --key\)`, "", nil, true},
		{"verify a constraint failure", func() []string { return []string{"verify", "--key", serverKey, file("failing.proof")} }, 0,
			`(?s)outcome    failure \(3 constraint failure\(s\)\).*constraint 1 `, "", nil, true},
		{"verify without a key", static("verify", file("ok.proof")), 0, "NOT trusted", "", nil, true},
		{"verify under another key", func() []string {
			other, err := crypto.GenerateSigningKey()
			if err != nil {
				t.Fatal(err)
			}
			return []string{"verify", file("ok.proof"), "--key", crypto.EncodeBase58(other.PublicKey())}
		}, 4, "", "check key: the receipt is not signed by the key given with --key, [1-9A-HJ-NP-Za-km-z]{43,44} \\(key id [1-9A-HJ-NP-Za-km-z]+\\); it names key ", nil, true},
		{"verify a tampered file", func() []string {
			b, err := os.ReadFile(file("ok.proof"))
			if err != nil {
				t.Fatal(err)
			}
			tampered := strings.Replace(string(b), `"price_cents":1999`, `"price_cents":1899`, 1)
			if tampered == string(b) {
				t.Fatalf("the price is not in the bundle:\n%s", b)
			}
			if err := os.WriteFile(file("tampered.proof"), []byte(tampered), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"verify", file("tampered.proof"), "--key", serverKey}
		}, 4, "^$", "verification FAILED: check evidence_digest: evidence digest does not match", nil, true},
		{"verify a bad key", static("verify", file("ok.proof"), "--key", "0OIl"), 2, "", "--key", nil, true},
		{"policy delete", func() []string { return []string{"policy", "delete", policyID} }, 0, "deleted", "", nil, false},
		{"unknown command", static("frobnicate"), 2, "", "unknown command", nil, true},
		{"missing argument", static("propose", "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31"), 2, "", "want ID SOLUTION", nil, true},
		{"help", static("help"), 0, "Exit codes", "", nil, true},
	}
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) {
			at := server
			if st.offline {
				at = "http://127.0.0.1:1"
			}
			r := runCLI(t, at, st.args()...)
			if r.code != st.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, st.code, r.stdout, r.stderr)
			}
			for _, m := range []struct{ name, re, got string }{{"stdout", st.stdout, r.stdout}, {"stderr", st.stderr, r.stderr}} {
				if m.re != "" && !regexp.MustCompile(m.re).MatchString(m.got) {
					t.Fatalf("%s does not match %q:\n%s", m.name, m.re, m.got)
				}
			}
			if st.after != nil {
				st.after(t, r)
			}
		}) {
			t.FailNow() // later steps build on this one
		}
	}

	// The server gone, every command that needs it says so with exit 3.
	t.Run("server unreachable", func(t *testing.T) {
		r := runCLI(t, "http://127.0.0.1:1", "status", ids["ed25519"])
		if r.code != 3 || !strings.Contains(r.stderr, "cannot reach http://127.0.0.1:1") {
			t.Fatalf("%+v, want exit 3 saying it cannot reach the server", r)
		}
	})
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Fatalf("%s has mode %04o, want %04o", path, fi.Mode().Perm(), want)
	}
}

// TestDemo runs intentctl demo against servers whose catalogs make it go as the
// documentation says, or not, and checks what it claims against the server.
func TestDemo(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	// catalogWith is the demo catalog with some products' evidence changed.
	catalogWith := func(t *testing.T, change func(map[string]map[string]any)) evidence.Extractor {
		b, err := os.ReadFile(filepath.Join("..", "..", "evidence", "catalog.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cat map[string]map[string]any
		if err := json.Unmarshal(b, &cat); err != nil {
			t.Fatal(err)
		}
		change(cat)
		b, err = json.Marshal(cat)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "catalog.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := evidence.NewCatalog(path)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	outcomeRE := regexp.MustCompile(`intent ([0-9a-f-]{36}) ended in (\w+)`)

	tests := []struct {
		name    string
		catalog func(t *testing.T) evidence.Extractor // nil: no server
		args    []string
		// full takes the only place on the event stream before the demo runs
		full   bool
		code   int
		stdout []string // regular expressions the output must match
		stderr string
		// verified is how many "proof verified: signed by key <the server's key>" lines
		verified int
		// outcomes are the states the intents must have on the server, in order
		outcomes []intentd.State
	}{
		{
			name:    "the demo catalog",
			catalog: func(*testing.T) evidence.Extractor { return evidence.DefaultCatalog() },
			code:    0,
			stdout: []string{
				`The server signs its receipts with key `,
				`Stored the demo policy tshirt_purchase_v1 as [1-9A-HJ-NP-Za-km-z]{43,44}`,
				`throwaway Ed25519 key, in memory only: public key [1-9A-HJ-NP-Za-km-z]{43,44}`,
				`ended in success\.\n\s+evidence: .*color="navy" .*price_cents=1999 shipping_cents=499 size="M"\n`,
				`(?s)ended in failure \(constraints\)\.\n.*failed constraint 4: evidence\.price_cents \+ evidence\.shipping_cents <= parameters\.max_price_cents\n\s+reason: \S`,
				`Everything went as expected`,
			},
			verified: 2,
			outcomes: []intentd.State{intentd.StateSuccess, intentd.StateFailure},
		},
		{
			name: "the passing product out of stock",
			catalog: func(t *testing.T) evidence.Extractor {
				return catalogWith(t, func(c map[string]map[string]any) { c[demoPasses]["in_stock"] = false })
			},
			code:     1,
			stdout:   []string{`failed constraint 5: evidence\.in_stock`},
			stderr:   `not as expected: intent [0-9a-f-]{36} ended in failure, expected success`,
			verified: 2,
			outcomes: []intentd.State{intentd.StateFailure, intentd.StateFailure},
		},
		{
			name: "the failing product within budget",
			catalog: func(t *testing.T) evidence.Extractor {
				return catalogWith(t, func(c map[string]map[string]any) { c[demoFails]["price_cents"] = 1000 })
			},
			code:     1,
			stderr:   `ended in success, expected failure`,
			verified: 2,
			outcomes: []intentd.State{intentd.StateSuccess, intentd.StateSuccess},
		},
		{
			name: "the products missing",
			catalog: func(t *testing.T) evidence.Extractor {
				return catalogWith(t, func(c map[string]map[string]any) { delete(c, demoPasses); delete(c, demoFails) })
			},
			code:     1,
			stdout:   []string{`ended in failure \(extraction\)\.\n\s+reason: .*not in the catalog`, `no proof`},
			stderr:   `not as expected: .*expected success`,
			verified: 0,
			outcomes: []intentd.State{intentd.StateFailure, intentd.StateFailure},
		},
		{
			name:     "as JSON",
			catalog:  func(*testing.T) evidence.Extractor { return evidence.DefaultCatalog() },
			args:     []string{"--json"},
			code:     0,
			stdout:   []string{`^\{\n  "server"`, `"as_expected": true`},
			outcomes: []intentd.State{intentd.StateSuccess, intentd.StateFailure},
		},
		{
			name:     "the event stream full",
			catalog:  func(*testing.T) evidence.Extractor { return evidence.DefaultCatalog() },
			full:     true,
			code:     0,
			stdout:   []string{`the event stream is refused: too_many_subscribers`, `status polling`, `its status: intent \S+ ended in success`, `Everything went as expected`},
			verified: 2,
			outcomes: []intentd.State{intentd.StateSuccess, intentd.StateFailure},
		},
		{name: "server unreachable", code: 3, stderr: "cannot reach http://127.0.0.1:1"},
		{name: "an argument", args: []string{"now"}, code: 2, stderr: "want no arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server, serverKey := "http://127.0.0.1:1", ""
			if tc.catalog != nil {
				limit := 0
				if tc.full {
					limit = 1
				}
				server = startServerWith(t, tc.catalog(t), limit)
				cl, err := client.NewClient(server)
				if err != nil {
					t.Fatal(err)
				}
				if tc.full {
					stream, err := cl.Events(t.Context(), client.StreamOptions{})
					if err != nil {
						t.Fatal(err)
					}
					defer stream.Close()
				}
				pub, err := cl.PublicKey(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				serverKey = crypto.EncodeBase58(pub)
			}
			r := runCLI(t, server, append([]string{"demo"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, re := range tc.stdout {
				if !regexp.MustCompile(re).MatchString(r.stdout) {
					t.Errorf("stdout does not match %q:\n%s", re, r.stdout)
				}
			}
			if tc.stderr != "" && !regexp.MustCompile(tc.stderr).MatchString(r.stderr) {
				t.Errorf("stderr does not match %q:\n%s", tc.stderr, r.stderr)
			}
			if testing.Verbose() {
				t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
			if tc.code == 0 && r.stderr != "" {
				t.Errorf("stderr of a run that went well:\n%s", r.stderr)
			}
			if tc.catalog == nil {
				return
			}
			if n := strings.Count(r.stdout, "proof verified: signed by key "+serverKey+" "); n != tc.verified {
				t.Errorf("%d proofs said verified under the server's key %s, want %d:\n%s", n, serverKey, tc.verified, r.stdout)
			}
			// The ids and outcomes printed are the server's. Outcomes are printed as
			// they come, which, read by polling, need not be the order of the cases.
			var ids []string
			printed := map[string]intentd.State{}
			inOrder := slices.Contains(tc.args, "--json") // the report lists the cases in order
			if inOrder {
				var rep demoReport
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
					t.Fatalf("--json output: %v\n%s", err, r.stdout)
				}
				for _, dc := range rep.Intents {
					if dc.Verified == nil || !dc.Verified.KeyTrusted || dc.Verified.PublicKey != serverKey {
						t.Errorf("intent %s: proof %+v, want one verified under the server's key", dc.ID, dc.Verified)
					}
					ids = append(ids, dc.ID)
				}
			} else {
				for _, m := range outcomeRE.FindAllStringSubmatch(r.stdout, -1) {
					ids = append(ids, m[1])
					printed[m[1]] = intentd.State(m[2])
				}
			}
			if len(ids) != len(tc.outcomes) {
				t.Fatalf("%d intents reported, want %d:\n%s", len(ids), len(tc.outcomes), r.stdout)
			}
			cl, _ := client.NewClient(server)
			var got []intentd.State
			for _, id := range ids {
				st, err := cl.Status(t.Context(), id)
				if err != nil {
					t.Fatalf("status of %s: %v", id, err)
				}
				if p, ok := printed[id]; ok && p != st.State {
					t.Errorf("intent %s printed as %s, and is %s on the server", id, p, st.State)
				}
				got = append(got, st.State)
			}
			want := slices.Clone(tc.outcomes)
			if !inOrder {
				slices.Sort(got)
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Errorf("the intents are %v on the server, want %v", got, want)
			}
		})
	}
}

// TestDemoPolicyIsTheDocumented keeps the demo's policy the example that
// docs/policy-language.md explains and docs/evidence.md checks the catalog against.
func TestDemoPolicyIsTheDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "policy-language.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "## An example\n\n```\n")
	if !ok {
		t.Fatal("docs/policy-language.md has no example block under ## An example")
	}
	doc, _, _ := strings.Cut(after, "```\n")
	if doc != demoPolicySource {
		t.Fatalf("the demo policy differs from the documented one:\n--- docs\n%s--- demo\n%s", doc, demoPolicySource)
	}
}
