package persistence

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/intentd/intentd"
)

func (s *Store) loadPolicyIDs() error {
	s.policies = make(map[string]*atomic.Int64)
	return s.scan([]byte{prefixPolicy}, func(k, _ []byte) error {
		s.policies[string(k[1:])] = new(atomic.Int64)
		return nil
	})
}

// PutPolicy stores a compiled policy under its id. Storing an id that exists changes
// nothing and reports created false: the id is the hash of the bytecode, so the bytecode
// is the same.
func (s *Store) PutPolicy(_ context.Context, id string, bytecode, source []byte) (created bool, err error) {
	s.policyMu.Lock()
	defer s.policyMu.Unlock()
	if s.policies[id] != nil {
		return false, nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	b.Set(key(prefixPolicy, id), policyRecord(bytecode, source), nil)
	b.Set(key(prefixBytecode, id), bytecode, nil)
	if err := s.commit(b); err != nil {
		return false, err
	}
	s.policies[id] = new(atomic.Int64)
	return true, nil
}

// PolicyBytecode returns the bytecode of a policy that is or once was stored. A deleted
// policy's bytecode is kept, so that the proofs of the intents that named it can still
// be checked; it is a few kilobytes per distinct policy ever stored.
func (s *Store) PolicyBytecode(_ context.Context, id string) ([]byte, error) {
	return s.get(key(prefixBytecode, id))
}

// Policy returns a stored policy's bytecode and source.
func (s *Store) Policy(_ context.Context, id string) (bytecode, source []byte, err error) {
	rec, err := s.get(key(prefixPolicy, id))
	if err != nil {
		return nil, nil, err
	}
	return decodePolicy(id, rec)
}

// DeletePolicy removes a policy unless an open or processing intent names it. Right
// after Open it waits for the references of the stored intents to be counted.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	if s.beforeFirstStep != nil {
		s.beforeFirstStep()
	}
	select {
	case <-s.refsLoaded:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.refsErr != nil {
		return fmt.Errorf("delete policy %s: its references are not known: %w", id, s.refsErr)
	}
	// A group committed but not yet released would count its references still; a
	// delete holds finishes back for its own commit, one rare write.
	s.finishMu.Lock()
	defer s.finishMu.Unlock()
	s.policyMu.Lock()
	defer s.policyMu.Unlock()
	refs := s.policies[id]
	if refs == nil {
		return intentd.ErrNotFound
	}
	if refs.Load() > 0 {
		return intentd.ErrPolicyInUse
	}
	b := s.db.NewBatch()
	defer b.Close()
	b.Delete(key(prefixPolicy, id), nil)
	if err := s.commit(b); err != nil {
		return err
	}
	delete(s.policies, id)
	if s.afterFirstStep != nil {
		s.afterFirstStep()
	}
	return nil
}
