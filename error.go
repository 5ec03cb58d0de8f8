package intentd

import (
	"errors"
	"fmt"
)

// Kind classifies an Error. The HTTP layer maps each kind to one status, in one table;
// every kind the service answers with is here, the caller's authentication among them,
// so that no layer adds kinds of its own.
type Kind uint8

// The kinds of error.
const (
	KindInternal         Kind = iota // a fault of the service; logged, never shown
	KindInvalid                      // the request is refused as it stands (HTTP 400)
	KindUnprocessable                // well-formed JSON that does not match the schema (HTTP 422)
	KindNotFound                     // the named resource does not exist (HTTP 404)
	KindConflict                     // the resource's state forbids the request (HTTP 409)
	KindBusy                         // capacity is full, or the store cannot serve; retry later (HTTP 503)
	KindTooLarge                     // a size limit was exceeded (HTTP 413)
	KindUnauthorized                 // the caller is not authenticated (HTTP 401)
	KindForbidden                    // the caller may not do this (HTTP 403)
	KindMethodNotAllowed             // the resource does not take this method (HTTP 405)
	KindTooMany                      // the caller used up an allowance; waiting does not restore it (HTTP 429)
)

var kindNames = [...]string{"internal", "invalid", "unprocessable", "not_found", "conflict", "busy", "too_large",
	"unauthorized", "forbidden", "method_not_allowed", "too_many"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Error is the one error type of the service: a kind for the status, a stable code clients
// switch on, a message safe to show, and for internal errors the cause, which is logged
// and never shown.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error with a formatted message.
func Errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Internal wraps a cause the caller must not see: the message shown is "internal error",
// the cause is for the log.
func Internal(format string, cause error) *Error {
	return &Error{Kind: KindInternal, Code: "internal", Message: "internal error", Err: fmt.Errorf(format, cause)}
}

// ErrorKind reports the kind of err: the Kind of an *Error in its chain, or KindInternal.
func ErrorKind(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// Canceled is the error of a call whose ctx ended before the answer came.
func Canceled(err error) *Error {
	return &Error{Kind: KindBusy, Code: CodeCanceled, Message: "the request ended before the service answered: " +
		"what it did is kept; read the intent's status", Err: err}
}

// ErrorCode reports the code of err: the Code of an *Error in its chain, or "internal".
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return "internal"
}

// The codes of the engine's errors, as listed in the API documentation. The codes of
// what the HTTP layer refuses before an engine is asked follow them.
const (
	CodeInternal             = "internal"
	CodeIntentNotFound       = "intent_not_found"
	CodePolicyNotFound       = "policy_not_found"
	CodeIntentExists         = "intent_exists"
	CodeProposalExists       = "proposal_exists"
	CodeIntentExpired        = "intent_expired"
	CodeAuthorshipInvalid    = "authorship_invalid"
	CodeUnsignedNotPermitted = "unsigned_not_permitted"
	CodeCapacityExceeded     = "capacity_exceeded"
	CodePolicyInUse          = "policy_in_use"
	CodePolicyInvalid        = "policy_invalid"
	CodeInvalidIntent        = "invalid_intent"
	CodeInvalidID            = "invalid_id"
	CodeAttrsMismatch        = "attrs_mismatch"
	CodeInvalidProposal      = "invalid_proposal"
	CodeTooManySubscribers   = "too_many_subscribers"
	CodeShuttingDown         = "shutting_down"
	// CodeCanceled: the caller gave up (hung up, or its deadline passed) before the
	// engine answered. What the engine did meanwhile stays done; the status tells.
	CodeCanceled = "canceled"
	// CodeStorageFull: the store's disk is (nearly) full, so writes are refused until
	// space returns; reads go on.
	CodeStorageFull = "storage_full"
	// CodeStoreUnavailable: the store did not answer (its servers are unreachable or
	// have no quorum). A write that got this may or may not have been made: read the
	// intent's status before sending it again.
	CodeStoreUnavailable = "store_unavailable"
	// CodeStoreMissing: data the store needs (on NATS: its stream, or a bucket beside it)
	// was deleted under the running service, or deleted and made again. Reads and writes
	// are refused, and nothing is made again over the loss, until an operator restores it
	// and restarts the service.
	CodeStoreMissing = "store_missing"
	// CodeStoreChanged: the store's data is there but not as the service opened it (on
	// NATS: given fewer replicas or another layout). Reads and writes are refused until an
	// operator puts it back or restarts the service.
	CodeStoreChanged = "store_changed"
	// CodeBackupInProgress (503): POST /admin/backup while another backup is being
	// taken; one at a time keeps a backup from doubling the load it puts on the store.
	CodeBackupInProgress = "backup_in_progress"
	// CodeMemberUnavailable: in a cluster, the member that holds the intent did not
	// answer (it is gone and the cluster has not yet moved its intents, or it is
	// overloaded). A write may or may not have been made: read the status, then retry.
	CodeMemberUnavailable = "member_unavailable"
	// CodeProofNotReady: the intent is open or processing; a proof may come.
	CodeProofNotReady = "proof_not_ready"
	// CodeNoProof: the intent is terminal and has no receipt, and never will (it
	// expired, its evidence could not be had, or its proof could not be made).
	CodeNoProof = "no_proof"
	// CodePreviewLimit: the intent has had all the previews a server allows one
	// intent; its one proposal is still there to make.
	CodePreviewLimit = "preview_limit"
	// CodeLogNotFound: the transparency log has no such tile, entry bundle or leaf
	// (yet), or the server keeps no log.
	CodeLogNotFound = "log_not_found"
	// CodeLogFork: the entries a node made of the events differ from those the store
	// keeps for the transparency log; see ErrLogFork.
	CodeLogFork = "log_fork"
)

// The codes of the errors the HTTP layer finds itself, before an engine is asked. They
// are here beside the engine's, not in package http, because clients switch on them
// too, and a client must not link the server to name them.
const (
	CodeInvalidJSON            = "invalid_json"             // 400: the body does not parse, is not UTF-8, or escapes a lone surrogate
	CodeUnsupportedContentType = "unsupported_content_type" // 400: Content-Type missing, another than the route's, or not UTF-8
	CodeBodyTooLarge           = "body_too_large"           // 413: the body is over the server's limit
	CodeMethodNotAllowed       = "method_not_allowed"       // 405: the route does not serve this method
	CodeNotFound               = "not_found"                // 404: no route has this path, or no times kept (GET /intents/{id}/timeline)
	CodeMalformedAuthorship    = "malformed_authorship"     // 422: the authorship does not match the schema
	CodeSupersededShape        = "superseded_shape"         // 422: a shape of an earlier interface version
	CodeInvalidLastEventID     = "invalid_last_event_id"    // 400: the resume point is not an event id
	CodeInvalidFilter          = "invalid_filter"           // 400: an event filter with an unknown type or an id that is not a UUID
)
