package actors

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/intentd/intentd/policy"
)

// TestPolicyCacheBound posts policies of every size up to the longest the source limit
// allows: the decoded-policy cache keeps within its bytes as well as its count, since a
// long policy holds tens of times its bytecode once decoded, and every policy cached is
// still served.
func TestPolicyCacheBound(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	long := func(i, terms int) string {
		return fmt.Sprintf("name long%d\nrequires { %d%s > 0; }\n", i, i, strings.Repeat(" + 1", terms))
	}
	var ids []string
	for i := range 60 {
		terms := (policy.MaxSourceBytes - 64) / len(" + 1")
		if i%6 == 0 {
			terms = i // small ones between the long
		}
		id, err := h.e.PutPolicy(ctx, long(i, terms))
		if err != nil {
			t.Fatalf("policy %d of %d terms: %v", i, terms, err)
		}
		ids = append(ids, id)
		h.e.policiesMu.RLock()
		n, bytes := len(h.e.policies), h.e.policyBytes
		sum := 0
		for _, p := range h.e.policies {
			sum += len(p.Bytecode())
		}
		h.e.policiesMu.RUnlock()
		if bytes != sum || bytes > maxCachedPolicyBytes || n > maxCachedPolicies {
			t.Fatalf("after policy %d: %d policies cached, counted as %d bytes of bytecode and holding %d, want at most %d",
				i, n, bytes, sum, maxCachedPolicyBytes)
		}
	}
	for _, i := range []int{0, 1, len(ids) / 2, len(ids) - 1} {
		if _, err := h.e.Policy(ctx, ids[i]); err != nil {
			t.Fatalf("policy %d: %v", i, err)
		}
	}
}
