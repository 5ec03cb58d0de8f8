package http

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/policy"
)

// maxClientBody bounds what the client reads of one answer that is not a stream. The
// largest answers are proof bundles, which hold a policy's bytecode (at most a few
// hundred KiB) and evidence that came through a request-size limit; 16 MiB is far
// above both and still stops a misbehaving server from exhausting memory.
const maxClientBody = 16 << 20

// maxEventLine bounds one line of the event stream. Event data is one line of JSON
// holding evidence, which the server accepted through a 1 MiB body limit.
const maxEventLine = 4 << 20

// Client speaks the API of an intentd server. Its methods turn error answers into
// *APIError values carrying the server's status, code and message; errors.As also
// finds an *intentd.Error in them, so that intentd.ErrorKind and intentd.ErrorCode work on
// client errors as on the engine's. A failure to reach the server is returned as the
// underlying transport error, never as an *APIError.
//
// A Client is safe for concurrent use once its fields are set.
type Client struct {
	// HTTPClient sends the requests; http.DefaultClient when nil. Its Timeout applies
	// to event streams too, so leave it 0 and bound calls with their context instead.
	HTTPClient *http.Client
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// UserAgent, when set, is sent as the User-Agent header.
	UserAgent string

	base *url.URL
}

// NewClient returns a client of the server at baseURL, such as
// "http://127.0.0.1:8080". The URL must be absolute http or https; a path in it is kept
// as a prefix of every route, for a server behind a proxy that mounts it there.
func NewClient(baseURL string) (*Client, error) {
	if !strings.Contains(baseURL, "://") {
		// Without a scheme, "host:port" parses as an opaque URL or fails oddly.
		return nil, fmt.Errorf("server URL %q: want an http:// or https:// URL, such as http://127.0.0.1:8080", baseURL)
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %v", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("server URL %q: want an http:// or https:// URL", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("server URL %q: no host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server URL %q: want no query or fragment", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return &Client{base: u}, nil
}

// BaseURL returns the server's URL as NewClient read it.
func (c *Client) BaseURL() string { return c.base.String() }

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

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (%d %s): %s", e.Code, e.Status, http.StatusText(e.Status), e.Message)
}

// Kind is the core's error kind that the status stands for: the inverse of the
// server's table. The statuses the HTTP layer gives of its own (401, 403, 405), and
// any the table does not produce, are KindInternal: switch on Status or Code for them.
func (e *APIError) Kind() intentd.Kind {
	for k, s := range statusOf {
		if s == e.Status && k < intentd.KindMethodNotAllowed {
			return k
		}
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

// IntentStatus is an intent's status as GET /intents/{id}/status answers it (spec
// 2.10, with failure_kind), and the outcome an event carries.
type IntentStatus struct {
	State    intentd.State     `json:"status"`
	IntentID string            `json:"intent_id,omitempty"`
	Proposal *intentd.Proposal `json:"proposal,omitempty"`
	// Evidence is set on success, and on a failure once evidence was extracted.
	Evidence    json.RawMessage     `json:"evidence,omitempty"`
	Reason      string              `json:"reason,omitempty"`
	FailureKind intentd.FailureKind `json:"failure_kind,omitempty"`
	Failures    []policy.Failure    `json:"constraint_failures,omitempty"`
}

// Info calls GET /info: the server's version, settings and receipt key.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	var info Info
	if err := c.getJSON(ctx, "/info", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// PublicKey returns the server's receipt key from GET /info, checked against the key
// id it is served with. Fetch it once over a channel you trust and pin it: it is what
// makes a verified proof the server's word (docs/proofs.md).
func (c *Client) PublicKey(ctx context.Context) ([]byte, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return nil, err
	}
	if info.PublicKey == "" {
		return nil, errors.New("the server reports no public key: it signs no receipts")
	}
	pub, err := crypto.DecodeBase58(info.PublicKey)
	if err != nil || len(pub) != 32 {
		return nil, fmt.Errorf("the server's public_key %q is not the Base58 of a 32-byte Ed25519 key", info.PublicKey)
	}
	if id := crypto.KeyID(pub); id != info.KeyID {
		return nil, fmt.Errorf("the server's key_id %q is not the id of its public key (%s)", info.KeyID, id)
	}
	return pub, nil
}

// PutPolicy calls POST /policies with the policy's source and returns its id. A source
// that does not compile is an *APIError with code policy_invalid whose message lists
// the errors with their positions.
func (c *Client) PutPolicy(ctx context.Context, source string) (string, error) {
	var id string
	if err := c.do(ctx, "POST", "/policies", "text/plain; charset=utf-8", []byte(source), &id); err != nil {
		return "", err
	}
	return id, nil
}

// Policy calls GET /policies/{id} and returns the policy's pretty-printed source, which
// compiles to the same id.
func (c *Client) Policy(ctx context.Context, id string) (string, error) {
	var buf bytes.Buffer
	if err := c.do(ctx, "GET", "/policies/"+url.PathEscape(id), "", nil, &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// DeletePolicy calls DELETE /policies/{id}; code policy_in_use while open intents name it.
func (c *Client) DeletePolicy(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/policies/"+url.PathEscape(id), "", nil, nil)
}

// SubmitIntent calls POST /intents with the intent's JSON and its authorship. The
// intent's bytes are sent as given, so that a signature made over them (through JCS)
// is checked over the same value.
func (c *Client) SubmitIntent(ctx context.Context, intent json.RawMessage, auth crypto.Authorship) error {
	body, err := AuthoredIntentJSON(intent, auth)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/intents", "application/json", body, nil)
}

// AuthoredIntentJSON is the body of POST /intents: {"intent": intent, "authorship": auth}.
func AuthoredIntentJSON(intent json.RawMessage, auth crypto.Authorship) ([]byte, error) {
	a, err := auth.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("authorship: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"intent":`)
	if err := json.Compact(&buf, intent); err != nil {
		return nil, fmt.Errorf("intent is not JSON: %w", err)
	}
	buf.WriteString(`,"authorship":`)
	buf.Write(a)
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Intent calls GET /intents/{id}: the intent as stored (in its JCS form) with its
// authorship.
func (c *Client) Intent(ctx context.Context, id string) (*intentd.AuthoredIntent, error) {
	var ai intentd.AuthoredIntent
	if err := c.getJSON(ctx, "/intents/"+url.PathEscape(id), &ai); err != nil {
		return nil, err
	}
	return &ai, nil
}

// Propose calls POST /intents/{id}/proposal. A 503 (capacity_exceeded) changes
// nothing; its APIError carries the advised RetryAfter.
func (c *Client) Propose(ctx context.Context, id, solution string) error {
	body, err := json.Marshal(intentd.Proposal{Solution: solution})
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/intents/"+url.PathEscape(id)+"/proposal", "application/json", body, nil)
}

// Status calls GET /intents/{id}/status.
func (c *Client) Status(ctx context.Context, id string) (*IntentStatus, error) {
	var st IntentStatus
	if err := c.getJSON(ctx, "/intents/"+url.PathEscape(id)+"/status", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Proof calls GET /intents/{id}/proof and returns the bundle's JSON as the server sent
// it, ready for proof.Verify or for a file. Codes of its 404s: intent_not_found,
// proof_not_ready (ask again once the intent is decided), no_proof (there will be none).
func (c *Client) Proof(ctx context.Context, id string) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := c.do(ctx, "GET", "/intents/"+url.PathEscape(id)+"/proof", "", nil, &buf); err != nil {
		return nil, err
	}
	if !json.Valid(buf.Bytes()) {
		return nil, errors.New("GET proof: the answer is not JSON")
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	return c.do(ctx, "GET", path, "", nil, v)
}

// do sends one request. out receives a 200's body: decoded as JSON into a value, or
// copied into a *bytes.Buffer; nil discards it.
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	resp, err := c.send(ctx, method, path, nil, contentType, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeAPIError(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxClientBody+1))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if len(data) > maxClientBody {
		return fmt.Errorf("%s %s: the answer is larger than %d bytes", method, path, maxClientBody)
	}
	switch o := out.(type) {
	case nil:
	case *bytes.Buffer:
		o.Write(data)
	default:
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: the answer is not what the API describes: %w", method, path, err)
		}
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, query url.Values, contentType string, body []byte) (*http.Response, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return hc.Do(req)
}

// decodeAPIError reads an error answer. A body that is not the API's error object
// (a proxy's page, say) still gives an APIError, with the status's code and the start
// of the body as its message.
func decodeAPIError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Status: resp.StatusCode}
	var body ErrorResponse
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

// Event is one event of the stream: its id, its type, and the OrchestratorEvent's
// JSON as sent.
type Event struct {
	ID   uint64
	Type intentd.State
	Data json.RawMessage
}

// Outcome decodes the event's data: the same fields as an intent's terminal status.
func (e Event) Outcome() (*IntentStatus, error) {
	var o struct {
		IntentStatus
		Type intentd.State `json:"type"`
	}
	if err := json.Unmarshal(e.Data, &o); err != nil {
		return nil, fmt.Errorf("event %d: data is not an OrchestratorEvent: %w", e.ID, err)
	}
	if o.Type != e.Type {
		return nil, fmt.Errorf("event %d: sent as %s but its data says %s", e.ID, e.Type, o.Type)
	}
	o.IntentStatus.State = o.Type
	return &o.IntentStatus, nil
}

// StreamOptions choose the events of a stream.
type StreamOptions struct {
	// From resumes after this event id; 0 starts with the oldest retained event.
	From uint64
	// IntentIDs, when set, keeps only the events of these intents.
	IntentIDs []string
	// Types, when set, keeps only events of these types (success, failure, expired).
	Types []intentd.State
	// MaxRetries is how many reconnections in a row may fail before Next gives up;
	// 0 means it never does (it stops when its context ends). A refusal by the
	// server (a 4xx) is never retried.
	MaxRetries int
	// OnReconnect, when set, is called before each reconnection with the error that
	// ended the connection and the number of the attempt (from 1).
	OnReconnect func(err error, attempt int)
}

// EventStream reads GET /events. Next returns the events in order; when the
// connection drops, it reconnects with the last id it returned, so the caller sees
// every event once, with no gap, across reconnections.
type EventStream struct {
	c    *Client
	ctx  context.Context
	opts StreamOptions
	last uint64
	// retry is the reconnection delay: the server's retry: field, or a default.
	retry time.Duration

	resp     *http.Response
	r        *bufio.Reader
	failures int
	comments []string
}

// Events opens the event stream. It returns once the server has answered: an error
// answer (a bad filter, too many subscribers) is an *APIError then. The stream lasts
// until ctx ends or Close.
func (c *Client) Events(ctx context.Context, opts StreamOptions) (*EventStream, error) {
	s := &EventStream{c: c, ctx: ctx, opts: opts, last: opts.From, retry: time.Second}
	if err := s.connect(); err != nil {
		return nil, err
	}
	return s, nil
}

// LastID is the id of the last event Next returned, or StreamOptions.From before one.
func (s *EventStream) LastID() uint64 { return s.last }

// Comments returns and forgets the comment lines read so far (heartbeats, and the
// note that a resume point is older than the retained events).
func (s *EventStream) Comments() []string {
	c := s.comments
	s.comments = nil
	return c
}

// Close ends the stream.
func (s *EventStream) Close() error {
	if s.resp != nil {
		err := s.resp.Body.Close()
		s.resp = nil
		return err
	}
	return nil
}

func (s *EventStream) connect() error {
	q := url.Values{}
	for _, id := range s.opts.IntentIDs {
		q.Add("intent_id", id)
	}
	if len(s.opts.Types) > 0 {
		ts := make([]string, len(s.opts.Types))
		for i, t := range s.opts.Types {
			ts[i] = string(t)
		}
		q.Set("type", strings.Join(ts, ","))
	}
	// The header, not the query parameter, carries the resume point: it wins on
	// the server, and the query stays the same across reconnections.
	u := *s.c.base
	u.Path += "/events"
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(s.ctx, "GET", u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if s.last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(s.last, 10))
	}
	if s.c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.c.Token)
	}
	if s.c.UserAgent != "" {
		req.Header.Set("User-Agent", s.c.UserAgent)
	}
	hc := s.c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return decodeAPIError(resp)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return fmt.Errorf("GET /events: answered %q, not text/event-stream", ct)
	}
	s.resp = resp
	s.r = bufio.NewReaderSize(resp.Body, 64<<10)
	return nil
}

// Next returns the next event, waiting for one. A dropped connection is resumed
// after the server's advised delay (the 503 of a full server after its Retry-After);
// Next fails only when ctx ends (with ctx's error), when the server refuses the
// stream (an *APIError), or after MaxRetries failed reconnections in a row.
func (s *EventStream) Next() (Event, error) {
	for {
		if s.resp != nil {
			ev, err := s.read()
			if err == nil {
				s.failures = 0
				s.last = ev.ID
				return ev, nil
			}
			s.Close()
			if s.ctx.Err() != nil {
				return Event{}, s.ctx.Err()
			}
			if err := s.reconnect(err); err != nil {
				return Event{}, err
			}
			continue
		}
		if err := s.reconnect(errors.New("not connected")); err != nil {
			return Event{}, err
		}
	}
}

// reconnect waits and connects again, until a connection stands or it must give up.
func (s *EventStream) reconnect(cause error) error {
	for {
		s.failures++
		if s.opts.MaxRetries > 0 && s.failures > s.opts.MaxRetries {
			return fmt.Errorf("event stream: gave up after %d reconnections: %w", s.opts.MaxRetries, cause)
		}
		if s.opts.OnReconnect != nil {
			s.opts.OnReconnect(cause, s.failures)
		}
		delay := s.retry
		var ae *APIError
		if errors.As(cause, &ae) && ae.RetryAfter > 0 {
			delay = ae.RetryAfter
		}
		t := time.NewTimer(delay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return s.ctx.Err()
		case <-t.C:
		}
		err := s.connect()
		if err == nil {
			return nil
		}
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		if errors.As(err, &ae) && ae.Status != http.StatusServiceUnavailable && ae.Status < 500 {
			return err
		}
		cause = err
	}
}

// read reads one event by the HTML standard's rules for event streams: fields up to
// a blank line, comments kept, data lines joined, retry remembered. An event without
// an id is refused: resuming needs one on every event, and this server always sends it.
func (s *EventStream) read() (Event, error) {
	var (
		ev      Event
		data    [][]byte
		hasID   bool
		pending bool
	)
	for {
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole, within the bound.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(full) <= maxEventLine {
				line, err = s.r.ReadSlice('\n')
				full = append(full, line...)
			}
			if len(full) > maxEventLine {
				return Event{}, fmt.Errorf("event stream: a line longer than %d bytes", maxEventLine)
			}
			line = full
		}
		if err != nil {
			if err == io.EOF && !pending {
				return Event{}, io.EOF
			}
			if err == io.EOF {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if data == nil {
				// A block of comments or retry only: no event to dispatch.
				ev, hasID, pending = Event{}, false, false
				continue
			}
			if !hasID {
				return Event{}, errors.New("event stream: an event without an id cannot be resumed from")
			}
			ev.Data = bytes.Join(data, []byte("\n"))
			if ev.Type == "" {
				ev.Type = "message"
			}
			return ev, nil
		}
		pending = true
		if c, ok := bytes.CutPrefix(line, []byte(":")); ok {
			s.comments = append(s.comments, string(bytes.TrimPrefix(c, []byte(" "))))
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			n, err := strconv.ParseUint(string(value), 10, 64)
			if err != nil {
				return Event{}, fmt.Errorf("event stream: id %q is not an event id", value)
			}
			ev.ID, hasID = n, true
		case "event":
			ev.Type = intentd.State(value)
		case "data":
			data = append(data, append([]byte(nil), value...))
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil {
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
		// Other fields are ignored, as the standard says.
	}
}
