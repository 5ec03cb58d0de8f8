package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd/crypto"
	iproof "github.com/intentd/intentd/proof"
	"github.com/intentd/intentd/tlog"
)

// cosigner is a witness in memory that cosigns every checkpoint it is sent, with
// torchwood's cosignature signer: what intentctl checks is the cosignatures, not how
// the witness decided to give them (the server's tests run real witnesses).
type cosigner struct {
	name   string
	signer *torchwood.CosignatureSigner
	srv    *httptest.Server
}

func newCosigner(t *testing.T, name string) *cosigner {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := torchwood.NewCosignatureSigner(name+".example", priv)
	if err != nil {
		t.Fatal(err)
	}
	c := &cosigner{name: name, signer: s}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, signed, _ := bytes.Cut(body, []byte("\n\n"))
		text, _, _ := bytes.Cut(signed, []byte("\n\n"))
		out, err := note.Sign(&note.Note{Text: string(text) + "\n"}, s)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, sigs, _ := bytes.Cut(out, []byte("\n\n"))
		w.Write(sigs)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// policyOf is a tlog-policy of the witnesses with the quorum line given.
func policyOf(quorum string, ws ...*cosigner) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "witness %s %s %s\n", w.name, w.signer.Verifier().String(), w.srv.URL)
	}
	return b.String() + quorum + "\n"
}

// TestLogPolicy checks --log-policy of verify and log watch: a checkpoint cosigned by
// two of three witnesses passes a 2-of-3 policy and is refused, with exit 4, by a
// policy that needs all three.
func TestLogPolicy(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	ws := []*cosigner{newCosigner(t, "w1"), newCosigner(t, "w2"), newCosigner(t, "w3")}
	ws[2].srv.Close() // down: it cosigns nothing
	dir := t.TempDir()
	twoOfThree := filepath.Join(dir, "two.policy")
	all := filepath.Join(dir, "all.policy")
	if err := os.WriteFile(twoOfThree, []byte(policyOf("group g 2 w1 w2 w3\nquorum g", ws...)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(all, []byte(policyOf("group g all w1 w2 w3\nquorum g", ws...)), 0o644); err != nil {
		t.Fatal(err)
	}
	policy, err := iproof.ParsePolicy([]byte(policyOf("group g 2 w1 w2 w3\nquorum g", ws...)))
	if err != nil {
		t.Fatal(err)
	}
	srv := startLogServerWith(t, filepath.Join(dir, "srv"), func(o *tlog.Options) {
		o.Witnesses, o.WitnessInterval = policy, 50*time.Millisecond
	})
	r := runCLI(t, srv.url, "demo", "--wait", "10s")
	if r.code != 0 {
		t.Fatalf("demo: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := regexp.MustCompile(`intent ([0-9a-f-]{36}) ended in success`).FindStringSubmatch(r.stdout)
	if id == nil {
		t.Fatalf("no intent id in the demo's account:\n%s", r.stdout)
	}
	key, err := crypto.NewSigningKey(logKeySeed)
	if err != nil {
		t.Fatal(err)
	}
	pub := crypto.EncodeBase58(key.PublicKey())
	bundle := filepath.Join(dir, "p.json")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r := runCLI(t, srv.url, "proof", id[1], "-o", bundle); r.code != 0 {
			t.Fatalf("proof: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		b, _ := os.ReadFile(bundle)
		if bytes.Contains(b, []byte(`"quorum_met": true`)) || bytes.Contains(b, []byte(`"quorum_met":true`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proof never had its quorum:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}

	tests := []struct {
		name string
		args []string
		code int
		out  string // in stdout on success, in stderr on failure
	}{
		{"verify, 2 of 3", []string{"verify", bundle, "--key", pub, "--log-policy", twoOfThree}, 0, "witnessed  cosigned by w1, w2, as the policy's quorum asks"},
		{"verify, all 3", []string{"verify", bundle, "--key", pub, "--log-policy", all}, exitVerify, "check witnesses: the checkpoint is cosigned by only w1, w2"},
		{"verify, no policy file", []string{"verify", bundle, "--log-policy", filepath.Join(dir, "none")}, exitUsage, "--log-policy"},
		{"watch, 2 of 3", []string{"log", "watch", "--once", "--state", filepath.Join(dir, "s1.json"), "--log-policy", twoOfThree}, 0, "first seen"},
		{"watch, all 3", []string{"log", "watch", "--once", "--state", filepath.Join(dir, "s2.json"), "--log-policy", all}, exitVerify, "refused: the checkpoint is cosigned by only w1, w2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, srv.url, tt.args...)
			got := r.stdout
			if tt.code != 0 {
				got = r.stderr
			}
			if r.code != tt.code || !strings.Contains(got, tt.out) {
				t.Fatalf("exit %d, want %d with %q\n%s%s", r.code, tt.code, tt.out, r.stdout, r.stderr)
			}
		})
	}
}
