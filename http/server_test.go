package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/evidence"
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

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInternalErrors checks that a fault of the service is a 500 whose body says
// only "internal error", and whose cause is logged.
func TestInternalErrors(t *testing.T) {
	logs := &lockedBuffer{}
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{opts: Options{FlushWindow: tc.max}}
			s.openStreams.Store(tc.streams)
			if got := s.flushWindow(); got != tc.want {
				t.Errorf("flushWindow with %d streams = %v, want %v", tc.streams, got, tc.want)
			}
		})
	}
}
