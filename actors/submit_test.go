package actors

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
)

// TestSubmitChecks checks that SubmitIntent runs the caller's checks on its decoding of
// the intent, in order, stops at the first refusal, returns it as it is and stores
// nothing; and that an intent which does not decode never reaches them.
func TestSubmitChecks(t *testing.T) {
	h := newHarness(t, nil)
	refusal := Errorf(KindUnprocessable, "limit_exceeded", "too big")
	var seen []string
	record := func(name string, err error) func(Intent) error {
		return func(in Intent) error {
			if in.PolicyID != h.policy || in.Attrs == nil || len(*in.Attrs) != 2 {
				t.Errorf("check %s got %+v, not the decoded intent", name, in)
			}
			seen = append(seen, name)
			return err
		}
	}
	for _, tc := range []struct {
		name   string
		checks []func(Intent) error
		want   error
		seen   []string
	}{
		{"all pass", []func(Intent) error{record("a", nil), record("b", nil)}, nil, []string{"a", "b"}},
		{"second refuses", []func(Intent) error{record("a", nil), record("b", refusal), record("c", nil)}, refusal, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			id := uuid.NewString()
			raw := h.intentJSON(id, "M", 2500)
			auth, err := crypto.SignEd25519(h.key, raw)
			if err != nil {
				t.Fatal(err)
			}
			err = h.e.SubmitIntent(context.Background(), raw, auth, tc.checks...)
			if err != tc.want { // returned as it is, not wrapped
				t.Fatalf("SubmitIntent = %v, want %v", err, tc.want)
			}
			if !slices.Equal(seen, tc.seen) {
				t.Fatalf("checks run: %v, want %v", seen, tc.seen)
			}
			_, err = h.e.GetIntent(context.Background(), id)
			if stored := err == nil; stored != (tc.want == nil) {
				t.Fatalf("stored = %v after SubmitIntent returned %v", stored, tc.want)
			}
		})
	}

	t.Run("not decoded", func(t *testing.T) {
		called := false
		err := h.e.SubmitIntent(context.Background(), []byte(`{"id":1}`), crypto.Authorship{},
			func(Intent) error { called = true; return nil })
		if ErrorCode(err) != CodeInvalidIntent || called {
			t.Fatalf("SubmitIntent = %v, check called %v; want invalid_intent and no check", err, called)
		}
	})
}
