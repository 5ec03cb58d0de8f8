package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
)

// demoCatalogWith is the demo catalog with some products' evidence changed.
func demoCatalogWith(t *testing.T, change func(map[string]map[string]any)) evidence.Extractor {
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

// demoOutcomeRE finds the outcomes the demo prints.
var demoOutcomeRE = regexp.MustCompile(`intent ([0-9a-f-]{36}) ended in (\w+)`)

// demoTestCase is one run of the demo against a server of one catalog.
type demoTestCase struct {
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
}

// demoTestCases are the catalogs that make the demo go as the documentation says, or not.
func demoTestCases() []demoTestCase {
	return []demoTestCase{
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
				return demoCatalogWith(t, func(c map[string]map[string]any) { c[demoPasses]["in_stock"] = false })
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
				return demoCatalogWith(t, func(c map[string]map[string]any) { c[demoFails]["price_cents"] = 1000 })
			},
			code:     1,
			stderr:   `ended in success, expected failure`,
			verified: 2,
			outcomes: []intentd.State{intentd.StateSuccess, intentd.StateSuccess},
		},
		{
			name: "the products missing",
			catalog: func(t *testing.T) evidence.Extractor {
				return demoCatalogWith(t, func(c map[string]map[string]any) { delete(c, demoPasses); delete(c, demoFails) })
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
}

// TestDemo runs intentctl demo against servers whose catalogs make it go as the
// documentation says, or not, and checks what it claims against the server.
func TestDemo(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	for _, tc := range demoTestCases() {
		t.Run(tc.name, func(t *testing.T) { runDemoCase(t, tc) })
	}
}

// runDemoCase runs the demo once and checks its exit code and output, then what it
// claims against the server.
func runDemoCase(t *testing.T, tc demoTestCase) {
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

	if tc.catalog != nil {
		checkDemoClaims(t, tc, server, serverKey, r)
	}
}

// checkDemoClaims checks the proofs the demo says it verified and the outcomes it
// printed against the server.
func checkDemoClaims(t *testing.T, tc demoTestCase, server, serverKey string, r result) {
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
		for _, m := range demoOutcomeRE.FindAllStringSubmatch(r.stdout, -1) {
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
}
