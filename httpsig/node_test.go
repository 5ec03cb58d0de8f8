package httpsig_test

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd/httpsig"
	"github.com/mr-tron/base58"
)

// nodeSigVersion is the version of the npm package http-message-signatures that the
// foreign-signer test installs.
const nodeSigVersion = "1.0.6"

// received is what the test server saw of one request, and what Verify said.
type received struct {
	header   http.Header
	host     string
	path     string
	body     []byte
	verified *httpsig.Verified
	err      error
}

// TestNodeSigner has an agent that intentd did not write, Node.js with the npm package
// http-message-signatures (testdata/sign.mjs), sign proposals with Ed25519 and send
// them to a server that runs Verify; then it changes the body of one it received and
// checks that the change is refused. The package is installed from the npm registry
// into a temporary folder.
func TestNodeSigner(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: it installs http-message-signatures from the npm registry")
	}
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("skipped: Node.js and npm are not installed (Debian: apt-get install nodejs npm); the foreign signer needs them")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"node-signer","private":true,"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "http-message-signatures@"+nodeSigVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install http-message-signatures@%s: %v\n%s", nodeSigVersion, err, out)
	}
	script, err := os.ReadFile("testdata/sign.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sign.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var last received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		v, err := httpsig.Verify(r, body, time.Now(), httpsig.Options{})
		mu.Lock()
		last = received{header: r.Header.Clone(), host: r.Host, path: r.URL.Path, body: body, verified: v, err: err}
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	k := key("node agent")
	for _, c := range []struct {
		name, seed, tag string
	}{
		{"hex seed", hex.EncodeToString(k.Seed()), ""},
		{"Base58 seed and tag", base58.Encode(k.Seed()), "agent-payer-auth"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"sign.mjs", srv.URL + "/intents/7Yh3kq/proposal", c.seed, string(proposal)}
			if c.tag != "" {
				args = append(args, c.tag)
			}
			run := exec.CommandContext(ctx, node, args...)
			run.Dir = dir
			var stderr strings.Builder
			run.Stderr = &stderr
			out, err := run.Output()
			if err != nil {
				t.Fatalf("node sign.mjs: %v\n%s", err, stderr.String())
			}
			mu.Lock()
			got := last
			mu.Unlock()
			// The script prints the status, then the body, empty here.
			if status, _, _ := strings.Cut(string(out), "\n"); status != "200" {
				t.Fatalf("the server answered %s to the Node-signed request: %v\nSignature-Input: %s", status, got.err, got.header.Get("Signature-Input"))
			}
			v := got.verified
			if v.KeyID != keyID(k) || v.Tag != c.tag || v.Label != "sig1" || v.Expires.Sub(v.Created) != 300*time.Second {
				t.Fatalf("Verified = %+v", v)
			}
			t.Logf("Signature-Input: %s", got.header.Get("Signature-Input"))

			// The same request with another body: its Content-Digest no longer holds.
			r := httptest.NewRequest(http.MethodPost, got.path, strings.NewReader(""))
			r.Host, r.Header = got.host, got.header
			changed := []byte(strings.Replace(string(got.body), `"quantity":2`, `"quantity":20`, 1))
			_, err = httpsig.Verify(r, changed, time.Now(), httpsig.Options{})
			var e *httpsig.Error
			if !errors.As(err, &e) || e.Reason != httpsig.DigestMismatch {
				t.Fatalf("Verify of the changed body = %v, want a %s refusal", err, httpsig.DigestMismatch)
			}
			if _, err := httpsig.Verify(r, got.body, time.Now(), httpsig.Options{}); err != nil {
				t.Fatalf("Verify of the request as received: %v", err)
			}
		})
	}
}
