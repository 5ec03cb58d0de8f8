package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/proof"
)

// journeyStep is one command of the journey and what it must do.
type journeyStep struct {
	name   string
	args   func() []string
	code   int
	stdout string // a regular expression the output must match
	stderr string
	after  func(t *testing.T, r result)
	// offline steps run with a server that cannot be reached, to show they need none
	offline bool
}

// journey is what its steps share: the server, the folder of the files, and the values
// one step finds and later ones use.
type journey struct {
	t                   *testing.T
	server, dir         string
	ids                 map[string]string
	attrs               []string
	policyID, serverKey string
}

func newJourney(t *testing.T) *journey {
	j := &journey{t: t, server: startServer(t), dir: t.TempDir(),
		ids: map[string]string{
			"ed25519": "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31", "passkey": "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a32",
			"multisig": "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a33", "failing": "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a34",
		},
		attrs: []string{"--attr", "size=M", "--attr", "colors=navy, white", "--attr", "max_price_cents=3000"},
	}
	if err := os.WriteFile(j.file("tshirt.policy"), []byte(demoPolicySource), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j.file("broken.policy"), []byte("name broken\nrequires {\n  evidence.size == ;\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j *journey) file(name string) string { return filepath.Join(j.dir, name) }

// newIntent is the arguments of intent new for the intent id, with the journey's
// attributes and the policy found by an earlier step.
func (j *journey) newIntent(id string, extra ...string) func() []string {
	return func() []string {
		return append(append([]string{"intent", "new", "--policy", j.policyID, "--id", id}, j.attrs...), extra...)
	}
}

// static is arguments known before the journey starts.
func static(args ...string) func() []string { return func() []string { return args } }

// TestJourney runs every command against a real server, in the order a user would,
// from a fresh key to verified proofs, with the failures a user meets on the way.
func TestJourney(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	j := newJourney(t)
	var steps []journeyStep
	for _, part := range [][]journeyStep{j.keySteps(), j.policySteps(), j.intentSteps(), j.outcomeSteps(), j.proofSteps(), j.endSteps()} {
		steps = append(steps, part...)
	}
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) { j.run(t, st) }) {
			t.FailNow() // later steps build on this one
		}
	}

	// The server gone, every command that needs it says so with exit 3.
	t.Run("server unreachable", func(t *testing.T) {
		r := runCLI(t, "http://127.0.0.1:1", "status", j.ids["ed25519"])
		if r.code != 3 || !strings.Contains(r.stderr, "cannot reach http://127.0.0.1:1") {
			t.Fatalf("%+v, want exit 3 saying it cannot reach the server", r)
		}
	})
}

// run runs one step and checks its exit code and output.
func (j *journey) run(t *testing.T, st journeyStep) {
	at := j.server
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
}

// keySteps are the steps of the keys, made and refused.
func (j *journey) keySteps() []journeyStep {
	return []journeyStep{
		{"keygen", static("keygen", "-o", j.file("alice.key")), 0, `public key: .*alice\.key\.pub\n[1-9A-HJ-NP-Za-km-z]{43,44}\n`, "", func(t *testing.T, r result) {
			checkMode(t, j.file("alice.key"), 0o600)
			pub, _ := os.ReadFile(j.file("alice.key.pub"))
			if !strings.HasSuffix(r.stdout, string(crypto.StripComments(pub))) {
				t.Fatalf("printed key %q is not the .pub file's %q", r.stdout, pub)
			}
			if _, err := crypto.LoadSigningKey(j.file("alice.key")); err != nil {
				t.Fatalf("the key file is not in the service's key form: %v", err)
			}
		}, true},
		{"keygen never replaces a key", static("keygen", "-o", j.file("alice.key")), 1, "", "exists", nil, true},
		{"keygen passkey", static("keygen", "--passkey", "-o", j.file("bob.passkey")), 0, `bob\.passkey`, "", func(t *testing.T, r result) {
			checkMode(t, j.file("bob.passkey"), 0o600)
		}, true},
	}
}

// policySteps are the steps of the policy, checked here and stored.
func (j *journey) policySteps() []journeyStep {
	return []journeyStep{
		{"policy check", static("policy", "check", j.file("tshirt.policy")), 0, `^[1-9A-HJ-NP-Za-km-z]{43,44}\n`, "", func(t *testing.T, r result) {
			j.policyID, _, _ = strings.Cut(r.stdout, "\n")
		}, true},
		{"policy check shows a caret", static("policy", "check", j.file("broken.policy")), 1, "^$", `(?s)evidence\.size == ;\n\s*\^.*does not compile`, nil, true},
		{"policy push", static("policy", "push", j.file("tshirt.policy")), 0, "", "", func(t *testing.T, r result) {
			if got := strings.TrimSpace(r.stdout); got != j.policyID {
				t.Fatalf("pushed id %s, check said %s", got, j.policyID)
			}
		}, false},
		{"policy push refused", static("policy", "push", j.file("broken.policy")), 1, "^$", `policy_invalid`, nil, false},
		{"policy get", func() []string { return []string{"policy", "get", j.policyID} }, 0, `name tshirt_purchase_v1`, "", nil, false},
		{"policy get unknown", static("policy", "get", "11111111111111111111111111111111"), 1, "", `policy_not_found \(404`, nil, false},
	}
}

// intentSteps are the steps of intents, signed each way, and those refused.
func (j *journey) intentSteps() []journeyStep {
	return []journeyStep{
		{"info", static("info", "--json"), 0, `"public_key"`, "", func(t *testing.T, r result) {
			var info intentd.Info
			if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.PublicKey == "" {
				t.Fatalf("info --json: %v\n%s", err, r.stdout)
			}
			j.serverKey = info.PublicKey
		}, false},
		{"intent dry run", j.newIntent(j.ids["ed25519"], "--key", j.file("alice.key"), "--dry-run"), 0, `(?s)"Signed".*"Ed25519"`, "", func(t *testing.T, r result) {
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
		{"intent with Ed25519", j.newIntent(j.ids["ed25519"], "--key", j.file("alice.key")), 0, "^" + j.ids["ed25519"] + "\n$", "", nil, false},
		{"intent with a passkey", j.newIntent(j.ids["passkey"], "--passkey", j.file("bob.passkey")), 0, j.ids["passkey"], "", nil, false},
		{"intent with a multisig", j.newIntent(j.ids["multisig"], "--multisig", j.file("alice.key"), "--multisig", j.file("bob.passkey"), "--threshold", "2"), 0, j.ids["multisig"], "", nil, false},
		{"intent from the policy file", func() []string {
			return append([]string{"intent", "new", "--policy-file", j.file("tshirt.policy"), "--id", j.ids["failing"], "--key", j.file("alice.key")}, j.attrs...)
		}, 0, j.ids["failing"], "", nil, false},
		{"intent twice", j.newIntent(j.ids["ed25519"], "--key", j.file("alice.key")), 1, "", "intent_exists", nil, false},
		{"intent unsigned refused", j.newIntent("", "--unsigned"), 1, "", "unsigned_not_permitted", nil, false},
		{"intent wrong attribute type", func() []string {
			return []string{"intent", "new", "--policy", j.policyID, "--key", j.file("alice.key"), "--attr", "size=M", "--attr", "colors=navy", "--attr", "max_price_cents=cheap"}
		}, 2, "", `max_price_cents=cheap: want an int`, nil, false},
		{"intent missing attribute", func() []string {
			return []string{"intent", "new", "--policy", j.policyID, "--key", j.file("alice.key"), "--attr", "size=M"}
		}, 2, "", `missing: the policy requires parameter`, nil, false},
		{"intent two signers", j.newIntent("", "--key", j.file("alice.key"), "--unsigned"), 2, "", "exactly one of", nil, false},
	}
}

// outcomeSteps are the steps of proposals and their outcomes, followed on the stream.
func (j *journey) outcomeSteps() []journeyStep {
	return []journeyStep{
		{"status open", func() []string { return []string{"status", j.ids["ed25519"]} }, 0,
			`^` + j.ids["ed25519"] + ` open\n    the evidence must satisfy:\n      evidence.category in \{"polo", "t-shirt"\}\n      evidence.size == "M"\n      evidence.color in \{"navy", "white"\}\n`, "", nil, false},
		{"status open as JSON", func() []string { return []string{"status", "--json", j.ids["ed25519"]} }, 0, `^\{\n  "status": "open"\n\}\n$`, "", nil, false},
		{"proof not ready", func() []string { return []string{"proof", j.ids["ed25519"]} }, 1, "", "proof_not_ready", nil, false},
		{"propose", func() []string { return []string{"propose", j.ids["ed25519"], solutionPasses} }, 0, "processing", "", nil, false},
		{"propose the others", func() []string {
			for _, k := range []string{"passkey", "multisig"} {
				if r := runCLI(j.t, j.server, "propose", j.ids[k], solutionPasses); r.code != 0 {
					j.t.Fatalf("propose %s: %+v", k, r)
				}
			}
			return []string{"propose", j.ids["failing"], solutionFails}
		}, 0, "processing", "", nil, false},
		{"propose twice", func() []string { return []string{"propose", j.ids["ed25519"], solutionPasses} }, 1, "", "proposal_exists", nil, false},
		{"watch until all succeed", func() []string {
			return []string{"watch", "--intent", j.ids["ed25519"], "--intent", j.ids["passkey"], "--intent", j.ids["multisig"], "--until-terminal"}
		}, 0, `(?s)(#\d+|\(status\)) 6f1c.*all 3 watched intent\(s\) ended: 3 success\n$`, "", nil, false},
		{"watch until one fails", func() []string {
			return []string{"watch", "--intent", j.ids["ed25519"], "--intent", j.ids["failing"], "--until-terminal"}
		}, 5, `(?s)` + j.ids["failing"] + ` failure \(constraints\)  solution sku:PO-BLACK-L\n.*constraint 1 .*ended: 1 failure, 1 success`, "not all succeeded", nil, false},
		{"watch as JSON lines", func() []string {
			return []string{"watch", "--json", "--from", "0", "--intent", j.ids["failing"], "--until-terminal"}
		}, 5, `^\{"id":\d+,"outcome":\{"status":"failure"`, "", nil, false},
		{"watch needs intents to end", static("watch", "--until-terminal"), 2, "", "--intent", nil, false},
		{"status success", func() []string { return []string{"status", j.ids["ed25519"]} }, 0, j.ids["ed25519"] + ` success  solution ` + solutionPasses, "", nil, false},
		{"status as JSON", func() []string { return []string{"status", "--json", j.ids["failing"]} }, 0, `"failure_kind": "constraints"`, "", nil, false},
		{"get", func() []string { return []string{"get", j.ids["passkey"]} }, 0, `(?s)"intent".*"Passkey"`, "", nil, false},
	}
}

// proofSteps are the steps of the proofs, fetched and checked offline.
func (j *journey) proofSteps() []journeyStep {
	return []journeyStep{
		{"proof to a file", func() []string { return []string{"proof", j.ids["ed25519"], "-o", j.file("ok.proof")} }, 0, "wrote the proof", "", nil, false},
		{"proof of a failure", func() []string { return []string{"proof", j.ids["failing"], "-o", j.file("failing.proof")} }, 0, "", "", nil, false},
		{"proof of the multisig", func() []string { return []string{"proof", j.ids["multisig"]} }, 0, `^\{"receipt":`, "", func(t *testing.T, r result) {
			if _, err := proof.Verify([]byte(r.stdout), nil); err != nil {
				t.Fatalf("the bundle printed does not verify: %v", err)
			}
		}, false},
		{"verify", func() []string { return []string{"verify", j.file("ok.proof"), "--key", j.serverKey} }, 0, `(?s)verified: .*outcome    success.*author     Ed25519 .*trusted \(given with --key\)`, "", nil, true},
		{"verify a constraint failure", func() []string { return []string{"verify", "--key", j.serverKey, j.file("failing.proof")} }, 0,
			`(?s)outcome    failure \(3 constraint failure\(s\)\).*constraint 1 `, "", nil, true},
		{"verify without a key", static("verify", j.file("ok.proof")), 0, "NOT trusted", "", nil, true},
		{"verify under another key", func() []string {
			other, err := crypto.GenerateSigningKey()
			if err != nil {
				j.t.Fatal(err)
			}
			return []string{"verify", j.file("ok.proof"), "--key", crypto.EncodeBase58(other.PublicKey())}
		}, 4, "", "check key: the receipt is not signed by the key given with --key, [1-9A-HJ-NP-Za-km-z]{43,44} \\(key id [1-9A-HJ-NP-Za-km-z]+\\); it names key ", nil, true},
		{"verify a tampered file", func() []string {
			b, err := os.ReadFile(j.file("ok.proof"))
			if err != nil {
				j.t.Fatal(err)
			}
			tampered := strings.Replace(string(b), `"price_cents":1999`, `"price_cents":1899`, 1)
			if tampered == string(b) {
				j.t.Fatalf("the price is not in the bundle:\n%s", b)
			}
			if err := os.WriteFile(j.file("tampered.proof"), []byte(tampered), 0o644); err != nil {
				j.t.Fatal(err)
			}
			return []string{"verify", j.file("tampered.proof"), "--key", j.serverKey}
		}, 4, "^$", "verification FAILED: check evidence_digest: evidence digest does not match", nil, true},
		{"verify a bad key", static("verify", j.file("ok.proof"), "--key", "0OIl"), 2, "", "--key", nil, true},
	}
}

// endSteps are the steps of what is left: deleting the policy, and usage errors.
func (j *journey) endSteps() []journeyStep {
	return []journeyStep{
		{"policy delete", func() []string { return []string{"policy", "delete", j.policyID} }, 0, "deleted", "", nil, false},
		{"unknown command", static("frobnicate"), 2, "", "unknown command", nil, true},
		{"missing argument", static("propose", "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31"), 2, "", "want ID SOLUTION", nil, true},
		{"help", static("help"), 0, "Exit codes", "", nil, true},
	}
}
