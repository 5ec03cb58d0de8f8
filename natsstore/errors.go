package natsstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// jetStreamNotReady reports the answer of a server whose JetStream is not ready to
// serve its API: it has no cluster leader yet.
func jetStreamNotReady(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10008 || // JetStream system temporarily unavailable
		errors.Is(err, errStreamNotYet)
}

// fail translates an error of the NATS client: after Close, ErrStoreClosed; when a
// stream the store needs is gone or changed, the finding; when the servers did not
// answer, an *intentd.Error of kind busy that the caller sees as a 503 to retry;
// anything else as it is.
func (s *Store) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if lost := s.lost(ctx, err); lost != nil {
		return lost
	}
	if errors.Is(context.Cause(ctx), errDisconnected) {
		return unavailable(err)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || errors.Is(err, nats.ErrConnectionClosed) {
		return intentd.ErrStoreClosed
	}
	if outOfSpace(err) {
		s.fullAt.Store(time.Now().UnixNano())
		return fmt.Errorf("%w: %w", intentd.ErrStorageFull, err)
	}
	if unreachable(err) {
		return unavailable(err)
	}
	return err
}

// outOfSpace reports a write refused for want of storage: JetStream's limit for the
// account or the server is reached, or the server's disk is full. Nothing of the write
// was stored.
func outOfSpace(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case 10002, 10023, 10047: // account resources exceeded, insufficient resources, storage resources exceeded
		return true
	case 10077: // the store failed to save the message
		return strings.Contains(apiErr.Description, "no space")
	}
	return false
}

// unreachable reports whether err says that no server answered, rather than that one
// refused: the connection is down or reconnecting, the request timed out, or the stream
// has no leader.
func unreachable(err error) bool {
	for _, e := range []error{nats.ErrConnectionReconnecting, nats.ErrReconnectBufExceeded, nats.ErrDisconnected,
		nats.ErrNoResponders, nats.ErrTimeout, jetstream.ErrNoStreamResponse, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503
}

func unavailable(err error) error {
	return &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStoreUnavailable,
		Message: "the store is unreachable; retry later", Err: err}
}

func isWrongSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// isCheckBusy reports a refusal of a replicated stream that says nothing of the record:
// another write checking the same subject is still being replicated, and the leader
// lets only one such check be in flight per subject. The write is to be tried again.
func isCheckBusy(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// isBatchRefused reports an atomic batch that the server refused whole, nothing of it
// stored: too many were in flight, or its first message was dropped for that reason.
func isBatchRefused(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == 10176 || apiErr.ErrorCode == 10210)
}
