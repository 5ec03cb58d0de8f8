package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"

	"github.com/intentd/intentd/actors"
)

// produce makes n outcome events, one intent each, the outcomes cycling through
// success, constraint failure and extraction failure. It returns the intent ids in the
// order they were proposed to; each waits for its outcome before the next, so that event
// ids follow that order.
func (s *testServer) produce(n int) []string {
	s.t.Helper()
	solutions := []string{solutionPasses, solutionBlackL, solutionUnknown}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.submit()
		if r := s.propose(ids[i], solutions[i%len(solutions)]); r.status != http.StatusOK {
			s.t.Errorf("proposal: %s", r)
			return ids
		}
		want := "success"
		if i%3 != 0 {
			want = "failure"
		}
		s.waitStatus(ids[i], want)
	}
	return ids
}

// TestEventStreamFormat reads the stream as bytes on the wire: the headers, retry at
// the start, heartbeats while idle (past the server's read time-out, which must not
// end the stream), then each event as id, event and one line of data.
func TestEventStreamFormat(t *testing.T) {
	// Not parallel: counts heartbeats in 400ms at a 40ms interval.
	s := startServer(t, nil, func(m *Main) {
		m.HTTP.Heartbeat = 40 * time.Millisecond
		m.HTTP.ReadTimeout = 150 * time.Millisecond
		m.HTTP.Retry = 1500 * time.Millisecond
	})
	st := s.openStream(context.Background(), "")
	for name, want := range map[string]string{
		"Content-Type":      "text/event-stream",
		"Cache-Control":     "no-cache",
		"X-Accel-Buffering": "no",
	} {
		if got := st.resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	first, err := st.r.ReadString('\n')
	if err != nil || first != "retry: 1500\n" {
		t.Fatalf("first line %q (%v), want \"retry: 1500\\n\"", first, err)
	}

	time.Sleep(400 * time.Millisecond) // idle for more than twice the read time-out
	ids := s.produce(1)
	ev, err := st.next()
	if err != nil {
		t.Fatalf("the stream ended while idle: %v", err)
	}
	beats := 0
	for _, c := range st.comments {
		if c == "heartbeat" {
			beats++
		}
	}
	if beats < 3 {
		t.Fatalf("%d heartbeats in 400ms at a 40ms interval; comments %q", beats, st.comments)
	}
	if want := s.eventIDs(1)[0]; ev.id != want || ev.event != "success" || ev.dataLines != 1 {
		t.Fatalf("event = %+v, want id %s, event success, one data line", ev, want)
	}
	r := s.do("GET", "/intents/"+ids[0]+"/status", "", nil)
	wantData := strings.Replace(strings.TrimSpace(string(r.body)), `"status":"success"`, `"type":"success"`, 1)
	if ev.data != wantData {
		t.Fatalf("data %s, want the status with its type: %s", ev.data, wantData)
	}
}

// TestEventFilters selects events by intent and by type; ids stay the global ones.
func TestEventFilters(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	ids := s.produce(6) // success, failure, failure, success, failure, failure
	tests := []struct {
		name  string
		query string
		want  []int // event ids
	}{
		{"no filter", "", []int{1, 2, 3, 4, 5, 6}},
		{"one intent", "?intent_id=" + ids[3], []int{4}},
		{"intent in upper case", "?intent_id=" + strings.ToUpper(ids[3]), []int{4}},
		{"two intents", "?intent_id=" + ids[1] + "&intent_id=" + ids[4], []int{2, 5}},
		{"one type", "?type=success", []int{1, 4}},
		{"types, comma-separated", "?type=expired,success", []int{1, 4}},
		{"type and intent", "?type=failure&intent_id=" + ids[0] + "&intent_id=" + ids[2], []int{3}},
		{"resume and type", "?type=failure&last-event-id=3", []int{5, 6}},
	}
	evIDs := s.eventIDs(len(ids))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Well inside the stream's 15 s heartbeat: a matching event the stream
			// holds back while it skips the rest of the replay fails here.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st := s.openStream(ctx, strings.Replace(tt.query, "last-event-id=3", "last-event-id="+evIDs[2], 1))
			for _, want := range tt.want {
				ev, err := st.next()
				if err != nil {
					t.Fatal(err)
				}
				if ev.id != evIDs[want-1] {
					t.Fatalf("event %s, want %s, the %dth", ev.id, evIDs[want-1], want)
				}
			}
			// Nothing more may come before the client leaves.
			go func() { time.Sleep(100 * time.Millisecond); cancel() }()
			if ev, err := st.next(); err == nil {
				t.Fatalf("the filter let through event %+v", ev)
			}
		})
	}
}

// TestEventResume disconnects a client again and again, at random points, while
// outcomes keep coming in bursts, and resumes each time from the last id it saw: by the
// header, and by the query parameter as a browser's first connection would. The
// subscriber buffer is one event, so the server also cuts the client off when a burst
// outruns it. The client must see every event exactly once, in order.
func TestEventResume(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, func(m *Main) {
		m.tuneEngine = func(c *actors.Config) { c.SubscriberBuffer = 1 }
	})
	const n, burst = 80, 10
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.submit()
	}
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for b := 0; b < n; b += burst {
			var wg sync.WaitGroup
			for _, id := range ids[b : b+burst] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
						t.Errorf("proposal: %s", r)
					}
				}()
			}
			wg.Wait()
			time.Sleep(20 * time.Millisecond)
		}
	}()

	var got []sseEvent
	last := ""
	connections, cutByServer := 0, 0
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("after %d connections, %d of %d events", connections, len(got), n)
		}
		connections++
		var st *sseStream
		ctx, cancel := context.WithCancel(context.Background())
		switch {
		case last == "":
			st = s.openStream(ctx, "")
		case connections%2 == 0:
			st = s.openStream(ctx, "", "Last-Event-ID", last)
		default:
			st = s.openStream(ctx, "?last-event-id="+last)
		}
		for range 1 + rand.IntN(12) {
			ev, err := st.next()
			if errors.Is(err, io.EOF) {
				cutByServer++
				break
			}
			if err != nil {
				t.Fatalf("connection %d: %v", connections, err)
			}
			got = append(got, ev)
			last = ev.id
			if len(got) == n {
				break
			}
		}
		cancel()
		st.close()
	}
	<-produced
	t.Logf("%d events over %d connections, %d ended by the server", n, connections, cutByServer)
	seen := make(map[string]bool)
	evIDs := s.eventIDs(n)
	for i, ev := range got {
		if ev.id != evIDs[i] {
			t.Fatalf("event %d has id %s: a gap or a duplicate", i, ev.id)
		}
		o := decodeOutcome(t, ev)
		if seen[o.IntentID] {
			t.Fatalf("intent %s has two events", o.IntentID)
		}
		seen[o.IntentID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("no event for intent %s", id)
		}
	}
}

// TestManySubscribers runs two hundred subscribers at once, half connected before the
// outcomes start and half while they come; each must get every event once, in order.
func TestManySubscribers(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	const subscribers, n = 200, 15
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var connected, done sync.WaitGroup
	errs := make(chan error, subscribers)
	seenIDs := make([][]string, subscribers) // each subscriber writes its own
	subscribe := func(i int) {
		defer done.Done()
		st, err := openStream(ctx, s.url, "")
		if i < subscribers/2 {
			connected.Done()
		}
		if err != nil {
			errs <- fmt.Errorf("subscriber %d: %v", i, err)
			return
		}
		defer st.close()
		for want := 1; want <= n; want++ {
			ev, err := st.next()
			if err != nil {
				errs <- fmt.Errorf("subscriber %d, event %d: %v", i, want, err)
				return
			}
			seenIDs[i] = append(seenIDs[i], ev.id)
		}
	}
	connected.Add(subscribers / 2)
	done.Add(subscribers)
	for i := range subscribers / 2 {
		go subscribe(i)
	}
	connected.Wait()
	produced := make(chan struct{})
	go func() { s.produce(n); close(produced) }()
	for i := subscribers / 2; i < subscribers; i++ {
		go subscribe(i)
		time.Sleep(time.Millisecond)
	}
	done.Wait()
	<-produced
	close(errs)
	evIDs := s.eventIDs(n)
	for i, got := range seenIDs {
		if !slices.Equal(got, evIDs) {
			t.Errorf("subscriber %d read events %v, want %v", i, got, evIDs)
		}
	}
	for err := range errs {
		t.Error(err)
	}
}

// stopBackOff ends the r3labs client's reconnection loop once its context ends.
type stopBackOff struct{ ctx context.Context }

func (b stopBackOff) NextBackOff() time.Duration {
	if b.ctx.Err() != nil {
		return -1 // backoff.Stop
	}
	return 10 * time.Millisecond
}

func (stopBackOff) Reset() {}

// TestEventStreamWithR3labs reads the stream with github.com/r3labs/sse, an SSE client
// written by others, so that the framing is checked by code that did not write it.
func TestEventStreamWithR3labs(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	s.produce(2)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := sse.NewClient(s.url + "/events")
	client.ReconnectStrategy = stopBackOff{ctx}
	events := make(chan *sse.Event, 16)
	ended := make(chan error, 1)
	go func() {
		ended <- client.SubscribeRawWithContext(ctx, func(ev *sse.Event) {
			if len(ev.Data) > 0 { // the retry field arrives as an event without data
				events <- ev
			}
		})
	}()
	produced := make(chan struct{})
	go func() { defer close(produced); s.produce(2) }()
	defer func() { <-produced }()

	var got []string
	for i := 1; i <= 4; i++ {
		select {
		case ev := <-events:
			var o outcomeEvent
			if err := json.Unmarshal(ev.Data, &o); err != nil {
				t.Fatalf("event %s: data %q: %v", ev.ID, ev.Data, err)
			}
			got = append(got, string(ev.ID))
			if string(ev.Event) != o.Type || (o.Type != "success" && o.Type != "failure") {
				t.Fatalf("event %d: id %s, event %s, data %s", i, ev.ID, ev.Event, ev.Data)
			}
		case err := <-ended:
			t.Fatalf("the client stopped after %d events: %v", i-1, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d did not come", i)
		}
	}
	want := s.eventIDs(4)
	if !slices.Equal(got, want) {
		t.Fatalf("the client read events %v, want %v", got, want)
	}
	if last := string(client.LastEventID.Load().([]byte)); last != want[3] {
		t.Fatalf("the client's last event id is %q, want %s", last, want[3])
	}
}

// TestShutdownEndsStreams closes the server under an open stream: the stream ends
// cleanly between events and Close does not wait for the shutdown time-out.
func TestShutdownEndsStreams(t *testing.T) {
	// Not parallel: times the shutdown against 5s.
	s := startServer(t, nil)
	s.produce(1)
	first := s.eventIDs(1)[0]
	st := s.openStream(context.Background(), "")
	if ev, err := st.next(); err != nil || ev.id != first {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- s.m.Close() }()
	if ev, err := st.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after shutdown began the stream gave %+v, %v; want a clean end (EOF)", ev, err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close is still waiting 10s after the stream ended")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %s", d)
	}
	if _, err := http.Get(s.url + "/info"); err == nil {
		t.Fatal("the server still accepts connections after Close")
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRetentionAcrossRestart keeps the newest two events, restarts on the same data
// folder (which prunes), and resumes from before the oldest retained event: the stream
// says so in a comment and starts at the oldest.
func TestRetentionAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, []string{"--event-retention", "2"})
	ids := s.produce(5)
	evIDs := s.eventIDs(5)
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}
	s = startServerIn(t, dir, []string{"--event-retention", "2"})
	if st := s.status(ids[0]); st["status"] != "success" {
		t.Fatalf("after a restart the first intent is %v", st)
	}
	st := s.openStream(context.Background(), "", "Last-Event-ID", evIDs[0])
	ev, err := st.next()
	if err != nil || ev.id != evIDs[3] {
		t.Fatalf("first event after resuming from %s: %+v, %v; want id %s", evIDs[0], ev, err, evIDs[3])
	}
	if len(st.comments) != 1 || !strings.Contains(st.comments[0], "oldest retained") {
		t.Fatalf("comments %q, want one saying the stream starts at the oldest retained event", st.comments)
	}
	ids = append(ids, s.produce(1)...)
	if ev, err := st.next(); err != nil || ev.id != evIDs[4] {
		t.Fatalf("second event: %+v, %v; want %s", ev, err, evIDs[4])
	}
	ev, err = st.next()
	if err != nil || decodeOutcome(t, ev).IntentID != ids[5] {
		t.Fatalf("live event after the restart: %+v, %v; want the event of %s", ev, err, ids[5])
	}
	if id, last := mustAtoi(t, ev.id), mustAtoi(t, evIDs[4]); id <= last {
		t.Fatalf("live event after the restart has id %d, not after %d", id, last)
	}
}
