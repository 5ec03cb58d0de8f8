package natsstore

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// SpendNonce records an agent signature's nonce as a record of its own subject, written
// only if the subject holds none (a fenced write expecting no record before it): of two
// nodes writing one nonce, the stream takes exactly one. The record carries a time to
// live (the stream allows per-record TTLs), so the stream drops it once until has passed
// and holds about one window of signatures.
func (s *Store) SpendNonce(ctx context.Context, key, nonce string, until time.Time) (err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	// The record outlives until by a second: a TTL is counted in whole seconds.
	ttl := time.Until(until).Truncate(time.Second) + time.Second
	if ttl < time.Second {
		ttl = time.Second
	}
	m := nats.NewMsg(s.nonceSubject(key, nonce))
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	m.Header.Set(jetstream.MsgTTLHeader, ttl.String())
	_, err = s.publish(ctx, m)
	if isWrongSeq(err) {
		return intentd.ErrNonceSpent
	}
	return err
}

// nonceSubject is the subject of a key's nonce: their digest, so that any key and nonce
// make one plain token.
func (s *Store) nonceSubject(key, nonce string) string {
	h := intentd.NonceDigest(key, nonce)
	return s.prefix + "." + kindNonce + "." + hex.EncodeToString(h[:])
}
