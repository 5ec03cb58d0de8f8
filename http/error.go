package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/intentd/intentd"
)

// statusOf is the one table from error kinds to HTTP statuses.
var statusOf = map[intentd.Kind]int{
	intentd.KindInternal:         http.StatusInternalServerError,
	intentd.KindInvalid:          http.StatusBadRequest,
	intentd.KindUnprocessable:    http.StatusUnprocessableEntity,
	intentd.KindNotFound:         http.StatusNotFound,
	intentd.KindConflict:         http.StatusConflict,
	intentd.KindBusy:             http.StatusServiceUnavailable,
	intentd.KindTooLarge:         http.StatusRequestEntityTooLarge,
	intentd.KindMethodNotAllowed: http.StatusMethodNotAllowed,
	intentd.KindUnauthorized:     http.StatusUnauthorized,
	intentd.KindForbidden:        http.StatusForbidden,
	intentd.KindTooMany:          http.StatusTooManyRequests,
}

// The codes of the errors the HTTP layer finds itself, before the core is asked, under
// the names the handlers have always used. They are defined in the root package, so
// that a client names them without linking the server.
const (
	CodeInvalidJSON            = intentd.CodeInvalidJSON
	CodeUnsupportedContentType = intentd.CodeUnsupportedContentType
	CodeBodyTooLarge           = intentd.CodeBodyTooLarge
	CodeMethodNotAllowed       = intentd.CodeMethodNotAllowed
	CodeNotFound               = intentd.CodeNotFound
	CodeMalformedAuthorship    = intentd.CodeMalformedAuthorship
	CodeSupersededShape        = intentd.CodeSupersededShape
	CodeInvalidLastEventID     = intentd.CodeInvalidLastEventID
	CodeInvalidFilter          = intentd.CodeInvalidFilter
)

// retryAfterSeconds is what a 503 advises: proving slots and subscriber places free up
// within about a second under load, and a client that waits longer only adds latency.
const retryAfterSeconds = 1

// ErrorResponse is the body of every error answer (spec 2.12 and a stable code).
type ErrorResponse struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

// Error writes err as an error answer: its status from the table, its code and its
// message. An internal error is logged with its cause and shown as "internal error".
func Error(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var e *intentd.Error
	if !errors.As(err, &e) {
		e = &intentd.Error{Kind: intentd.KindInternal, Code: intentd.CodeInternal, Err: err}
	}
	status, ok := statusOf[e.Kind]
	if !ok {
		status = http.StatusInternalServerError
	}
	body := ErrorResponse{Message: e.Message, Code: e.Code}
	if status == http.StatusInternalServerError {
		log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		body = ErrorResponse{Message: "internal error", Code: intentd.CodeInternal}
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	noteErrorCode(r, body.Code)
	writeJSON(w, status, body)
}

// writeJSON answers v as JSON with the given status. HTML escaping is off: the
// answers are not for embedding in pages, and messages quoting JSON stay readable.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only the service's own types are written here; one that cannot be
		// encoded is a bug, answered as such rather than half written.
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"message":"internal error","code":"internal"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
