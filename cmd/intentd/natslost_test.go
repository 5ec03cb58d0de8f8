package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// TestNATSStoreDeletedUnderIntentd deletes the stream under a running intentd: a write
// and a read answer 503 store_missing, /readyz says so, the stream is not made again,
// and a restart refuses to start on the loss.
func TestNATSStoreDeletedUnderIntentd(t *testing.T) {
	// Not parallel: times the refusal of a write against 3s.
	var args []string
	if testNATS == "" {
		args = []string{"--nats-embed"}
	}
	dir := t.TempDir()
	s := startServerIn(t, dir, args)
	id := s.submit()
	js := s.m.nats.JetStream()
	stream := strings.ToUpper(strings.ReplaceAll(s.m.Config.Nats.Prefix, ".", "_"))
	ctx := context.Background()
	if err := js.DeleteStream(ctx, stream); err != nil {
		t.Fatal(err)
	}

	intent := s.intentJSON(uuid.NewString())
	start := time.Now()
	r := s.postIntent(authored(t, intent, s.signEd25519(intent)))
	if code, msg := r.errorBody(t); r.status != http.StatusServiceUnavailable || code != intentd.CodeStoreMissing || r.header.Get("Retry-After") == "" ||
		strings.Contains(msg, stream) {
		t.Fatalf("POST /intents after the stream was deleted: %s, want 503 %s with Retry-After, naming nothing", r, intentd.CodeStoreMissing)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the write took %v to be refused", d)
	}
	if r := s.do("GET", "/intents/"+id, "", nil); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), intentd.CodeStoreMissing) {
		t.Fatalf("GET /intents/%s after the stream was deleted: %s, want 503 %s", id, r, intentd.CodeStoreMissing)
	}
	if r := s.do("GET", "/readyz", "", nil); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), intentd.CodeStoreMissing) {
		t.Fatalf("GET /readyz after the stream was deleted: %s, want 503 %s", r, intentd.CodeStoreMissing)
	}
	time.Sleep(3 * time.Second) // a periodic check or two, and the engine's retries
	if _, err := js.Stream(ctx, stream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the stream after the loss: %v, want it still missing", err)
	}
	if r := s.do("GET", "/readyz", "", nil); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), intentd.CodeStoreMissing) {
		t.Fatalf("GET /readyz later: %s, want 503 %s", r, intentd.CodeStoreMissing)
	}
	if !strings.Contains(s.logs.String(), "stream "+stream+" was deleted") {
		t.Errorf("the log does not name the stream deleted:\n%s", s.logs)
	}
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}

	err := runRefused(t, append([]string{"--data", dir, "--listen", "127.0.0.1:0"}, args...))
	if err == nil || !strings.Contains(err.Error(), "stream "+stream+" is missing") {
		t.Fatalf("a restart after the loss: %v, want a refusal naming the stream", err)
	}
}
