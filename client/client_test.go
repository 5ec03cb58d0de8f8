package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAPIErrorFromOthers checks answers that are not the API's error object, as a
// proxy in front of the server would give, and the Retry-After of a 503.
func TestAPIErrorFromOthers(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		header      [2]string
		want        APIError
	}{
		{"proxy page", 502, "text/html", "<html>Bad gateway</html>", [2]string{}, APIError{Status: 502, Code: "http_502", Message: "<html>Bad gateway</html>"}},
		{"empty body", 401, "", "", [2]string{"WWW-Authenticate", "Bearer"}, APIError{Status: 401, Code: "http_401", Message: "Unauthorized"}},
		{"busy", 503, "application/json", `{"message":"full","code":"capacity_exceeded"}`, [2]string{"Retry-After", "2"},
			APIError{Status: 503, Code: "capacity_exceeded", Message: "full", RetryAfter: 2 * time.Second}},
		{"long page", 500, "text/plain", strings.Repeat("x", 300), [2]string{}, APIError{Status: 500, Code: "http_500", Message: strings.Repeat("x", 200) + "..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header[0] != "" {
					w.Header().Set(tt.header[0], tt.header[1])
				}
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer ts.Close()
			c, _ := NewClient(ts.URL)
			_, err := c.Info(t.Context())
			var ae *APIError
			if !errors.As(err, &ae) || *ae != tt.want {
				t.Fatalf("err = %#v, want %#v", err, tt.want)
			}
		})
	}
}

func TestNewClient(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"https://intents.example/api/", "https://intents.example/api", ""},
		{"127.0.0.1:8080", "", "http"},
		{"ftp://x", "", "http"},
		{"http://", "", "no host"},
		{"http://x/?a=b", "", "query"},
		{"http://[::1", "", "server URL"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := NewClient(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || c.BaseURL() != tt.want {
				t.Fatalf("NewClient = %v, %v; want %s", c, err, tt.want)
			}
		})
	}
}

// TestEventRead checks the stream reader on framings the standard allows.
func TestEventRead(t *testing.T) {
	tests := []struct {
		name     string
		stream   string
		want     []Event
		comments []string
		retry    time.Duration
		err      string
	}{
		{"one event", "retry: 3000\n\nid: 1\nevent: success\ndata: {\"a\":1}\n\n", []Event{{1, "success", []byte(`{"a":1}`)}}, nil, 3 * time.Second, "EOF"},
		{"CRLF and no space", "id:7\r\nevent:failure\r\ndata:{}\r\n\r\n", []Event{{7, "failure", []byte(`{}`)}}, nil, time.Second, "EOF"},
		{"data on two lines", "id: 2\ndata: a\ndata: b\n\n", []Event{{2, "message", []byte("a\nb")}}, nil, time.Second, "EOF"},
		{"comments between", ": heartbeat\n\nid: 3\nevent: expired\n: inside\ndata: {}\n\n", []Event{{3, "expired", []byte(`{}`)}}, []string{"heartbeat", "inside"}, time.Second, "EOF"},
		{"unknown field ignored", "id: 4\nfoo: bar\ndata: x\n\n", []Event{{4, "message", []byte("x")}}, nil, time.Second, "EOF"},
		{"cut mid-event", "id: 5\ndata: {", nil, nil, time.Second, "unexpected EOF"},
		{"no id", "data: {}\n\n", nil, nil, time.Second, "without an id"},
		{"bad id", "id: -1\ndata: {}\n\n", nil, nil, time.Second, "not an event id"},
		{"bad retry ignored", "retry: soon\n\nid: 1\ndata: x\n\n", []Event{{1, "message", []byte("x")}}, nil, time.Second, "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &EventStream{r: bufio.NewReader(strings.NewReader(tt.stream)), retry: time.Second}
			var got []Event
			var err error
			for {
				var ev Event
				if ev, err = s.read(); err != nil {
					break
				}
				got = append(got, ev)
			}
			if !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if !slices.EqualFunc(got, tt.want, func(a, b Event) bool { return a.ID == b.ID && a.Type == b.Type && string(a.Data) == string(b.Data) }) {
				t.Fatalf("events = %s, want %s", describeEvents(got), describeEvents(tt.want))
			}
			if c := s.Comments(); !slices.Equal(c, tt.comments) {
				t.Fatalf("comments = %q, want %q", c, tt.comments)
			}
			if s.retry != tt.retry {
				t.Fatalf("retry = %s, want %s", s.retry, tt.retry)
			}
		})
	}
}

func describeEvents(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "[%d %s %q]", ev.ID, ev.Type, ev.Data)
	}
	return b.String()
}

// flakyStream serves a stream of numbered events that drops the connection after each
// event, and records the Last-Event-ID of each connection.
type flakyStream struct {
	mu      sync.Mutex
	resumed []string
	total   uint64
}

func (fs *flakyStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	fs.resumed = append(fs.resumed, r.Header.Get("Last-Event-ID"))
	fs.mu.Unlock()
	var last uint64
	fmt.Sscan(r.Header.Get("Last-Event-ID"), &last)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "retry: 1\n\n")
	if last < fs.total {
		// One whole event, then half of the next: the reader must drop the half.
		fmt.Fprintf(w, "id: %d\nevent: success\ndata: {\"n\":%d}\n\nid: %d\ndata: {", last+1, last+1, last+2)
	}
}

// TestEventResume drops the connection after every event: Next resumes from the last
// id each time and returns each event once, in order.
func TestEventResume(t *testing.T) {
	fs := &flakyStream{total: 4}
	ts := httptest.NewServer(fs)
	defer ts.Close()
	c, _ := NewClient(ts.URL)
	var reconnects int
	s, err := c.Events(t.Context(), StreamOptions{From: 0, OnReconnect: func(error, int) { reconnects++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for want := uint64(1); want <= fs.total; want++ {
		ev, err := s.Next()
		if err != nil || ev.ID != want || string(ev.Data) != fmt.Sprintf(`{"n":%d}`, want) {
			t.Fatalf("Next = %+v, %v; want event %d", ev, err, want)
		}
	}
	fs.mu.Lock()
	resumed := fmt.Sprint(fs.resumed)
	fs.mu.Unlock()
	if resumed != "[ 1 2 3]" || reconnects != 3 {
		t.Fatalf("connections resumed from %s with %d reconnections, want [ 1 2 3] and 3", resumed, reconnects)
	}

	// The server has nothing more: a bounded stream gives up, and says after what.
	s.opts.MaxRetries = 2
	if _, err := s.Next(); err == nil || !strings.Contains(err.Error(), "gave up after 2") {
		t.Fatalf("Next past the end with MaxRetries 2: %v", err)
	}

	// The context ends a stream that would wait for ever.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	s2, err := c.Events(ctx, StreamOptions{From: fs.total})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Next(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next after the context ended: %v", err)
	}
}

// FuzzEventRead feeds the stream reader arbitrary bytes: it must return events or an
// error, never panic or loop, and every event it returns has an id.
func FuzzEventRead(f *testing.F) {
	for _, s := range []string{
		"retry: 3000\n\nid: 1\nevent: success\ndata: {}\n\n",
		"id:7\r\ndata:a\r\ndata:b\r\n\r\n",
		": c\n\n",
		"id: 5\ndata: {",
		"data\n\n",
		"id: 18446744073709551616\ndata: x\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &EventStream{r: bufio.NewReader(strings.NewReader(string(b))), retry: time.Second}
		for range len(b) + 1 {
			if _, err := s.read(); err != nil {
				return
			}
		}
		t.Fatalf("more events than bytes from %q", b)
	})
}
