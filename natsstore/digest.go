package natsstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
)

// Digest summarises the stream's state: its first and last sequences, its message
// count and its bytes. Every write takes a new last sequence and every purge moves the
// first or the count, so two equal digests mean that nothing was written or removed in
// between. It does not hash the records: it is for tests and audits that need to know
// a request left the store as it was, and it costs one request, not a read of the store.
func (s *Store) Digest() (digest [32]byte, err error) {
	ctx, end, err := s.call(context.Background())
	if err != nil {
		return [32]byte{}, err
	}
	defer end(&err)
	info, err := s.stream.Info(ctx)
	if err != nil {
		return [32]byte{}, err
	}
	var b [32]byte
	binary.BigEndian.PutUint64(b[0:], info.State.FirstSeq)
	binary.BigEndian.PutUint64(b[8:], info.State.LastSeq)
	binary.BigEndian.PutUint64(b[16:], info.State.Msgs)
	binary.BigEndian.PutUint64(b[24:], info.State.Bytes)
	return sha256.Sum256(b[:]), nil
}
