package client

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
)

// maxEventLine bounds one line of the event stream. Event data is one line of JSON
// holding evidence, which the server accepted through a 1 MiB body limit.
const maxEventLine = 4 << 20

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
	resp, err := s.c.HTTP().Do(req)
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
