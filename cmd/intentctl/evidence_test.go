package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/evidence"
)

// TestEvidenceFailure shows a failure the evidence could not decide apart from a
// violation, in status (text and JSON) and in the verified proof.
func TestEvidenceFailure(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	// The products lack their price: one is otherwise what the intent asks for, the
	// other is black, which the policy refuses whatever it costs.
	catalog := `{
  "sku:TEE-NO-PRICE": {"category": "t-shirt", "size": "M", "color": "navy", "brand": "acme", "shipping_cents": 0, "in_stock": true},
  "sku:BLACK-NO-PRICE": {"category": "t-shirt", "size": "M", "color": "black", "brand": "acme", "shipping_cents": 0, "in_stock": true}
}`
	if err := os.WriteFile(file("catalog.json"), []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file("tshirt.policy"), []byte(demoPolicySource), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := evidence.NewCatalog(file("catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	server := startServerWith(t, cat, 0)
	must := func(args ...string) string {
		t.Helper()
		r := runCLI(t, server, args...)
		if r.code != 0 {
			t.Fatalf("intentctl %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	must("keygen", "-o", file("alice.key"))
	policyID := strings.TrimSpace(must("policy", "push", file("tshirt.policy")))
	var info intentd.Info
	if err := json.Unmarshal([]byte(must("info", "--json")), &info); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		solution string
		status   string // a regular expression the text status must match
		json     string // one the JSON status must match
		verify   string // one the verify output must match
	}{
		{"missing price", "sku:TEE-NO-PRICE",
			`(?s)failure \(evidence\)  solution sku:TEE-NO-PRICE\n    evidence missing or ill-typed: price_cents\n    constraint 4 .*constraint 7 `,
			`(?s)"failure_kind": "evidence",.*"evidence_missing": \[\s*"price_cents"\s*\]`,
			`(?s)outcome    failure \(2 constraint failure\(s\)\)\n  kind       evidence\n  missing    price_cents \(absent or ill-typed in the evidence\)\n`},
		{"missing price beside a violation", "sku:BLACK-NO-PRICE",
			`(?s)failure \(constraints\)  solution sku:BLACK-NO-PRICE\n    evidence missing or ill-typed: price_cents\n    constraint 3 .*constraint 4 .*constraint 7 `,
			`(?s)"failure_kind": "constraints",.*"evidence_missing": \[\s*"price_cents"\s*\]`,
			`(?s)outcome    failure \(3 constraint failure\(s\)\)\n  kind       constraints\n  missing    price_cents `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := strings.TrimSpace(must("intent", "new", "--policy", policyID, "--key", file("alice.key"),
				"--attr", "size=M", "--attr", "colors=navy, black", "--attr", "max_price_cents=3000"))
			must("propose", id, tt.solution)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(must("status", id), " failure ") {
				if time.Now().After(deadline) {
					t.Fatalf("intent %s did not fail: %s", id, must("status", id))
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, c := range []struct {
				what, re string
				args     []string
			}{
				{"status", tt.status, []string{"status", id}},
				{"status --json", tt.json, []string{"status", "--json", id}},
			} {
				if out := must(c.args...); !regexp.MustCompile(c.re).MatchString(out) {
					t.Fatalf("%s does not match %q:\n%s", c.what, c.re, out)
				}
			}
			proofFile := file(id + ".proof")
			must("proof", id, "-o", proofFile)
			if out := must("verify", "--key", info.PublicKey, proofFile); !regexp.MustCompile(tt.verify).MatchString(out) {
				t.Fatalf("verify does not match %q:\n%s", tt.verify, out)
			}
		})
	}
}
