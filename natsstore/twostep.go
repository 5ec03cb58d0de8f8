package natsstore

import (
	"context"
	"fmt"
	"time"

	"github.com/intentd/intentd"
)

// Two writes of the store take two steps: a policy delete writes its tombstone, then
// puts the policy back if an intent created before the tombstone names it; a create
// writes its intent, then withdraws it if a delete of its policy came first. Once the
// first step is written the second must follow, or an open intent is left naming a
// deleted policy, which can then never be proved. So the second step runs on a context
// the caller cannot cancel, and is tried again while the servers do not answer.

// secondStepFor bounds a second step, all its tries: long enough for a NATS leader's
// election (4 to 9 s) and a reconnect, short enough that a caller is answered.
const secondStepFor = 30 * time.Second

// Test hooks: testHookDelete runs at the named points of a policy delete,
// testHookAfterCreate between a create's write and its second look at its policy.
var (
	testHookDelete      func(point string)
	testHookAfterCreate func()
)

// secondStep runs step, the second step of a two-step write, on ctx's values but not
// its cancellation, each try bounded and answered as a call of its own, until it is
// done, fails for another reason than the servers not answering, or secondStepFor has
// passed.
func (s *Store) secondStep(ctx context.Context, step func(context.Context) error) error {
	base := context.WithoutCancel(ctx)
	deadline := time.Now().Add(secondStepFor)
	for {
		try, cancel, err := s.begin(base)
		if err == nil {
			err = s.answer(try, step(try))
			cancel()
		}
		if intentd.ErrorCode(err) != intentd.CodeStoreUnavailable || time.Now().After(deadline) {
			return err
		}
		// A closed store ends the loop: begin refuses with ErrStoreClosed.
		time.Sleep(250 * time.Millisecond)
	}
}

// restoreIfInUse is a delete's second step: once the store has followed the stream to
// the tombstone at seq, the policy whose last record before it was data is put back if
// an intent created before the tombstone names it, and the delete is refused.
func (s *Store) restoreIfInUse(ctx context.Context, id string, seq uint64, data []byte) error {
	if err := s.waitApplied(ctx, seq); err != nil {
		return err
	}
	if !s.inUse(id, seq) {
		return nil
	}
	bytecode, source, err := decodePolicy(id, data)
	if err != nil {
		return err
	}
	back, err := s.publish(ctx, policyMsg(s.policySubject(id), seq, bytecode, source))
	if isWrongSeq(err) {
		// A try of this step before, whose answer was lost, may have put it back.
		if ps, perr := s.policyState(ctx, id, true); perr == nil && ps.live {
			return intentd.ErrPolicyInUse
		}
	}
	if err != nil {
		return fmt.Errorf("restore policy %s after a refused delete: %w", id, err)
	}
	s.setPolicy(id, policyState{seq: back, live: true})
	return intentd.ErrPolicyInUse
}
