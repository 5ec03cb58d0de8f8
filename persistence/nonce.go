package persistence

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// nonceBook holds the spent nonces of agents' signatures. The unexpired ones are in
// memory, so that a spend is a look in a map; each is written to the database by the
// next write of the store, whichever it is, and the proposal a nonce came with is such
// a write: the nonce is durable no later than it. A spend costs no write of its own and
// no sync; a signed proposal costs little more than an unsigned one. A request refused
// after its nonce was spent (403, 409, 503) has its nonce written within flushAfter by
// a write of its own.
type nonceBook struct {
	mu      sync.Mutex
	loaded  bool
	closed  bool
	spent   map[[sha256.Size]byte]int64 // until, Unix nanoseconds
	pending []nonceRec                  // spent, not yet in a batch
	flush   *time.Timer
	swept   time.Time // when the expired ones last left the map and the database
}

type nonceRec struct {
	h     [sha256.Size]byte
	until int64
}

// flushAfter bounds how long a spent nonce waits for another write to take it along.
const flushAfter = time.Second

// sweepEvery is how often the expired nonces leave the map and the database.
const sweepEvery = 10 * time.Second

// SpendNonce records an agent signature's nonce until until: the look and the record
// are one step under the book's lock, so that of two proposals with one nonce exactly
// one is taken.
func (s *Store) SpendNonce(_ context.Context, key, nonce string, until time.Time) error {
	h := intentd.NonceDigest(key, nonce)
	now := time.Now()
	b := &s.nonces
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return intentd.ErrStoreClosed
	}
	if !b.loaded {
		if err := s.loadNonces(now); err != nil {
			return err
		}
	}
	if at, ok := b.spent[h]; ok && at > now.UnixNano() {
		return intentd.ErrNonceSpent
	}
	b.spent[h] = until.UnixNano()
	b.pending = append(b.pending, nonceRec{h: h, until: until.UnixNano()})
	if b.flush == nil {
		b.flush = time.AfterFunc(flushAfter, s.flushNonces)
	}
	return nil
}

// loadNonces reads the unexpired nonces into memory, once, at the first spend: a
// store that signs nothing pays nothing. They are about one window of signatures.
func (s *Store) loadNonces(now time.Time) error {
	b := &s.nonces
	b.spent = make(map[[sha256.Size]byte]int64)
	err := s.scan([]byte{prefixNonce}, func(k, v []byte) error {
		if len(k) != 1+sha256.Size || len(v) != 8 {
			return nil // not one this version wrote: it holds nothing back
		}
		if at := int64(binary.BigEndian.Uint64(v)); at > now.UnixNano() {
			b.spent[[sha256.Size]byte(k[1:])] = at
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.loaded = true
	return nil
}

// addNonces puts the pending nonces into a batch about to be committed (commit calls
// it). A batch that then fails leaves them in memory, spent, until a restart.
func (s *Store) addNonces(batch *pebble.Batch) {
	b := &s.nonces
	b.mu.Lock()
	pending := b.pending
	b.pending = nil
	b.mu.Unlock()
	for _, r := range pending {
		at := binary.BigEndian.AppendUint64(nil, uint64(r.until))
		batch.Set(append([]byte{prefixNonce}, r.h[:]...), at, nil)
		batch.Set(nonceEndKey(at, r.h), nil, nil)
	}
}

// flushNonces writes the nonces no other write took along, and drops from the map and
// the database those whose time has passed, every sweepEvery: off the path of a spend,
// which a walk of the map would hold for every nonce of the window.
func (s *Store) flushNonces() {
	b := &s.nonces
	b.mu.Lock()
	b.flush = nil
	if b.closed {
		b.mu.Unlock()
		return
	}
	now := time.Now()
	sweep := now.Sub(b.swept) > sweepEvery
	if sweep {
		b.swept = now
		for k, at := range b.spent {
			if at <= now.UnixNano() {
				delete(b.spent, k)
			}
		}
	}
	empty := len(b.pending) == 0
	b.mu.Unlock()
	if empty && !sweep {
		return
	}
	batch := s.db.NewBatch()
	defer batch.Close()
	if sweep {
		if err := s.sweepNonces(batch, now); err != nil {
			s.log.Warn("drop expired nonces", "error", err)
		}
	}
	if err := s.commit(batch); err != nil {
		s.log.Warn("write spent nonces; they stay spent in memory", "error", err)
	}
}

// closeNonces writes what is pending and refuses spends from then on.
func (s *Store) closeNonces() {
	b := &s.nonces
	b.mu.Lock()
	b.closed = true
	if b.flush != nil {
		b.flush.Stop()
		b.flush = nil
	}
	pending := len(b.pending) > 0
	b.mu.Unlock()
	if pending {
		batch := s.db.NewBatch()
		defer batch.Close()
		if err := s.commit(batch); err != nil {
			s.log.Warn("write spent nonces at close", "error", err)
		}
	}
}

// sweepNonces adds to b the deletes of the nonces whose time passed before now.
func (s *Store) sweepNonces(b *pebble.Batch, now time.Time) error {
	lo := []byte{prefixNonceEnd}
	hi := binary.BigEndian.AppendUint64([]byte{prefixNonceEnd}, uint64(now.UnixNano()))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != 1+8+sha256.Size {
			continue
		}
		b.Delete(append([]byte{prefixNonce}, k[9:]...), nil)
		b.Delete(append([]byte(nil), k...), nil)
	}
	return it.Close()
}

// nonceEndKey orders a spent nonce by the end of its time, at, for the sweep.
func nonceEndKey(at []byte, h [sha256.Size]byte) []byte {
	k := make([]byte, 0, 1+8+sha256.Size)
	k = append(k, prefixNonceEnd)
	k = append(k, at...)
	return append(k, h[:]...)
}
