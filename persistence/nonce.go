package persistence

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd"
)

// SpendNonce records an agent signature's nonce until until. The look and the write
// are one step under nonceMu, so that of two proposals with one nonce exactly one is
// taken. Nonces whose time has passed are dropped by the writes that come after them,
// a bounded number each, so that the table holds about one window of signatures.
func (s *Store) SpendNonce(_ context.Context, key, nonce string, until time.Time) error {
	h := nonceHash(key, nonce)
	now := time.Now()
	s.nonceMu.Lock()
	defer s.nonceMu.Unlock()
	v, err := s.get(append([]byte{prefixNonce}, h[:]...))
	switch {
	case err == nil && len(v) == 8 && time.Unix(0, int64(binary.BigEndian.Uint64(v))).After(now):
		return intentd.ErrNonceSpent
	case err != nil && !errors.Is(err, intentd.ErrNotFound):
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := s.sweepNonces(b, now); err != nil {
		return err
	}
	at := binary.BigEndian.AppendUint64(nil, uint64(until.UnixNano()))
	b.Set(append([]byte{prefixNonce}, h[:]...), at, nil)
	b.Set(nonceEndKey(at, h), nil, nil)
	return s.commit(b)
}

// sweepBatch bounds the expired nonces one write drops: the table shrinks by up to that
// many for each nonce it grows by.
const sweepBatch = 64

// sweepNonces adds to b the deletes of up to sweepBatch nonces whose time passed before now.
func (s *Store) sweepNonces(b *pebble.Batch, now time.Time) error {
	lo := []byte{prefixNonceEnd}
	hi := binary.BigEndian.AppendUint64([]byte{prefixNonceEnd}, uint64(now.UnixNano()))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok && n < sweepBatch; ok = it.Next() {
		k := it.Key()
		if len(k) != 1+8+sha256.Size {
			continue
		}
		b.Delete(append([]byte{prefixNonce}, k[9:]...), nil)
		b.Delete(append([]byte(nil), k...), nil)
		n++
	}
	return it.Close()
}

// nonceHash names a nonce of a key in a fixed size, whatever the two hold: the key
// and the nonce are of the caller's choosing.
func nonceHash(key, nonce string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(key))))
	h.Write([]byte(key))
	h.Write([]byte(nonce))
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// nonceEndKey orders a spent nonce by the end of its time, at, for the sweep.
func nonceEndKey(at []byte, h [sha256.Size]byte) []byte {
	k := make([]byte, 0, 1+8+sha256.Size)
	k = append(k, prefixNonceEnd)
	k = append(k, at...)
	return append(k, h[:]...)
}
