package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
)

// eventTypes are the values the type filter accepts: the event types of spec part 6.
var eventTypes = []intentd.State{intentd.StateSuccess, intentd.StateFailure, intentd.StateExpired}

// streamRequest is what a GET /events asks for.
type streamRequest struct {
	from   uint64
	filter intentd.Filter
}

// parseStreamRequest reads the resume point and the filters. The Last-Event-ID header
// wins over the query parameter: a browser's EventSource keeps the URL of its first
// connection, query included, and sends the header with the newest id when it
// reconnects.
func parseStreamRequest(r *http.Request) (streamRequest, error) {
	var sr streamRequest
	q := r.URL.Query()
	last, ok := "", false
	if vs, has := r.Header["Last-Event-Id"]; has && len(vs) > 0 {
		last, ok = vs[0], true
	} else if vs, has := q["last-event-id"]; has && len(vs) > 0 {
		last, ok = vs[0], true
	}
	if ok {
		n, err := ParseLastEventID(last)
		if err != nil {
			return sr, err
		}
		sr.from = n
	}
	for _, v := range q["intent_id"] {
		for _, id := range strings.Split(v, ",") {
			if _, ok := intentd.CanonicalIntentID(id); !ok {
				return sr, intentd.Errorf(intentd.KindInvalid, CodeInvalidFilter, "intent_id: %q is not a UUID", clip(id))
			}
			sr.filter.IntentIDs = append(sr.filter.IntentIDs, id)
		}
	}
	for _, v := range q["type"] {
		for _, t := range strings.Split(v, ",") {
			st := intentd.State(t)
			if !slices.Contains(eventTypes, st) {
				return sr, intentd.Errorf(intentd.KindInvalid, CodeInvalidFilter, "type: %q is not an event type (want success, failure or expired)", clip(t))
			}
			if !slices.Contains(sr.filter.Types, st) {
				sr.filter.Types = append(sr.filter.Types, st)
			}
		}
	}
	return sr, nil
}

// handleEvents streams events as Server-Sent Events: the retained events after the
// resume point, then live ones, until the client leaves, falls too far behind, or the
// server shuts down. Errors found before the stream starts are ordinary JSON errors.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	sr, err := parseStreamRequest(r)
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.streams, cancel)
	defer stop()

	sub, err := s.engine.Subscribe(ctx, sr.from, sr.filter)
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	defer sub.Close()

	rc := http.NewResponseController(w)
	// The server's read deadline is for request bodies; left on a stream, it would
	// end the connection's background read and with it the request's context.
	if err := rc.SetReadDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.log.WarnContext(ctx, "event stream: clear read deadline", "err", err)
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	// nginx buffers proxied responses unless told not to, which would hold events
	// back until its buffer fills.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	st := &stream{w: w, rc: rc, writeTimeout: s.opts.WriteTimeout}
	st.buf.WriteString("retry: ")
	st.buf.WriteString(strconv.FormatInt(s.opts.Retry.Milliseconds(), 10))
	st.buf.WriteString("\n\n")
	if sub.Truncated() {
		st.buf.WriteString(": events after ")
		st.buf.WriteString(strconv.FormatUint(sr.from, 10))
		st.buf.WriteString(" are no longer retained; the stream starts at the oldest retained event\n\n")
	}
	if err := st.flush(); err != nil {
		return
	}

	for {
		next, cancelNext := context.WithTimeout(ctx, s.opts.Heartbeat)
		ev, err := sub.Next(next)
		cancelNext()
		switch {
		case err == nil:
			if err := st.event(ev); err != nil {
				s.log.DebugContext(ctx, "event stream: write failed", "err", err)
				return
			}
			// While more events are ready (a replay, a burst) they share one write and
			// one flush; the last of them goes out at once.
			if sub.Pending() && st.buf.Len() < flushBytes {
				continue
			}
			if err := st.flush(); err != nil {
				s.log.DebugContext(ctx, "event stream: write failed", "err", err)
				return
			}
		case ctx.Err() != nil:
			// The client left, or the server is shutting down.
			return
		case errors.Is(err, context.DeadlineExceeded):
			st.buf.WriteString(": heartbeat\n\n")
			if err := st.flush(); err != nil {
				return
			}
		case errors.Is(err, intentd.ErrSubscriberTooSlow):
			// Ending the response is the signal: the client reconnects with the
			// last id it saw and gets the rest from the log.
			s.log.InfoContext(ctx, "event stream: subscriber too slow, disconnected", "remote", r.RemoteAddr)
			return
		case errors.Is(err, intentd.ErrEngineClosed):
			return
		default:
			s.log.ErrorContext(ctx, "event stream", "err", err)
			return
		}
	}
}

// stream writes SSE frames to one client.
type stream struct {
	w            http.ResponseWriter
	rc           *http.ResponseController
	writeTimeout time.Duration
	buf          bytes.Buffer
}

// event buffers one event: id, type and the OrchestratorEvent as one line of data.
func (st *stream) event(ev intentd.Event) error {
	st.buf.WriteString("id: ")
	st.buf.WriteString(strconv.FormatUint(ev.ID, 10))
	st.buf.WriteString("\nevent: ")
	st.buf.WriteString(string(ev.Type))
	st.buf.WriteString("\ndata: ")
	if bytes.ContainsAny(ev.Data, "\r\n") {
		// A line break would end the data field and let the rest be read as
		// fields of its own. JSON never needs one outside strings, where it is
		// escaped, so compacting removes every one.
		if err := json.Compact(&st.buf, ev.Data); err != nil {
			st.buf.Reset()
			return err
		}
	} else {
		st.buf.Write(ev.Data)
	}
	st.buf.WriteString("\n\n")
	return nil
}

// flushBytes bounds what a stream buffers before it writes.
const flushBytes = 32 << 10

// flush sends what is buffered. Each write gets its own deadline, so that a client
// that stops reading frees its handler instead of holding it for ever.
func (st *stream) flush() error {
	st.rc.SetWriteDeadline(time.Now().Add(st.writeTimeout))
	_, err := st.w.Write(st.buf.Bytes())
	st.buf.Reset()
	if err != nil {
		return err
	}
	return st.rc.Flush()
}
