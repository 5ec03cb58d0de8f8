package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	q, err := streamQuery(r.URL.RawQuery)
	if err != nil {
		return sr, err
	}
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

// streamQuery decodes the stream's query. url.Values drops a pair it cannot decode
// (a bad %-escape, a semicolon), so that a resume point written wrong would replay every
// event from the first instead of being refused; here such a pair is an error of the
// parameter it names, or of the filter when even its name does not decode.
func streamQuery(raw string) (url.Values, error) {
	q := url.Values{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil || strings.Contains(k, ";") {
			return nil, intentd.Errorf(intentd.KindInvalid, CodeInvalidFilter, "the query parameter %q does not decode", clip(k))
		}
		val, err := url.QueryUnescape(v)
		if err != nil || strings.Contains(v, ";") {
			code := CodeInvalidFilter
			if key == "last-event-id" {
				code = CodeInvalidLastEventID
			}
			return nil, intentd.Errorf(intentd.KindInvalid, code, "%s: %q does not decode", clip(key), clip(v))
		}
		q[key] = append(q[key], val)
	}
	return q, nil
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

	st, err := s.startStream(ctx, w, sub, sr.from)
	if err != nil {
		return
	}
	s.serveStream(ctx, r, sub, st)
}

// startStream answers the stream's headers and its opening lines: the reconnection
// delay, and a comment when the resume point is older than the events retained.
func (s *Server) startStream(ctx context.Context, w http.ResponseWriter, sub intentd.Subscription, from uint64) (*stream, error) {
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
	// No chunked encoding: net/http writes a chunk's header, its bytes and its end
	// through its own 4 KiB buffer, and a flush larger than that became two or three
	// write calls, the most of what a delivered event costs. With "identity" the
	// stream's bytes go out as they are, one write call a flush, and the connection
	// closes when the stream ends, which is what ends an event stream anyway (the
	// set-up the Server-Sent Events recommendation gives; HTTP/2 ignores the header).
	h.Set("Transfer-Encoding", "identity")
	w.WriteHeader(http.StatusOK)

	st := &stream{w: w, rc: rc, writeTimeout: s.opts.WriteTimeout, frames: &s.frames}
	b := st.out()
	b.WriteString("retry: ")
	b.WriteString(strconv.FormatInt(s.opts.Retry.Milliseconds(), 10))
	b.WriteString("\n\n")
	if sub.Truncated() {
		b.WriteString(": events after ")
		b.WriteString(strconv.FormatUint(from, 10))
		b.WriteString(" are no longer retained; the stream starts at the oldest retained event\n\n")
	}
	return st, st.flush()
}

// serveStream writes the subscription's events, and heartbeats while none come, until
// the client leaves, falls too far behind, or the server shuts down.
func (s *Server) serveStream(ctx context.Context, r *http.Request, sub intentd.Subscription, st *stream) {
	s.openStreams.Add(1)
	defer s.openStreams.Add(-1)
	hb := newHeartbeat(ctx, s.opts.Heartbeat)
	defer hb.stop()
	var gather *time.Timer
	if s.opts.FlushWindow > 0 {
		gather = time.NewTimer(s.opts.FlushWindow)
		gather.Stop()
		defer gather.Stop()
	}
	for {
		ev, err := sub.Next(hb.wait)
		switch {
		case err == nil:
			if err := st.event(ev); err != nil {
				s.log.DebugContext(ctx, "event stream: write failed", "err", err)
				return
			}
			// While more events are ready (a replay, a burst) they share one write and
			// one flush.
			if sub.Pending() && st.buffered() < flushBytes {
				continue
			}
			full := st.buffered() >= flushBytes
			if err := st.flush(); err != nil {
				s.log.DebugContext(ctx, "event stream: write failed", "err", err)
				return
			}
			hb.wrote()
			window := s.flushWindow()
			if gather == nil || full || window == 0 {
				// A replay that filled the buffer goes on at once, and so does a
				// stream among few.
				continue
			}
			// Caught up: the events of the next moment gather in the subscription's
			// buffer and go out together, rather than a write and a flush each.
			// A burst that fills half the subscription's buffer ends the wait early:
			// waiting on, the stream would be cut off as too slow.
			filling := sub.Filling()
			gather.Reset(window)
			select {
			case <-gather.C:
			case <-filling:
				gather.Stop()
			case <-ctx.Done():
				return
			}
		case ctx.Err() != nil:
			// The client left, or the server is shutting down.
			return
		case hb.due():
			st.out().WriteString(": heartbeat\n\n")
			if err := st.flush(); err != nil {
				return
			}
			hb.rearm()
		case errors.Is(err, intentd.ErrSubscriberTooSlow):
			// Ending the response is the signal: the client reconnects with the
			// last id it saw and gets the rest from the log.
			s.log.InfoContext(ctx, "event stream: subscriber too slow, disconnected", "remote", r.RemoteAddr)
			return
		case errors.Is(err, intentd.ErrEngineClosed):
			return
		case intentd.ErrorKind(err) == intentd.KindBusy:
			// The store cannot serve the replay for now (a NATS server just died and
			// its leaders are being elected): the client resumes from its last id, as
			// after any end of its stream. Not a fault of the service's.
			s.log.WarnContext(ctx, "event stream: ended, the store cannot serve it now", "err", err)
			return
		default:
			s.log.ErrorContext(ctx, "event stream", "err", err)
			return
		}
	}
}

// streamWriteShare is how long a caught-up stream waits between writes for each
// stream open: the streams together write about 13,000 times a second, whatever
// their number. A write to a connection costs 12 to 19 µs of the server's CPU on
// loopback (docs/benchmarks.md), most of it in the system call, so 13,000 a second
// keep the writes to about a fifth of a core; at 2,000 streams each waits 150 ms, and
// a delivery cost 2.8 to 2.9 µs of server CPU with a lag p99 of 154 to 160 ms (50 µs
// a stream gave 3.5 µs and 105 ms; 100 µs gave 2.5 to 3.3 µs and 211 to 219 ms).
// Below minFlushWindow a stream does not wait at all, which is what a few streams
// (a console, an agent waiting on its outcome) get: every event as it is stored.
const (
	streamWriteShare = 75 * time.Microsecond
	minFlushWindow   = time.Millisecond
)

// flushWindow is how long a stream that has caught up waits before its next write.
func (s *Server) flushWindow() time.Duration {
	if s.opts.FlushWindow <= 0 {
		return 0
	}
	w := time.Duration(s.openStreams.Load()) * streamWriteShare
	if w < minFlushWindow {
		return 0
	}
	return min(w, s.opts.FlushWindow)
}

// heartbeat ends the wait for events once the stream has been silent for its
// interval. One timer serves the connection for as long as it lasts: a timer (or a
// context with a deadline) per event would cost more than writing the event. The
// timer checks when the stream last wrote and sleeps again if that was recent; only
// a silence as long as the interval cancels wait.
type heartbeat struct {
	every time.Duration
	ctx   context.Context
	start time.Time
	last  atomic.Int64 // when the stream last wrote, as time since start
	timer *time.Timer
	// wait is what the stream waits for events with; it is replaced after each
	// heartbeat, and only the stream's goroutine reads it.
	wait context.Context
	mu   sync.Mutex // guards cancel, which the timer's goroutine calls
	end  context.CancelFunc
}

func newHeartbeat(ctx context.Context, every time.Duration) *heartbeat {
	h := &heartbeat{every: every, ctx: ctx, start: time.Now()}
	h.wait, h.end = context.WithCancel(ctx)
	h.timer = time.AfterFunc(every, h.fire)
	return h
}

func (h *heartbeat) fire() {
	idle := time.Since(h.start) - time.Duration(h.last.Load())
	if idle < h.every {
		h.timer.Reset(h.every - idle)
		return
	}
	h.mu.Lock()
	h.end()
	h.mu.Unlock()
}

// wrote records a write: the silence starts again.
func (h *heartbeat) wrote() { h.last.Store(int64(time.Since(h.start))) }

// due reports whether wait ended for a heartbeat rather than for the request.
func (h *heartbeat) due() bool { return h.wait.Err() != nil && h.ctx.Err() == nil }

// rearm starts the next interval after a heartbeat was written.
func (h *heartbeat) rearm() {
	wait, end := context.WithCancel(h.ctx)
	h.mu.Lock()
	h.end()
	h.end = end
	h.mu.Unlock()
	h.wait = wait
	h.wrote()
	h.timer.Reset(h.every)
}

func (h *heartbeat) stop() {
	h.timer.Stop()
	h.mu.Lock()
	h.end()
	h.mu.Unlock()
}

// stream writes SSE frames to one client.
type stream struct {
	w            http.ResponseWriter
	rc           *http.ResponseController
	writeTimeout time.Duration
	frames       *frameCache // nil: no sharing
	// buf holds what is to be written; nil between writes. It comes from streamBufs
	// and goes back after each write: a stream that has caught up holds nothing
	// between its writes, so a few buffers serve thousands of streams, instead of
	// each stream growing one of its own to the size of its largest backlog (and
	// clearing fresh memory for it as it grows).
	buf *bytes.Buffer
	// deadline is the write deadline last set on the connection.
	deadline time.Time
}

// event buffers one event's frame.
func (st *stream) event(ev intentd.Event) error {
	var f []byte
	var err error
	if st.frames != nil {
		f, err = st.frames.frame(ev)
	} else {
		// A stream on its own (no server around it) encodes its frames itself.
		f, err = encodeFrame(ev)
	}
	if err != nil {
		return err
	}
	st.out().Write(f)
	return nil
}

// streamBufs are the streams' write buffers.
var streamBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf is the largest buffer kept for another stream: one that held an
// unusually large event is let go.
const maxPooledBuf = 4 * flushBytes

// out is the stream's buffer, taken from the pool if it has none.
func (st *stream) out() *bytes.Buffer {
	if st.buf == nil {
		st.buf = streamBufs.Get().(*bytes.Buffer)
	}
	return st.buf
}

// buffered is how many bytes wait to be written.
func (st *stream) buffered() int {
	if st.buf == nil {
		return 0
	}
	return st.buf.Len()
}

// frameSlots is how many recent events' frames are kept: enough that every stream
// that has caught up finds the newest ones.
const frameSlots = 4096

// frameCache keeps the SSE frames of recent events. Every stream sends the same bytes
// for an event, so the first to send it encodes it and the others copy the result; a
// slot holds one event and the next event with its id modulo frameSlots replaces it.
type frameCache struct {
	slots [frameSlots]atomic.Pointer[sharedFrame]
}

// sharedFrame is one event's frame, with what it was made from, so that a lookup
// never returns the frame of another event.
type sharedFrame struct {
	id    uint64
	typ   intentd.State
	data  []byte
	frame []byte
}

// frame returns ev's frame: id, type and the OrchestratorEvent as one line of data.
// The caller must not modify it.
func (c *frameCache) frame(ev intentd.Event) ([]byte, error) {
	slot := &c.slots[ev.ID%frameSlots]
	if f := slot.Load(); f != nil && f.id == ev.ID && f.typ == ev.Type && bytes.Equal(f.data, ev.Data) {
		return f.frame, nil
	}
	f, err := encodeFrame(ev)
	if err != nil {
		return nil, err
	}
	slot.Store(&sharedFrame{id: ev.ID, typ: ev.Type, data: ev.Data, frame: f})
	return f, nil
}

// encodeFrame writes one event's frame.
func encodeFrame(ev intentd.Event) ([]byte, error) {
	b := make([]byte, 0, len(ev.Data)+len(ev.Type)+40)
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, ev.ID, 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Type...)
	b = append(b, "\ndata: "...)
	if bytes.ContainsAny(ev.Data, "\r\n") {
		// A line break would end the data field and let the rest be read as
		// fields of its own. JSON never needs one outside strings, where it is
		// escaped, so compacting removes every one.
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, ev.Data); err != nil {
			return nil, err
		}
		b = buf.Bytes()
	} else {
		b = append(b, ev.Data...)
	}
	return append(b, "\n\n"...), nil
}

// flushBytes bounds what a stream buffers before it writes.
const flushBytes = 32 << 10

// flush sends what is buffered. Each write has a deadline of its own, at least nine
// tenths of the write time-out away, so that a client that stops reading frees its
// handler instead of holding it for ever. Setting a deadline re-arms the poller's
// timer under a lock; a stream that writes many times a second sets it again only
// when a tenth of the time-out has passed.
func (st *stream) flush() error {
	now := time.Now()
	if st.deadline.Sub(now) < st.writeTimeout-st.writeTimeout/10 {
		st.deadline = now.Add(st.writeTimeout)
		st.rc.SetWriteDeadline(st.deadline)
	}
	var err error
	if b := st.buf; b != nil {
		_, err = st.w.Write(b.Bytes())
		st.buf = nil
		b.Reset()
		if b.Cap() <= maxPooledBuf {
			streamBufs.Put(b)
		}
	}
	if err != nil {
		return err
	}
	return st.rc.Flush()
}
