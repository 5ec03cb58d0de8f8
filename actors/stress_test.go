package actors

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/storetest"
)

// TestRaceDeleteAgainstSubmit races the delete of a policy against the submission of an
// intent naming it, many times: one of them wins, never both, so no open intent is ever
// left without its policy.
func TestRaceDeleteAgainstSubmit(t *testing.T) {
	eachStore(t, func(t *testing.T, backend storetest.Backend) {
		rounds := 1000
		if testing.Short() || strings.HasSuffix(t.Name(), "/nats") {
			rounds = 100
		}
		testRaceDeleteAgainstSubmit(t, backend, rounds)
	})
}

func testRaceDeleteAgainstSubmit(t *testing.T, backend storetest.Backend, rounds int) {
	h := newHarnessOn(t, backend, func(c *Config) { c.Verify.AllowUnsigned = true })
	ctx := context.Background()
	wins := map[string]int{}
	for i := range rounds {
		src := fmt.Sprintf("name race_%d\nparameters { size: string  max_price_cents: int }\nrequires { parameters.max_price_cents > 0; }\n", i)
		pid, err := h.e.PutPolicy(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		id := uuid.NewString()
		raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":1}}}}`, id, pid)
		var delErr, subErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); delErr = h.e.DeletePolicy(ctx, pid) }()
		go func() { defer wg.Done(); subErr = submitRaw(ctx, h.e, raw, crypto.Authorship{}) }()
		wg.Wait()
		switch {
		case delErr == nil && subErr == nil:
			t.Fatalf("round %d: the policy was deleted and an intent naming it was stored", i)
		case delErr == nil:
			if intentd.ErrorCode(subErr) != intentd.CodePolicyNotFound {
				t.Fatalf("round %d: submit after delete: %v", i, subErr)
			}
			wins["delete"]++
		case subErr == nil:
			if intentd.ErrorCode(delErr) != intentd.CodePolicyInUse {
				t.Fatalf("round %d: delete after submit: %v", i, delErr)
			}
			if _, err := h.e.Policy(ctx, pid); err != nil {
				t.Fatalf("round %d: an open intent names policy %s, which is gone: %v", i, pid, err)
			}
			wins["submit"]++
		default:
			t.Fatalf("round %d: both refused: delete %v, submit %v", i, delErr, subErr)
		}
	}
	t.Logf("%d rounds: %v", rounds, wins)
}

// TestRaceProposals sends two proposals for one intent at once, many times: exactly one
// is accepted.
func TestRaceProposals(t *testing.T) {
	eachStore(t, func(t *testing.T, backend storetest.Backend) {
		rounds := 1000
		if testing.Short() || strings.HasSuffix(t.Name(), "/nats") {
			rounds = 100
		}
		testRaceProposals(t, backend, rounds)
	})
}

func testRaceProposals(t *testing.T, backend storetest.Backend, rounds int) {
	h := newHarnessOn(t, backend, nil)
	for i := range rounds {
		id := h.submit("M", 2500)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for j := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[j] = proposeTo(h, id, "M-cheap") }()
		}
		wg.Wait()
		accepted := 0
		for _, err := range errs {
			switch {
			case err == nil:
				accepted++
			case intentd.ErrorCode(err) != intentd.CodeProposalExists:
				t.Fatalf("round %d: %v", i, err)
			}
		}
		if accepted != 1 {
			t.Fatalf("round %d: %d proposals accepted, want exactly 1", i, accepted)
		}
	}
}
