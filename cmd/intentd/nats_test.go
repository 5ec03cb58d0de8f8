package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/intentd/intentd/natsstore"
)

// TestOnNATS runs an intent to success with the state in NATS JetStream, embedded in
// intentd or run beside it, restarts intentd, and finds the intent and its event again.
func TestOnNATS(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"embedded", func(*testing.T) []string { return []string{"--nats-embed"} }},
		{"external", func(t *testing.T) []string {
			srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Shutdown)
			return []string{"--store", srv.URL(), "--nats-prefix", "e2e"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := tc.args(t)
			s := startServerIn(t, dir, args)
			id := s.submit()
			if r := s.propose(id, solutionPasses); r.status != 200 {
				t.Fatalf("proposal: %s", r)
			}
			s.waitStatus(id, "success")
			first := s.firstEvent()
			if decodeOutcome(t, first).IntentID != id {
				t.Fatalf("event %+v is not of intent %s", first, id)
			}
			if err := s.m.Close(); err != nil {
				t.Fatal(err)
			}

			s = startServerIn(t, dir, args)
			if st := s.status(id); st["status"] != "success" {
				t.Fatalf("after a restart the intent is %v", st)
			}
			if ev := s.firstEvent(); ev.id != first.id || ev.data != first.data {
				t.Fatalf("after a restart the first event is %+v, want %+v", ev, first)
			}
			// A second intent's event comes after the first, live.
			st := s.openStream(context.Background(), "", "Last-Event-ID", first.id)
			defer st.close()
			next := s.submit()
			if r := s.propose(next, solutionBlackL); r.status != 200 {
				t.Fatalf("proposal: %s", r)
			}
			ev, err := st.next()
			if err != nil || decodeOutcome(t, ev).IntentID != next {
				t.Fatalf("event after %s: %+v, %v; want the outcome of %s", first.id, ev, err, next)
			}
			a, _ := strconv.ParseUint(first.id, 10, 64)
			b, _ := strconv.ParseUint(ev.id, 10, 64)
			if b <= a {
				t.Fatalf("event id %d after %d", b, a)
			}
		})
	}
}

// firstEvent reads the oldest event from a fresh stream.
func (s *testServer) firstEvent() sseEvent {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := s.openStream(ctx, "")
	defer st.close()
	ev, err := st.next()
	if err != nil {
		s.t.Fatalf("first event: %v", err)
	}
	return ev
}
