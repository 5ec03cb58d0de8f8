package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/golden"
	"github.com/intentd/intentd/policy"
)

// TestPrintRequirements pins the lines status prints under an open intent: the
// residuals the evidence decides, then each constraint no evidence can make hold, with
// its reason; those that hold whatever the evidence are left out.
func TestPrintRequirements(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "tshirt.policy"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compile(string(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, attrs string }{
		{"docs", `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": ["red", "navy"]}}, "max_price_cents": {"Int": 3000}}}`},
		{"no colors", `{"fields": {"size": {"String": "M"}, "colors": {"Set": {"String": []}}, "max_price_cents": {"Int": 3000}, "brands": {"Set": {"String": ["Acme"]}}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := policy.DecodeAttrs([]byte(tc.attrs))
			if err != nil {
				t.Fatal(err)
			}
			r := p.Requirements(a)
			var out bytes.Buffer
			printRequirements(&out, &intentd.Requirements{PolicyID: p.ID(), Constraints: r.Constraints, Schema: r.Schema})
			golden.Check(t, filepath.Join("testdata", "requirements", tc.name+".golden"), out.String())
		})
	}
}
