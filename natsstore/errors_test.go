package natsstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// TestErrorCodes holds the store's names of JetStream's error codes to the codes
// nats-server gives them.
func TestErrorCodes(t *testing.T) {
	for name, c := range map[string]struct {
		got  jetstream.ErrorCode
		want server.ErrorIdentifier
	}{
		"JSAccountResourcesExceededErr":        {jsAccountResourcesExceededErr, server.JSAccountResourcesExceededErr},
		"JSClusterNotAvailErr":                 {jsClusterNotAvailErr, server.JSClusterNotAvailErr},
		"JSInsufficientResourcesErr":           {jsInsufficientResourcesErr, server.JSInsufficientResourcesErr},
		"JSMaximumConsumersLimitErr":           {jsMaximumConsumersLimitErr, server.JSMaximumConsumersLimitErr},
		"JSStorageResourcesExceededErr":        {jsStorageResourcesExceededErr, server.JSStorageResourcesExceededErr},
		"JSStreamWrongLastSequenceErrF":        {jsStreamWrongLastSequenceErrF, server.JSStreamWrongLastSequenceErrF},
		"JSStreamStoreFailedF":                 {jsStreamStoreFailedF, server.JSStreamStoreFailedF},
		"JSStreamWrongLastSequenceConstantErr": {jsStreamWrongLastSequenceConstantErr, server.JSStreamWrongLastSequenceConstantErr},
		"JSAtomicPublishIncompleteBatchErr":    {jsAtomicPublishIncompleteBatchErr, server.JSAtomicPublishIncompleteBatchErr},
		"JSAtomicPublishTooManyInflight":       {jsAtomicPublishTooManyInflight, server.JSAtomicPublishTooManyInflight},
	} {
		if uint16(c.got) != uint16(c.want) {
			t.Errorf("%s is %d here, %d in nats-server", name, c.got, c.want)
		}
	}
}

// TestAnswer checks what a call returns for the errors its body returns: the store's
// own answers and a callback's error as they are, whatever became of the connection or
// the store, and the client's errors translated.
func TestAnswer(t *testing.T) {
	down, cancel := context.WithCancelCause(context.Background())
	cancel(errDisconnected)
	callback := errors.New("the callback's")
	for _, tc := range []struct {
		name   string
		closed bool
		ctx    context.Context
		err    error
		want   error
	}{
		{"an answer, connection dropped", false, down, fmt.Errorf("delete: %w", intentd.ErrPolicyInUse), intentd.ErrPolicyInUse},
		{"an answer, store closed", true, context.Background(), intentd.ErrStale, intentd.ErrStale},
		{"a callback's error, store closed", true, context.Background(), kept{callback}, callback},
		{"a fork", true, context.Background(), fmt.Errorf("%w: bundle 1", intentd.ErrLogFork), intentd.ErrLogFork},
		{"a time-out", false, context.Background(), nats.ErrTimeout, nil},
		{"a client's error, connection dropped", false, down, context.Canceled, nil},
		{"a client's error, store closed", true, context.Background(), nats.ErrBadSubject, intentd.ErrStoreClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{closed: tc.closed}
			got := s.answer(tc.ctx, tc.err)
			if tc.want == nil {
				if intentd.ErrorCode(got) != intentd.CodeStoreUnavailable {
					t.Fatalf("answer(%v) = %v, want a busy %s error", tc.err, got, intentd.CodeStoreUnavailable)
				}
				return
			}
			if !errors.Is(got, tc.want) {
				t.Fatalf("answer(%v) = %v, want %v", tc.err, got, tc.want)
			}
			if tc.want == callback && got != callback {
				t.Fatalf("answer(%v) = %#v, want the callback's error itself", tc.err, got)
			}
		})
	}
}
