package http

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/internal/syncbuf"
	"github.com/intentd/intentd/persistence"
)

// faultyEngine is the real engine with some methods made to fail as only a broken
// disk or a bug would make them.
type faultyEngine struct {
	*actors.Engine
	cause error
}

func (f faultyEngine) GetIntent(context.Context, string) (json.RawMessage, error) {
	return nil, f.cause
}

func (f faultyEngine) Status(context.Context, string) (intentd.Status, error) {
	panic("status machinery on fire")
}

func (f faultyEngine) PutPolicy(context.Context, string) (string, error) {
	return "", &intentd.Error{Kind: intentd.KindInternal, Code: intentd.CodeInternal, Message: "internal error", Err: f.cause}
}

func openEngine(t *testing.T) *actors.Engine {
	t.Helper()
	store, err := persistence.Open("db", persistence.Options{FS: persistence.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Store, cfg.Extractor = store, evidence.DefaultCatalog()
	e, err := actors.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); store.Close() })
	return e
}

// TestInternalErrors checks that a fault of the service is a 500 whose body says
// only "internal error", and whose cause is logged.
func TestInternalErrors(t *testing.T) {
	logs := &syncbuf.Buffer{}
	cause := errors.New("pebble: corrupt block at offset 4096")
	srv := NewServer(faultyEngine{Engine: openEngine(t), cause: cause}, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ts := httptest.NewServer(srv)
	defer ts.Close()

	tests := []struct {
		name, method, path, contentType, body, logged string
	}{
		{"plain error", "GET", "/intents/6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10", "", "", "corrupt block"},
		{"internal *intentd.Error", "POST", "/policies", "text/plain", "name x\nrequires { true; }\n", "corrupt block"},
		{"panic", "GET", "/intents/6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10/status", "", "", "status machinery on fire"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ts.URL+tt.path, strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 500 || strings.TrimSpace(string(body)) != `{"message":"internal error","code":"internal"}` {
				t.Fatalf("%d %s, want 500 with only \"internal error\"", resp.StatusCode, body)
			}
			if !strings.Contains(logs.String(), tt.logged) {
				t.Fatalf("the cause %q was not logged:\n%s", tt.logged, logs)
			}
		})
	}
}

// TestStatusTable checks that every kind of the domain maps to a status, and each to
// the one decisions.md gives it.
func TestStatusTable(t *testing.T) {
	want := map[intentd.Kind]int{
		intentd.KindInternal: 500, intentd.KindInvalid: 400, intentd.KindUnprocessable: 422, intentd.KindNotFound: 404,
		intentd.KindConflict: 409, intentd.KindBusy: 503, intentd.KindTooLarge: 413,
		intentd.KindUnauthorized: 401, intentd.KindForbidden: 403, intentd.KindMethodNotAllowed: 405,
		intentd.KindTooMany: 429,
	}
	for k := intentd.Kind(0); !strings.HasPrefix(k.String(), "kind("); k++ {
		if statusOf[k] != want[k] || want[k] == 0 {
			t.Errorf("kind %s maps to %d, want %d", k, statusOf[k], want[k])
		}
	}
	rec := httptest.NewRecorder()
	Error(rec, httptest.NewRequest("GET", "/", nil), slog.Default(), intentd.Errorf(intentd.KindBusy, intentd.CodeCapacityExceeded, "full"))
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("busy: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// TestStreamFraming writes events through the stream writer: data with line breaks
// inside the JSON is sent on one line, and the fields are in order.
func TestStreamFraming(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{"one line", `{"type":"expired","intent_id":"x"}`, "id: 7\nevent: expired\ndata: {\"type\":\"expired\",\"intent_id\":\"x\"}\n\n"},
		{"line breaks", "{\n  \"type\": \"expired\",\r\n  \"intent_id\": \"a\\nb\"\n}", "id: 7\nevent: expired\ndata: {\"type\":\"expired\",\"intent_id\":\"a\\nb\"}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			st := &stream{w: rec, rc: http.NewResponseController(rec)}
			if err := st.event(intentd.Event{ID: 7, Type: intentd.StateExpired, Data: []byte(tt.data)}); err != nil {
				t.Fatal(err)
			}
			if err := st.flush(); err != nil {
				t.Fatal(err)
			}
			if rec.Body.String() != tt.want || !rec.Flushed {
				t.Fatalf("wrote %q (flushed %v), want %q", rec.Body.String(), rec.Flushed, tt.want)
			}
		})
	}
}

// TestFlushWindow checks how long a caught-up stream waits between writes: not at
// all among a few streams, longer with more of them, never past Options.FlushWindow.
func TestFlushWindow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     time.Duration
		streams int64
		want    time.Duration
	}{
		{"one stream", 150 * time.Millisecond, 1, 0},
		{"a few streams", 150 * time.Millisecond, 13, 0},
		{"fourteen streams", 150 * time.Millisecond, 14, 1050 * time.Microsecond},
		{"a thousand streams", 150 * time.Millisecond, 1000, 75 * time.Millisecond},
		{"two thousand streams", 150 * time.Millisecond, 2000, 150 * time.Millisecond},
		{"past the longest window", 150 * time.Millisecond, 10000, 150 * time.Millisecond},
		{"a shorter longest window", 20 * time.Millisecond, 2000, 20 * time.Millisecond},
		{"gathering off", -1, 10000, 0},
		{"the default, below its longest window", 0, 2000, 150 * time.Millisecond},
		{"the default, at its longest window", 0, 2667, 200 * time.Millisecond},
		{"the default, past its longest window", 0, 10000, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{FlushWindow: tc.max}
			opts.setDefaults()
			s := &Server{opts: opts}
			s.openStreams.Store(tc.streams)
			if got := s.flushWindow(); got != tc.want {
				t.Errorf("flushWindow with %d streams = %v, want %v", tc.streams, got, tc.want)
			}
		})
	}
}

// burstEngine serves one subscription that is fed by the test and, as the engine's
// are, holds at most cap events: one more cuts the reader off.
type burstEngine struct {
	intentd.Engine
	sub *burstSub
}

func (b burstEngine) Subscribe(context.Context, uint64, intentd.Filter) (intentd.Subscription, error) {
	return b.sub, nil
}

// burstSub holds events for the stream in a buffer of its own, cut off when it is
// full, and closes what Filling gave once half of it waits: the contract of
// intentd.Subscription, not the engine's way of keeping it.
type burstSub struct {
	live    chan intentd.Event
	cut     chan struct{}
	cutOnce sync.Once
	mu      sync.Mutex
	filling []chan struct{}
}

func (s *burstSub) publish(ev intentd.Event) {
	select {
	case s.live <- ev:
	default:
		s.cutOnce.Do(func() { close(s.cut) })
		return
	}
	if len(s.live) >= cap(s.live)/2 {
		s.mu.Lock()
		for _, c := range s.filling {
			close(c)
		}
		s.filling = nil
		s.mu.Unlock()
	}
}

func (s *burstSub) Filling() <-chan struct{} {
	c := make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.live) >= cap(s.live)/2 {
		close(c)
	} else {
		s.filling = append(s.filling, c)
	}
	return c
}

func (s *burstSub) Next(ctx context.Context) (intentd.Event, error) {
	select {
	case ev := <-s.live:
		return ev, nil
	case <-s.cut:
		return intentd.Event{}, intentd.ErrSubscriberTooSlow
	case <-ctx.Done():
		return intentd.Event{}, ctx.Err()
	}
}

func (s *burstSub) Pending() bool   { return len(s.live) > 0 }
func (s *burstSub) Truncated() bool { return false }
func (s *burstSub) Close()          {}

// TestBurstDuringTheWindow sends a caught-up stream, waiting out a long window, more
// events than its subscription holds: the stream writes as the buffer fills instead of
// being cut off, and every event arrives on the one connection.
func TestBurstDuringTheWindow(t *testing.T) {
	const buffer, burst = 128, 400
	sub := &burstSub{live: make(chan intentd.Event, buffer), cut: make(chan struct{})}
	srv := NewServer(burstEngine{sub: sub}, Options{FlushWindow: 3 * time.Second, Heartbeat: time.Minute})
	// As if thousands of streams were open: this one waits the whole window.
	srv.openStreams.Store(1 << 20)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	event := func(id uint64) intentd.Event {
		return intentd.Event{ID: id, Type: intentd.StateSuccess, Data: []byte(`{"intent_id":"x"}`)}
	}
	got := make(chan uint64, burst+1)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				n, _ := strconv.ParseUint(id, 10, 64)
				got <- n
			}
		}
	}()
	sub.publish(event(1)) // written at once; the stream then waits its window
	if n := <-got; n != 1 {
		t.Fatalf("first event id %d, want 1", n)
	}
	time.Sleep(50 * time.Millisecond) // the stream is in its window now
	// 500 events a second: the buffer fills in a fifth of the window.
	for id := uint64(2); id <= burst+1; id++ {
		time.Sleep(2 * time.Millisecond)
		sub.publish(event(id))
	}
	// The last events, fewer than half a buffer, go out when the window ends.
	deadline := time.After(10 * time.Second)
	for want := uint64(2); want <= burst+1; want++ {
		select {
		case n, ok := <-got:
			if !ok {
				t.Fatalf("the stream ended before event %d", want)
			}
			if n != want {
				t.Fatalf("event id %d, want %d", n, want)
			}
		case <-deadline:
			t.Fatalf("event %d did not arrive within 10 s", want)
		}
	}
	select {
	case <-sub.cut:
		t.Fatal("the subscription was cut off")
	default:
	}
}

// brokenStream is an engine whose event streams end with cause at their first read.
type brokenStream struct {
	*actors.Engine
	cause error
}

func (b brokenStream) Subscribe(context.Context, uint64, intentd.Filter) (intentd.Subscription, error) {
	return endingSub{b.cause}, nil
}

// endingSub is a subscription whose first read ends it with err.
type endingSub struct{ err error }

func (s endingSub) Next(context.Context) (intentd.Event, error) { return intentd.Event{}, s.err }
func (endingSub) Pending() bool                                 { return false }
func (endingSub) Filling() <-chan struct{}                      { return nil }
func (endingSub) Truncated() bool                               { return false }
func (endingSub) Close()                                        {}

// TestEventStreamEndLogged: an event stream that ends because the store cannot serve it
// for now (a NATS election) is logged as a warning, and one that ends for a fault of the
// service's as an error; the client resumes from its last id either way.
func TestEventStreamEndLogged(t *testing.T) {
	tests := []struct {
		name  string
		cause error
		level string
	}{
		{"the store unavailable", &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStoreUnavailable, Message: "the store is unreachable; retry later"}, "level=WARN"},
		{"a fault", intentd.Internal("replay events: %w", errors.New("pebble: corrupt block")), "level=ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &syncbuf.Buffer{}
			srv := NewServer(brokenStream{Engine: openEngine(t), cause: tt.cause}, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
			ts := httptest.NewServer(srv)
			defer ts.Close()
			resp, err := http.Get(ts.URL + "/events")
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /events: %d, want 200 and a stream that ends", resp.StatusCode)
			}
			var line string
			for l := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(l, "event stream") {
					line = l
				}
			}
			if !strings.Contains(line, tt.level) {
				t.Fatalf("the stream's end logged as %q, want %s", line, tt.level)
			}
		})
	}
}
