package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd/internal/strictjson"
)

// MaxBatchMessages is the most messages, calls and notifications alike, that one
// JSON-RPC batch sent to HTTPHandler may hold; a batch of more is refused whole, with
// the JSON-RPC error -32600 (Invalid Request), before any of its calls is made. The
// SDK takes batches from clients of protocol versions before 2025-06-18 (an absent
// MCP-Protocol-Version header is taken for 2025-03-26), makes all their calls at once
// and holds every answer until the last is done, so that the batch, not the request,
// was the unit of work: one request of 875 KB, 6,000 get_intent calls, held a core for
// 4 to 6 s and built an answer of 6.9 MB. An agent's flow needs a few calls at a time,
// and the previews it might send together are held to 20 an intent and 16 at once by
// default, so 64 leaves any agent room while a request costs about 1 % of that one.
const MaxBatchMessages = 64

// AnswerBodies is how many request bodies' worth of bytes one answer of HTTPHandler may
// hold. A tool's answer carries its output twice, as structured content and again as
// its text, so get_intent and get_proof answer an intent of the largest body the server
// takes in about twice its bytes; four times leaves room for the escapes of the text.
// An intent made mostly of characters JSON escapes (quotes, <, >, &) answers more than
// that and is refused here; the HTTP API still serves it.
const AnswerBodies = 4

// MinAnswerBytes is the least bound of one answer, whatever the body bound, so that
// the answers every client needs (initialize, tools/list) and a batch of small calls
// fit beside a small --max-body.
const MinAnswerBytes = 64 << 10

// CodeAnswerTooLarge is the JSON-RPC error code of a call whose answer would take the
// answer of its request past its bound, or that was not made because the answer had
// reached it. It is in the range JSON-RPC leaves to servers, apart from the codes MCP
// and its SDKs use there (-32000 to -32002, -32020 to -32022, -32042).
const CodeAnswerTooLarge = -32050

// MaxAnswerBytes is the bound of the bytes of one answer of HTTPHandler(maxBody), a
// batch's or a single message's: AnswerBodies times maxBody, and at least
// MinAnswerBytes. It is 4 MiB for intentd's default --max-body of 1 MiB.
func MaxAnswerBytes(maxBody int64) int64 {
	if maxBody > math.MaxInt64/AnswerBodies {
		return math.MaxInt64
	}
	return max(AnswerBodies*maxBody, MinAnswerBytes)
}

// envelopeBytes is what the envelope of one answer in a batch adds to its result:
// {"jsonrpc":"2.0","id":…,"result":…} and the comma between two, with room for an id
// of 30 bytes. It is counted with each result, so that an answer of small ids is held
// to its bound by boundAnswers, which answers what fits and stops the calls after,
// rather than by the answerWriter, which can only refuse the answer whole.
const envelopeBytes = 64

// errorBytes is room for the answer of one call with the error boundAnswers gives in
// place of a result, envelope included. Each message of a request is kept this much of
// the bound before results are counted, so that the errors of the calls past the bound
// fit in it too.
const errorBytes = 320

// boundedHTTP bounds what one request to the SDK's streamable HTTP handler may cost:
// it reads the body itself, within maxBody, refuses a batch past MaxBatchMessages
// before the SDK decodes it, and holds the answer to maxAnswer bytes, with an
// answerBudget the middleware boundAnswers spends as calls are answered and an
// answerWriter that refuses whatever still goes past.
type boundedHTTP struct {
	next      http.Handler
	maxBody   int64
	maxAnswer int64
}

// answerBudgetKey is the context key of the answerBudget of one HTTP request.
type answerBudgetKey struct{}

func (h *boundedHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil {
		h.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		// The SDK's own answers to a body it cannot read, which this read replaces.
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	}
	messages, code, msg := checkBatch(body)
	if code != 0 {
		writeRPCError(w, http.StatusBadRequest, code, msg)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// The SDK hands the request's context, values and all, to the handlers of the
	// session it makes for this one request, so that the budget reaches boundAnswers.
	budget := &answerBudget{bound: h.maxAnswer, max: max(h.maxAnswer-int64(messages)*errorBytes, 0)}
	ctx := context.WithValue(r.Context(), answerBudgetKey{}, budget)
	h.next.ServeHTTP(&answerWriter{ResponseWriter: w, max: h.maxAnswer}, r.WithContext(ctx))
}

// errPastBound ends the reading of a batch at its first message past the bound.
var errPastBound = errors.New("past the bound")

// checkBatch reads body, when it is a batch (a JSON array), as far as the message past
// MaxBatchMessages. It returns how many messages the SDK is to have, 1 for a body that
// is no array, which the SDK reads as one message; or the JSON-RPC code and message of
// the refusal of the batch. A batch this reader cannot read is refused as not JSON
// rather than passed on: the SDK's decoder takes invalid UTF-8 and lone surrogates that
// this one refuses, and a batch with one of them in its first message would otherwise
// go uncounted.
func checkBatch(body []byte) (messages, code int, msg string) {
	d := strictjson.NewDecoder(body)
	defer d.Release()
	if d.PeekKind() != '[' {
		return 1, 0, ""
	}
	err := d.Array("", func(i int) error {
		if i == MaxBatchMessages {
			return errPastBound
		}
		messages++
		_, err := d.Value("")
		return err
	})
	if err == nil {
		err = d.End("")
	}
	switch {
	case err == nil:
		return messages, 0, ""
	case errors.Is(err, errPastBound):
		return 0, jsonrpc.CodeInvalidRequest, fmt.Sprintf("a JSON-RPC batch holds at most %d messages: this one holds more, and none of its calls was made", MaxBatchMessages)
	default:
		return 0, jsonrpc.CodeParseError, "the batch is not JSON: " + err.Error()
	}
}

// rpcError is a JSON-RPC error answer that answers no one call: its id is null.
type rpcError struct {
	JSONRPC string       `json:"jsonrpc"`
	ID      *struct{}    `json:"id"`
	Error   rpcErrorBody `json:"error"`
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// writeRPCError answers a JSON-RPC error with a null id and the HTTP status given: the
// transport's specification has a request the server does not take answered with an
// HTTP error status, its body a JSON-RPC error without an id.
func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	b, _ := json.Marshal(rpcError{JSONRPC: "2.0", Error: rpcErrorBody{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// answerBudget is what the results of one HTTP request's calls have taken of the
// bound of its answer.
type answerBudget struct {
	bound int64 // the bound of the answer, which the errors name
	max   int64 // what of it the results may take: the bound less errorBytes a message
	mu    sync.Mutex
	used  int64
	full  bool // a result did not fit: no call is made after it
}

// take counts n more bytes into the answer and reports whether they fit; once some do
// not, the answer is full, and later calls are not made.
func (b *answerBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.full || n > b.max-b.used {
		b.full = true
		return false
	}
	b.used += n
	return true
}

func (b *answerBudget) isFull() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.full
}

// boundAnswers is the receiving middleware that holds the results of one HTTP
// request's calls to the bound of its answer: the result that would take the answer
// past it is answered with the JSON-RPC error CodeAnswerTooLarge instead, and so is
// every call that comes after, without being made. The calls of a batch run at once,
// as the SDK runs them, so each builds its result before it is counted: what the bound
// holds is what is kept and sent, and MaxBatchMessages what is built. Without a budget
// in the context (over stdio or in memory) it lets everything through.
func boundAnswers(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		b, ok := ctx.Value(answerBudgetKey{}).(*answerBudget)
		if !ok || strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		name := method
		if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil {
			name = clip(ct.Params.Name)
		}
		if b.isFull() {
			return nil, &jsonrpc.Error{Code: CodeAnswerTooLarge, Message: fmt.Sprintf(
				"%s: not made: the answer has reached its bound of %d bytes; make the call in a request of its own", name, b.bound)}
		}
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		n := encodedSize(res) + envelopeBytes
		if !b.take(n) {
			return nil, &jsonrpc.Error{Code: CodeAnswerTooLarge, Message: fmt.Sprintf(
				"%s: made, but its answer of %d bytes would take the answer past its bound of %d bytes, so it is not sent", name, n, b.bound)}
		}
		return res, nil
	}
}

// byteCounter counts what is written to it and keeps nothing.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}

// encodedSize is the length of v in JSON as the SDK writes it in a batch, found
// without keeping the text: encoding/json with its escapes of <, > and &, which the
// SDK's writing of a batch adds (a single answer goes without them, and is shorter).
func encodedSize(v any) int64 {
	var c byteCounter
	if err := json.NewEncoder(&c).Encode(v); err != nil {
		return 0 // the SDK fails to write it too, and answers an error
	}
	return int64(c) - 1 // Encode ends the text with a newline
}

// answerWriter refuses an answer of JSON past max bytes, so that the bound holds for
// the whole answer, envelopes and ids included, which boundAnswers does not see. The
// SDK writes such an answer in one Write, once every call is answered, before any
// header is sent, so the answer can be replaced whole by a JSON-RPC error; it is
// refused with 400, as a request whose answer is too large for the server to send.
// Event streams, which the server does not answer calls on, are let through.
type answerWriter struct {
	http.ResponseWriter
	max         int64
	written     int64
	wroteHeader bool
	refused     bool
}

// errAnswerRefused is the error of a Write after the answer was refused.
var errAnswerRefused = errors.New("mcpserver: the answer is past its bound and was refused")

func (w *answerWriter) WriteHeader(status int) {
	w.wroteHeader = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *answerWriter) Write(p []byte) (int, error) {
	if w.refused {
		return 0, errAnswerRefused
	}
	if int64(len(p)) > w.max-w.written && w.Header().Get("Content-Type") == "application/json" {
		w.refused = true
		if w.written > 0 || w.wroteHeader {
			return 0, errAnswerRefused
		}
		writeRPCError(w.ResponseWriter, http.StatusBadRequest, CodeAnswerTooLarge, fmt.Sprintf(
			"the answer, %d bytes, is past its bound of %d bytes and is not sent; the calls it answers were made", len(p), w.max))
		return len(p), nil
	}
	w.written += int64(len(p))
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer, to flush event
// streams and set deadlines.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
