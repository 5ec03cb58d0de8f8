package persistence

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/intentd/intentd"
)

// Digest returns a SHA-256 over every key and value of the store, in key order, as one
// consistent view: two stores with the same records have the same digest whatever the
// order they were written in, and any record added, removed or changed gives another.
// Each key and value is framed by its length (8 bytes, big-endian), so that no two
// different record sets hash the same bytes.
//
// The write numbers of the mark (mark.go) are left out: they are the store's own
// bookkeeping, dropped and renewed on a timer, not records. So are the transparency
// log's entry bundles (log.go): the log writes them on a timer of its own, from
// events already stored, so that a request's answer and the bundles' next write are
// not in step, and a digest that counted them would change under a request that
// stored nothing. And so is the data format record (format.go), which names the build
// that wrote it: two stores of the same records, made by two builds, have one digest.
//
// It is for tests and audits, which need to know that a request left the store exactly
// as it was: it reads the whole store, so it costs as much as the store is large and
// must not be called on a path that serves requests.
func (s *Store) Digest() ([32]byte, error) {
	select {
	case <-s.closing:
		return [32]byte{}, intentd.ErrStoreClosed
	default:
	}
	// The iterator reads one point in time, so that a write in flight is either wholly
	// in the digest or wholly out of it.
	it, err := s.db.NewIter(nil)
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	var n [8]byte
	frame := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if k := it.Key(); len(k) > 0 && (k[0] == prefixWrite || k[0] == prefixLogBundle) || string(k) == keyFormat {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return [32]byte{}, err
		}
		frame(it.Key())
		frame(v)
	}
	if err := it.Close(); err != nil {
		return [32]byte{}, err
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}
