package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/syncbuf"
)

// TestWatchResumesFromFrom drops the event stream once, before its first event: watch
// --from 1 says it resumes after event 1, the id it was asked to start after, and then
// prints event 2.
func TestWatchResumesFromFrom(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	server := startServer(t)
	if r := runCLI(t, server, "demo"); r.code != exitOK {
		t.Fatalf("demo: %d %s", r.code, r.stderr)
	}
	target, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // the stream's lines as they come
	var dropped atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/events" && dropped.CompareAndSwap(false, true) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			return // the stream ends before its first event
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	done := make(chan int, 1)
	go func() { done <- runContext(ctx, []string{"--server", front.URL, "watch", "--from", "1"}, out, errOut) }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(errOut.String(), "resuming after event 1 ") || !strings.Contains(out.String(), "#2 ") {
		if time.Now().After(deadline) {
			t.Fatalf("watch --from 1 after a drop said %q and printed %q, want it to resume after event 1 and print event 2", errOut.String(), out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(out.String(), "#1 ") {
		t.Fatalf("watch --from 1 printed event 1: %q", out.String())
	}
	cancel()
	<-done
}
