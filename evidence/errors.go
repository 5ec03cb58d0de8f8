package evidence

import (
	"context"
	"errors"
	"fmt"
)

// Kind classifies an extraction failure so that callers can tell, for example, a
// product that does not exist from a service that did not answer in time. The
// engine records every kind the same way (failure_kind "extraction"); the kind is
// for logs, metrics and tests.
type Kind string

// The kinds of extraction failure.
const (
	KindNotFound    Kind = "not_found"    // the source has nothing for this solution
	KindNoProduct   Kind = "no_product"   // a page was fetched but carries no product data
	KindTimeout     Kind = "timeout"      // no complete answer within the time limit
	KindCanceled    Kind = "canceled"     // the caller's context was canceled (shutdown)
	KindUnreachable Kind = "unreachable"  // the connection could not be made or broke
	KindBadStatus   Kind = "bad_status"   // an HTTP status other than 200
	KindBadBody     Kind = "bad_body"     // an answer that is not what the contract says
	KindTooLarge    Kind = "too_large"    // an answer over the size limit
	KindRedirect    Kind = "redirect"     // a redirect that is not allowed
	KindWrongType   Kind = "wrong_type"   // a field whose value is not of the asked type
	KindUnsupported Kind = "unsupported"  // a solution the extractor cannot handle (scheme)
	KindNoExtractor Kind = "no_extractor" // no extractor by that name, or none chosen
	KindFailed      Kind = "failed"       // an extractor's own error that is not an *Error
)

// Error is the one error type of the package. Its message (Error) is written to be
// shown as the reason of an intent's failure: it names the extractor, and the field
// when one is at fault.
type Error struct {
	Kind      Kind
	Extractor string // "catalog", "http", "web", or the router's name for a custom one
	Field     string // the evidence field at fault, for KindWrongType
	Reason    string // what went wrong, without the extractor's name
	Err       error  // the underlying error, if any, for errors.Is and errors.As
}

// Error returns "EXTRACTOR: REASON", or the reason alone when no extractor is known.
func (e *Error) Error() string {
	if e.Extractor == "" {
		return e.Reason
	}
	return e.Extractor + ": " + e.Reason
}

// Unwrap gives errors.Is access to the cause, so that errors.Is(err,
// context.Canceled) holds for a canceled extraction.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err if it is (or wraps) an *Error, and "" otherwise.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

func errorf(kind Kind, extractor string, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Extractor: extractor, Reason: fmt.Sprintf(format, args...), Err: cause}
}

// ctxError turns a failure that happened while ctx ended into a time-out or a
// cancellation, so that a slow source is not reported as a broken one. It returns nil
// when ctx is still live.
func ctxError(ctx context.Context, extractor, what string, limit fmt.Stringer) *Error {
	switch ctx.Err() {
	case nil:
		return nil
	case context.DeadlineExceeded:
		return errorf(KindTimeout, extractor, ctx.Err(), "%s: no answer within the time limit (%v)", what, limit)
	default:
		return errorf(KindCanceled, extractor, ctx.Err(), "%s: canceled", what)
	}
}
