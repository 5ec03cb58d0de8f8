package natsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// The JetStream API's error codes the store tells apart, named as nats-server names
// them (its server/errors.json), less their capital: the client names few of them.
const (
	jsAccountResourcesExceededErr jetstream.ErrorCode = 10002 // resource limits exceeded for account
	jsClusterNotAvailErr          jetstream.ErrorCode = 10008 // JetStream system temporarily unavailable
	jsInsufficientResourcesErr    jetstream.ErrorCode = 10023 // insufficient resources
	jsMaximumConsumersLimitErr    jetstream.ErrorCode = 10026 // maximum consumers limit reached
	jsStorageResourcesExceededErr jetstream.ErrorCode = 10047 // insufficient storage resources available
	jsStreamWrongLastSequenceErrF jetstream.ErrorCode = 10071 // wrong last sequence: {seq}
	jsStreamStoreFailedF          jetstream.ErrorCode = 10077 // storing a message failed ({err})
	// jsStreamWrongLastSequenceConstantErr is a replicated stream's refusal of a write
	// whose expected sequence it cannot check yet (isCheckBusy).
	jsStreamWrongLastSequenceConstantErr jetstream.ErrorCode = 10164
	jsAtomicPublishIncompleteBatchErr    jetstream.ErrorCode = 10176 // atomic publish batch is incomplete
	jsAtomicPublishTooManyInflight       jetstream.ErrorCode = 10210 // atomic publish too many inflight
)

// apiError reports whether err is an answer of the JetStream API with one of codes.
func apiError(err error, codes ...jetstream.ErrorCode) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && slices.Contains(codes, apiErr.ErrorCode)
}

// call starts a call of an exported method (begin) and returns, with its context, the
// function the method defers to end it. That function puts the error the method
// returns in the store's terms (answer), once, and then releases the context: the
// method's body returns the NATS client's errors as they come, and no path through it
// can leave one untranslated, which would reach the caller as a 500 where the store
// meant a 503 to retry.
func (s *Store) call(ctx context.Context) (context.Context, func(*error), error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	return ctx, func(errp *error) {
		*errp = s.answer(ctx, *errp)
		cancel()
	}, nil
}

// check is the start of a call answered from memory: why it cannot be answered now, or
// nil, as ready says.
func (s *Store) check() error {
	_, err := s.ready()
	return err
}

// answer is what a call returns for err: the store's own answers (intentd's errors,
// and what fail made of an error already) and a callback's error (kept) as they are,
// anything else as fail translates it.
func (s *Store) answer(ctx context.Context, err error) error {
	var k kept
	var ie *intentd.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &k):
		return k.err
	case errors.As(err, &ie):
		return err
	}
	for _, e := range answers {
		if errors.Is(err, e) {
			return err
		}
	}
	return s.fail(ctx, err)
}

// answers are the errors of intentd.Store a call returns as they are.
var answers = []error{intentd.ErrNotFound, intentd.ErrExists, intentd.ErrPolicyNotFound, intentd.ErrPolicyInUse,
	intentd.ErrStale, intentd.ErrStoreClosed, intentd.ErrStorageFull}

// kept is an error a call returns as it is: a callback's, which is its caller's to read.
type kept struct{ err error }

func (k kept) Error() string { return k.err.Error() }
func (k kept) Unwrap() error { return k.err }

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
	if unreachable(err) || apiError(err, jsMaximumConsumersLimitErr) {
		// The stream's consumers at their limit is a busy store: a read retried once
		// the consumers of earlier pages have gone succeeds.
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
	case jsAccountResourcesExceededErr, jsInsufficientResourcesErr, jsStorageResourcesExceededErr:
		return true
	case jsStreamStoreFailedF:
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

// jetStreamNotReady reports the answer of a server whose JetStream is not ready to
// serve its API: it has no cluster leader yet.
func jetStreamNotReady(err error) bool {
	return apiError(err, jsClusterNotAvailErr) || errors.Is(err, errStreamNotYet)
}

// isWrongSeq reports a write refused by its fence: the subject's last record is not
// the one the write expected.
func isWrongSeq(err error) bool {
	return apiError(err, jsStreamWrongLastSequenceErrF)
}

// isCheckBusy reports a refusal of a replicated stream that says nothing of the record:
// another write checking the same subject is still being replicated, and the leader
// lets only one such check be in flight per subject. The write is to be tried again.
func isCheckBusy(err error) bool {
	return apiError(err, jsStreamWrongLastSequenceConstantErr)
}

// isBatchRefused reports an atomic batch that the server refused whole, nothing of it
// stored: too many were in flight, or its first message was dropped for that reason.
func isBatchRefused(err error) bool {
	return apiError(err, jsAtomicPublishIncompleteBatchErr, jsAtomicPublishTooManyInflight)
}
