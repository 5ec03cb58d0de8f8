package actors

import (
	"errors"

	"github.com/intentd/intentd"
)

// writeFailed is the error of a store write that failed: a full store is the caller's
// to hear of (503, retry later: nothing was written), anything else is internal.
func writeFailed(what string, err error) *intentd.Error {
	if errors.Is(err, intentd.ErrStorageFull) {
		return &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStorageFull,
			Message: "the service's storage is full: writes are refused until space is freed, reads go on; retry later", Err: err}
	}
	return intentd.Internal(what+": %w", err)
}

// retryable reports whether a write that failed with err should be tried again by
// the engine itself: an outcome must be written, however long the store refuses.
func retryable(err error) bool {
	return intentd.ErrorKind(err) == intentd.KindInternal || intentd.ErrorCode(err) == intentd.CodeStorageFull
}
