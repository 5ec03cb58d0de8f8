package natsstore

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/intentd/intentd"
)

type policyState struct {
	seq  uint64 // of the last record on the policy's subject, 0 for none
	live bool
}

// PutPolicy stores a compiled policy. The bytecode goes first, on a subject of its own
// that deletes never touch, so that a stored policy always has its bytecode; the record
// is then written against the sequence read, so that of two racing writers one stores it
// and the other finds it stored.
func (s *Store) PutPolicy(ctx context.Context, id string, bytecode, source []byte) (created bool, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return false, err
	}
	defer end(&err)
	for range 5 {
		// Read from the stream, not the index: the index follows it a window behind,
		// and a delete another node wrote within the window would be taken for a
		// policy still stored.
		ps, err := s.policyState(ctx, id, true)
		if err != nil {
			return false, err
		}
		if ps.live {
			return false, nil
		}
		if _, err := s.publish(ctx, bytecodeMsg(s.bytecodeSubject(id), bytecode)); err != nil {
			return false, err
		}
		seq, err := s.publish(ctx, policyMsg(s.policySubject(id), ps.seq, bytecode, source))
		if isWrongSeq(err) {
			continue // another writer was first: read what it wrote
		}
		if err != nil {
			return false, err
		}
		s.setPolicy(id, policyState{seq: seq, live: true})
		return true, nil
	}
	return false, fmt.Errorf("put policy %s: too many concurrent writers", id)
}

// policyState reports a policy's last record, from memory unless asked to read it.
func (s *Store) policyState(ctx context.Context, id string, fresh bool) (policyState, error) {
	if !fresh {
		s.mu.Lock()
		ps, ok := s.policies[id]
		s.mu.Unlock()
		if ok {
			return ps, nil
		}
	}
	m, err := s.last(ctx, s.policySubject(id))
	if errors.Is(err, intentd.ErrNotFound) {
		return policyState{}, nil
	}
	if err != nil {
		return policyState{}, err
	}
	ps := policyState{seq: m.Sequence, live: !isTombstone(m.Header)}
	s.setPolicy(id, ps)
	return ps, nil
}

// setPolicy records a policy's state unless a newer one is known.
func (s *Store) setPolicy(id string, ps policyState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.policies[id]; ok && cur.seq >= ps.seq {
		return
	}
	s.policies[id] = ps
	s.noteTombstone(id, ps.seq, !ps.live)
}

// Policy returns a stored policy's bytecode and source.
func (s *Store) Policy(ctx context.Context, id string) (bytecode, source []byte, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer end(&err)
	m, err := s.last(ctx, s.policySubject(id))
	if err != nil {
		return nil, nil, err
	}
	if isTombstone(m.Header) {
		return nil, nil, intentd.ErrNotFound
	}
	return decodePolicy(id, m.Data)
}

// PolicyBytecode returns the bytecode of a policy that is or once was stored; deletes
// leave it, for the proofs of the intents that named the policy.
func (s *Store) PolicyBytecode(ctx context.Context, id string) (bytecode []byte, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	m, err := s.last(ctx, s.bytecodeSubject(id))
	if err != nil {
		return nil, err
	}
	return m.Data, nil
}

// DeletePolicy removes a policy unless an open or processing intent names it.
//
// Creates and deletes meet in the stream's one order. The delete writes a tombstone on
// the policy's subject, waits until this store has followed the stream up to it, so that
// every intent written before it is in the index, and then looks for references. If it
// finds one, it writes the policy back and reports ErrPolicyInUse. A create that comes
// after the tombstone in the stream finds it when it checks (see CreateIntent) and
// withdraws its intent, so no intent is ever kept against a deleted policy.
func (s *Store) DeletePolicy(ctx context.Context, id string) (err error) {
	release, err := s.useIndex(ctx)
	if err != nil {
		return err
	}
	defer release()
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	for range 5 {
		m, err := s.last(ctx, s.policySubject(id))
		if err != nil {
			return err
		}
		if isTombstone(m.Header) {
			return intentd.ErrNotFound
		}
		if s.inUse(id, math.MaxUint64) {
			// The index may lag the stream: a write of this store is applied to it just
			// after it is acknowledged, and a reader may have seen the write in between.
			// Caught up with the stream, the index is asked again.
			if err := s.catchUp(ctx); err != nil {
				return err
			}
			if s.inUse(id, math.MaxUint64) {
				// Known in use: refused without a write, so that a refused delete
				// leaves the stream as it was.
				return intentd.ErrPolicyInUse
			}
		}
		if s.beforeFirstStep != nil {
			s.beforeFirstStep()
		}
		seq, err := s.publish(ctx, tombstoneMsg(s.policySubject(id), m.Sequence, m.Data))
		if isWrongSeq(err) {
			continue
		}
		if err != nil {
			return err
		}
		s.setPolicy(id, policyState{seq: seq})
		if s.afterFirstStep != nil {
			s.afterFirstStep()
		}
		// The tombstone is written: whatever becomes of the caller, the policy is put
		// back if an intent created before it names it.
		return s.secondStep(ctx, func(ctx context.Context) error { return s.restoreIfInUse(ctx, id, seq, m.Data) })
	}
	return fmt.Errorf("delete policy %s: too many concurrent writers", id)
}

// inUse reports whether an open or processing intent created before the tombstone at
// seq names the policy. One created after it is the create's to withdraw.
func (s *Store) inUse(policy string, tombstone uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.intents {
		if e.policy == policy && e.phase != phaseDone && e.created < tombstone {
			return true
		}
	}
	return false
}
