package persistence

import (
	"sync"
	"sync/atomic"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cockroachdb/pebble"
)

// idFilter tells, from memory, that an intent id is certainly not stored, so a create of
// a new id — nearly every create — skips the read that would otherwise look for it on
// every level of the LSM tree. That read cost more than the rest of the write.
//
// It is a chain of Bloom filters, each twice the capacity of the one before, so it grows
// with the store: about 15 bits an id in the filters that are full, and as much again
// held for the last one. The first holds a million ids, 1.8 MB: a new id is looked for in
// every filter of the chain, each look a miss of the processor's caches or two, and a
// chain begun small spent them on filters that hold few ids (four filters at 850,000 ids
// when the first held 65,536; one now). Until Open's scan of the stored ids has ended it
// answers "maybe" for every id, and the caller reads the store as before.
type idFilter struct {
	mu      sync.RWMutex
	filters []*bloom.BloomFilter
	next    uint // capacity of the last filter
	n       uint // ids added to the last filter
	ready   atomic.Bool
}

const (
	idFilterFirst = 1 << 20
	// idFilterFP is each filter's false-positive rate. A chain of k filters answers
	// "maybe" wrongly for at most k times this; a false "maybe" costs only the read.
	idFilterFP = 0.001
)

func newIDFilter(first uint) *idFilter {
	return &idFilter{filters: []*bloom.BloomFilter{bloom.NewWithEstimates(first, idFilterFP)}, next: first}
}

// add records id. It is called before the id's write is committed, and by the scan of
// what is stored, so by the time the scan ends every stored id has been added.
func (f *idFilter) add(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == f.next {
		f.next *= 2
		f.filters = append(f.filters, bloom.NewWithEstimates(f.next, idFilterFP))
		f.n = 0
	}
	f.filters[len(f.filters)-1].AddString(id)
	f.n++
}

// mayBeStored is false only when id is certainly not stored.
func (f *idFilter) mayBeStored(id string) bool {
	if !f.ready.Load() {
		return true
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, b := range f.filters {
		if b.TestString(id) {
			return true
		}
	}
	return false
}

// loadIntentIDs adds every stored intent id to the filter, then lets it answer. It runs
// beside the service after Open, so a large store opens as fast as a small one; creates
// meanwhile read the store. An iterator sees what was committed before it was made, and
// every create adds its id before committing, so no id falls between the two.
func (s *Store) loadIntentIDs() {
	defer close(s.idsLoaded)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixIntent}, UpperBound: []byte{prefixIntent + 1}})
	if err != nil {
		s.log.Error("intent id filter: cannot scan the store; creates will read it", "err", err)
		return
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		select {
		case <-s.closing:
			return
		default:
		}
		s.ids.add(string(it.Key()[1:]))
	}
	if err := it.Error(); err != nil {
		s.log.Error("intent id filter: scan failed; creates will read the store", "err", err)
		return
	}
	s.ids.ready.Store(true)
}
