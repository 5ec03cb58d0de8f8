package persistence

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// A policy named by an open or processing intent cannot be deleted. The store keeps no
// key of its own for that reference: the expiry index's entry of an open intent and the
// processing set's entry of a processing one hold the policy's id as their value, and
// the store counts each policy's references in memory, from a scan of those two
// indexes after Open and from every create and finish since.
//
// A key for each reference (r<policy id>\x00<intent id>, which earlier versions wrote)
// cost every create a third key at a random place of the key space, and every finish
// its deletion: a walk of the memtable's skip list, and bytes that the log and each
// compaction wrote again, about 6 µs of intake's CPU an intent and a sixth of the
// bytes it wrote (docs/benchmarks.md, "The twelfth pass"). Open moves such keys into
// the values once (migrateRefs).
//
// A finish releases one reference, so it is written once for each intent that was
// created: the intent's actor finishes only an open or processing intent, and Finish
// refuses an outcome over anything but a processing record and an expiry over one.

// refScan is the scan of the references stored before Open: iterators made before the
// first write, so that the references the scan counts and those counted by the writes
// after it never overlap.
type refScan struct {
	expiry, processing *pebble.Iterator
}

// openRefs moves the reference keys of earlier versions into the indexes' values, then
// opens the scan of the references stored.
func (s *Store) openRefs() (refScan, error) {
	if err := s.migrateRefs(); err != nil {
		return refScan{}, fmt.Errorf("open store: move the policy references into the indexes: %w", err)
	}
	var r refScan
	var err error
	if r.expiry, err = s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixExpiry}, UpperBound: []byte{prefixExpiry + 1}}); err != nil {
		return refScan{}, err
	}
	if r.processing, err = s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixProcessing}, UpperBound: []byte{prefixProcessing + 1}}); err != nil {
		r.expiry.Close()
		return refScan{}, err
	}
	return r, nil
}

// loadRefs counts the references of the intents stored before Open, then lets policy
// deletes go on. It runs beside the service, so that a store of a million open intents
// opens as fast as an empty one; only a policy delete waits for it.
func (s *Store) loadRefs(r refScan) {
	defer close(s.refsLoaded)
	counts := make(map[string]int64)
	var unnamed int64
	count := func(it *pebble.Iterator) error {
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			select {
			case <-s.closing:
				return intentd.ErrStoreClosed
			default:
			}
			if v := it.Value(); len(v) > 0 {
				counts[string(v)]++
			} else {
				unnamed++
			}
		}
		return it.Error()
	}
	err := count(r.expiry)
	if perr := count(r.processing); err == nil {
		err = perr
	}
	if err != nil {
		s.refsErr = err
		if errors.Is(err, intentd.ErrStoreClosed) {
			return
		}
		s.log.Error("policy references: cannot count them; policy deletes are refused until a restart", "err", err)
		return
	}
	s.policyMu.RLock()
	var orphans int64
	for id, n := range counts {
		if refs := s.policies[id]; refs != nil {
			refs.Add(n)
		} else {
			orphans += n
		}
	}
	s.policyMu.RUnlock()
	if unnamed > 0 || orphans > 0 {
		s.log.Warn("policy references: some open or processing intents name no stored policy",
			"without_a_policy_id", unnamed, "naming_a_missing_policy", orphans)
	}
}

// releaseRefs releases the references of a finished group.
func (s *Store) releaseRefs(group []*finishReq) {
	s.policyMu.RLock()
	defer s.policyMu.RUnlock()
	for _, r := range group {
		if refs := s.policies[r.policyID]; refs != nil {
			refs.Add(-1)
		}
	}
}

// migrateRefs moves the reference keys an earlier version wrote into the values of the
// expiry index and the processing set, and deletes them, in one batch: a store opened
// by this version holds either layout whole, never a mix.
func (s *Store) migrateRefs() error {
	policyOf := make(map[string]string) // intent id -> policy id
	err := s.scan([]byte{prefixRef}, func(k, _ []byte) error {
		policy, id, ok := bytes.Cut(k[1:], []byte{0})
		if ok {
			policyOf[string(id)] = string(policy)
		}
		return nil
	})
	if err != nil || len(policyOf) == 0 {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	moved := 0
	name := func(idAt int) func(k, _ []byte) error {
		return func(k, _ []byte) error {
			if len(k) < idAt {
				return nil
			}
			if policy, ok := policyOf[string(k[idAt:])]; ok {
				moved++
				return b.Set(bytes.Clone(k), []byte(policy), nil)
			}
			return nil
		}
	}
	if err := s.scan([]byte{prefixExpiry}, name(expiryIDAt)); err != nil {
		return err
	}
	if err := s.scan([]byte{prefixProcessing}, name(1)); err != nil {
		return err
	}
	if err := b.DeleteRange([]byte{prefixRef}, []byte{prefixRef + 1}, nil); err != nil {
		return err
	}
	if err := s.commit(b); err != nil {
		return err
	}
	s.log.Info("policy references moved into the expiry index and the processing set",
		"references", len(policyOf), "intents_named", moved)
	return nil
}
