package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd"
)

// testNonces holds a store to SpendNonce: a nonce is taken once per key, by exactly one
// of many racing callers, still after a reopen, and again once its time has passed.
func testNonces(t *testing.T, open func(*testing.T) Store) {
	s := open(t)
	until := time.Now().Add(5 * time.Minute)
	for _, tc := range []struct {
		name, key, nonce string
		want             error
	}{
		{"first spend", "K1", "n1", nil},
		{"the same nonce again", "K1", "n1", intentd.ErrNonceSpent},
		{"the same nonce of another key", "K2", "n1", nil},
		{"another nonce of the key", "K1", "n2", nil},
		{"a nonce that runs into the key", "K1n", "1", nil},
	} {
		if err := s.SpendNonce(ctx, tc.key, tc.nonce, until); !errors.Is(err, tc.want) && err != tc.want {
			t.Errorf("%s: SpendNonce(%s, %s) = %v, want %v", tc.name, tc.key, tc.nonce, err, tc.want)
		}
	}

	t.Run("racing callers", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() { errs[i] = s.SpendNonce(ctx, "K3", "raced", until) })
		}
		wg.Wait()
		taken := 0
		for _, err := range errs {
			switch {
			case err == nil:
				taken++
			case !errors.Is(err, intentd.ErrNonceSpent):
				t.Errorf("a racing spend failed: %v", err)
			}
		}
		if taken != 1 {
			t.Errorf("%d racing callers took the nonce, want 1", taken)
		}
	})

	if err := s.SpendNonce(ctx, "K4", "short", time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t)
	defer s.Close()
	if err := s.SpendNonce(ctx, "K1", "n1", until); !errors.Is(err, intentd.ErrNonceSpent) {
		t.Errorf("after a reopen, a spent nonce: %v, want ErrNonceSpent", err)
	}

	t.Run("expired", func(t *testing.T) {
		// A nonce whose time passed may be recorded again: it goes from the store. The
		// wait is generous: a NATS server drops records by TTL on a timer.
		deadline := time.Now().Add(15 * time.Second)
		for {
			err := s.SpendNonce(ctx, "K4", "short", time.Now().Add(time.Minute))
			if err == nil {
				return
			}
			if !errors.Is(err, intentd.ErrNonceSpent) {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatal(fmt.Errorf("a nonce spent until 1 s later is still spent after 15 s"))
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
