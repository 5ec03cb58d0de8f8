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

// A delete whose process ends between its steps (a crash, a kill, a connection lost
// for good) leaves its tombstone while an intent created before it names the policy:
// the second step never runs. Every node's follower reads every tombstone, and each
// node checks, once the tombstone is older than any second step can be, whether an open
// or processing intent created before it still names the policy, the condition that
// step checks. If one does, the node writes the policy back from the tombstone, against
// the tombstone's sequence, so that of all the nodes and the delete itself one writes
// it, once. A delete whose second step found no such intent, and succeeded, is never
// undone: an intent no longer open or processing never is again.
//
// A create whose process ends between its steps leaves its intent, written after the
// tombstone of a delete that did not see it, open while its policy is deleted. The same
// check finds it, an open intent created after the tombstone whose open record is still
// its last, and withdraws it, against that record, as the create's second step would
// have.

// repairAfter is how old a tombstone is, since this store first saw it, before the
// store puts its policy back: a second step ends within secondStepFor and one try
// (the store's time-out, 10 s by default), and a delete that was refused or that
// succeeded is not to be met half-way.
const repairAfter = 2 * secondStepFor

// tombstone is a policy's last record when it is a tombstone: its sequence, and when
// this store first saw it.
type tombstone struct {
	seq  uint64
	seen time.Time
}

// noteTombstone records, under s.mu, the policy's last record at seq: a tombstone to
// check later (repairStranded), or a record that ends any check of the policy.
func (s *Store) noteTombstone(id string, seq uint64, dead bool) {
	if !dead {
		delete(s.tombstones, id)
		return
	}
	if t, ok := s.tombstones[id]; !ok || t.seq < seq {
		s.tombstones[id] = tombstone{seq: seq, seen: time.Now()}
	}
}

// repairStranded puts back each policy whose tombstone is older than repairAfter while
// an open or processing intent created before it names the policy, withdraws the open
// intents created after it that name the policy, and forgets the tombstones that need
// nothing more. The index is caught up with the stream first, so that an intent
// finished or withdrawn since the tombstone is seen so.
func (s *Store) repairStranded(ctx context.Context, now time.Time) {
	after := s.repairAfter
	if after == 0 {
		after = repairAfter
	}
	s.mu.Lock()
	if s.partial {
		// A node that does not follow the intents leaves the repairs to the one that
		// keeps the index (scope.go); its tombstones wait, seen, should it keep it later.
		s.mu.Unlock()
		return
	}
	var due []string
	for id, t := range s.tombstones {
		if now.Sub(t.seen) >= after {
			due = append(due, id)
		}
	}
	s.mu.Unlock()
	if len(due) == 0 {
		return
	}
	if err := s.catchUp(ctx); err != nil {
		return // the servers do not answer: the next check tries again
	}
	for _, id := range due {
		s.mu.Lock()
		t, ok := s.tombstones[id]
		s.mu.Unlock()
		if !ok {
			continue
		}
		if s.inUse(id, t.seq) {
			if err := s.restoreStranded(ctx, id, t.seq); err != nil {
				s.log.Error("nats store: put back a policy whose delete was cut off between its steps", "policy", id, "error", err)
			}
			continue
		}
		if err := s.withdrawStranded(ctx, id, t.seq); err != nil {
			s.log.Error("nats store: withdraw an intent whose create was cut off between its steps", "policy", id, "error", err)
			continue
		}
		s.forgetTombstone(id, t.seq)
	}
}

// withdrawStranded withdraws the open intents created after policy id's tombstone at
// seq that name the policy, each against its open record, while the tombstone is the
// policy's last record: an intent that moved on since, or that its create withdrew,
// is left as it is.
func (s *Store) withdrawStranded(ctx context.Context, policy string, seq uint64) error {
	s.mu.Lock()
	var stranded []string
	for id, e := range s.intents {
		if e.policy == policy && e.phase == phaseOpen && e.created > seq && e.seq == e.created {
			stranded = append(stranded, id)
		}
	}
	s.mu.Unlock()
	if len(stranded) == 0 {
		return nil
	}
	if m, err := s.last(ctx, s.policySubject(policy)); err != nil || m.Sequence != seq {
		return err // nil: written since, and the check starts again from the stream
	}
	for _, id := range stranded {
		s.mu.Lock()
		e, ok := s.intents[id]
		var created uint64
		if ok {
			created = e.created
		}
		s.mu.Unlock()
		if !ok {
			continue
		}
		wseq, err := s.publish(ctx, withdrawnMsg(s.intentSubject(id), created))
		if isWrongSeq(err) {
			continue
		}
		if err != nil {
			return err
		}
		s.dropIntent(id, wseq)
		s.log.Warn("nats store: an intent created against a deleted policy was left open by a create cut off between its steps; it is withdrawn",
			"intent", id, "policy", policy)
	}
	return nil
}

// forgetTombstone stops checking the policy's tombstone at seq, unless a newer one came.
func (s *Store) forgetTombstone(id string, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tombstones[id]; ok && t.seq == seq {
		delete(s.tombstones, id)
	}
}

// restoreStranded writes policy id back from its tombstone at seq, against that
// tombstone: a write of another node or of the delete itself that came first leaves it
// refused, and the policy as that write left it.
func (s *Store) restoreStranded(ctx context.Context, id string, seq uint64) error {
	m, err := s.last(ctx, s.policySubject(id))
	if err != nil {
		return err
	}
	if m.Sequence != seq || !isTombstone(m.Header) {
		s.forgetTombstone(id, seq) // written since: the check starts again from the stream
		return nil
	}
	rec := m.Data
	if len(rec) == 0 {
		// A tombstone of an earlier version, which did not carry the policy: the
		// bytecode outlives deletes, the source is lost.
		bm, err := s.last(ctx, s.bytecodeSubject(id))
		if err != nil {
			return fmt.Errorf("read its bytecode: %w", err)
		}
		rec = policyRecord(bm.Data, nil)
	}
	bytecode, source, err := decodePolicy(id, rec)
	if err != nil {
		return err
	}
	back, err := s.publish(ctx, policyMsg(s.policySubject(id), seq, bytecode, source))
	if isWrongSeq(err) {
		s.forgetTombstone(id, seq)
		return nil
	}
	if err != nil {
		return err
	}
	s.setPolicy(id, policyState{seq: back, live: true})
	s.log.Warn("nats store: a policy delete was cut off between its steps while an intent named the policy; the policy is put back",
		"policy", id, "tombstone", seq)
	return nil
}
