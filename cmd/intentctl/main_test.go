package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/persistence"
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
	e, opts := newTestEngine(t, ex, maxSubscribers)
	for _, f := range tune {
		f(&opts)
	}
	ts := httptest.NewServer(intenthttp.NewServer(e, opts))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL
}

// newTestEngine opens an engine on a data folder of the test's, signing receipts, and
// returns it with the server options that name its key; the test's end closes both.
func newTestEngine(t *testing.T, ex evidence.Extractor, maxSubscribers int) (*actors.Engine, intenthttp.Options) {
	t.Helper()
	e, _, opts := newTestEngineStore(t, ex, maxSubscribers)
	return e, opts
}

// newTestEngineStore is newTestEngine that also returns the store the engine is over,
// for what a test builds beside the engine on it (webhook deliveries).
func newTestEngineStore(t *testing.T, ex evidence.Extractor, maxSubscribers int) (*actors.Engine, *persistence.Store, intenthttp.Options) {
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
	// Registered first, so run after the server's own clean-up.
	t.Cleanup(func() {
		e.Close()
		store.Close()
	})
	<-e.Ready()
	return e, store, intenthttp.Options{Info: intentd.Info{
		PublicKey: crypto.EncodeBase58(key.PublicKey()), KeyID: key.ID(),
	}}
}

// result is one run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

// wantInOrder fails t unless out holds each of want, in that order.
func wantInOrder(t testing.TB, out string, want []string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks %q (in order):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
}

func runCLI(t testing.TB, server string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	all := append([]string{"--server", server, "--timeout", "10s"}, args...)
	code := run(all, &out, &errOut)
	return result{code, out.String(), errOut.String()}
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
