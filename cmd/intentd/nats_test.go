package main

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/natsstore"
)

// TestOnNATS runs an intent to success with the state in NATS JetStream, embedded in
// intentd or run beside it, restarts intentd, and finds the intent and its event again.
func TestOnNATS(t *testing.T) {
	t.Parallel()
	ownStores(t)
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

// TestNATSGoneWhileRunning stops the NATS server under a running intentd: requests that
// need the store answer 503 store_unavailable with Retry-After, and once the server is
// back on the same port and files, intentd serves again by itself.
func TestNATSGoneWhileRunning(t *testing.T) {
	// Not parallel: restarts NATS on the port it had, which a test beside it could take.
	ownStores(t)
	natsDir := t.TempDir()
	srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: natsDir})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL())
	port, _ := strconv.Atoi(u.Port())
	s := startServer(t, []string{"--store", srv.URL()})
	before := s.submit()

	srv.Shutdown()
	id := uuid.NewString()
	intent := s.intentJSON(id)
	body := authored(t, intent, s.signEd25519(intent))
	post := func() (int, http.Header, string) {
		r := s.postIntent(body)
		return r.status, r.header, string(r.body)
	}
	status, header, answer := post()
	if status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" ||
		!strings.Contains(answer, `"code":"`+intentd.CodeStoreUnavailable+`"`) {
		t.Fatalf("POST /intents with NATS down: %d %s, want 503 %s with Retry-After", status, answer, intentd.CodeStoreUnavailable)
	}
	if r := s.do("GET", "/readyz", "", nil); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), intentd.CodeStoreUnavailable) {
		t.Fatalf("GET /readyz with NATS down: %s, want 503 %s", r, intentd.CodeStoreUnavailable)
	}

	srv, err = natsstore.Embed(natsstore.EmbedOptions{Dir: natsDir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	deadline := time.Now().Add(15 * time.Second)
	for status, _, answer = post(); status == http.StatusServiceUnavailable && time.Now().Before(deadline); status, _, answer = post() {
		time.Sleep(100 * time.Millisecond)
	}
	if status != http.StatusOK {
		t.Fatalf("POST /intents after NATS came back: %d %s", status, answer)
	}
	for _, id := range []string{before, id} {
		if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
			t.Fatalf("proposal after NATS came back: %s", r)
		}
		s.waitStatus(id, "success")
	}
}
