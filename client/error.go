package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/intentd/intentd"
)

// APIError is an error answer of the server: its HTTP status and the body's code and
// message (docs/api.md lists the codes). It converts to an *intentd.Error through
// errors.As, with the kind the status stands for.
type APIError struct {
	Status  int
	Code    string
	Message string
	// RetryAfter is the delay a 503 advises (its Retry-After header); 0 otherwise.
	RetryAfter time.Duration
}

// Error leads with the code, the part that docs/api.md lists and that scripts match,
// then the status and the server's message.
func (e *APIError) Error() string {
	return fmt.Sprintf("%s (%d %s): %s", e.Code, e.Status, http.StatusText(e.Status), e.Message)
}

// kindOf is the server's table from error kinds to statuses, read backwards: each
// status it answers with stands for one kind. The server's table is not imported, since
// that would link the server; a test holds the two together.
var kindOf = map[int]intentd.Kind{
	http.StatusInternalServerError:   intentd.KindInternal,
	http.StatusBadRequest:            intentd.KindInvalid,
	http.StatusUnprocessableEntity:   intentd.KindUnprocessable,
	http.StatusNotFound:              intentd.KindNotFound,
	http.StatusConflict:              intentd.KindConflict,
	http.StatusServiceUnavailable:    intentd.KindBusy,
	http.StatusRequestEntityTooLarge: intentd.KindTooLarge,
	http.StatusMethodNotAllowed:      intentd.KindMethodNotAllowed,
	http.StatusUnauthorized:          intentd.KindUnauthorized,
	http.StatusForbidden:             intentd.KindForbidden,
	http.StatusTooManyRequests:       intentd.KindTooMany,
}

// Kind is the core's error kind that the status stands for: the inverse of the
// server's table. A status the table does not produce (a proxy's 502, say) is
// KindInternal: switch on Status or Code for those.
func (e *APIError) Kind() intentd.Kind {
	if k, ok := kindOf[e.Status]; ok {
		return k
	}
	return intentd.KindInternal
}

// As lets errors.As turn an APIError into an *intentd.Error, so that code written
// against the engine's errors handles the client's unchanged.
func (e *APIError) As(target any) bool {
	t, ok := target.(**intentd.Error)
	if !ok {
		return false
	}
	*t = &intentd.Error{Kind: e.Kind(), Code: e.Code, Message: e.Message}
	return true
}

// errorBody is the body of every error answer of the server (spec 2.12 and a stable
// code), as docs/api.md describes it.
type errorBody struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

// decodeAPIError reads an error answer. A body that is not the API's error object
// (a proxy's page, say) still gives an APIError, with the status's code and the start
// of the body as its message.
func decodeAPIError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Status: resp.StatusCode}
	var body errorBody
	if err := json.Unmarshal(data, &body); err == nil && body.Message != "" {
		e.Code, e.Message = body.Code, body.Message
	} else {
		e.Message = strings.TrimSpace(string(data))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200] + "..."
		}
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	if e.Code == "" {
		e.Code = "http_" + strconv.Itoa(resp.StatusCode)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}
