package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// webhookView is the part of GET /webhooks/{id} these tests read.
type webhookView struct {
	ID             string `json:"id"`
	URL            string `json:"url"`
	Status         string `json:"status"`
	DisabledReason string `json:"disabled_reason"`
	Delivered      uint64 `json:"delivered_through"`
	Secret         string `json:"secret"`
	FailingSince   string `json:"failing_since"`
	Deliverer      string `json:"deliverer"`
	Attempts       []struct {
		Status int    `json:"status"`
		Error  string `json:"error"`
	} `json:"recent_attempts"`
}

// webhook reads GET /webhooks/{id}.
func (s *testServer) webhook(id string) webhookView {
	s.t.Helper()
	r := s.do("GET", "/webhooks/"+id, "", nil)
	var wh webhookView
	if r.status != http.StatusOK || json.Unmarshal(r.body, &wh) != nil {
		s.t.Fatalf("GET /webhooks/%s: %s", id, r)
	}
	return wh
}

// waitWebhook polls GET /webhooks/{id} until ok holds of it, for 20 s at most.
func (s *testServer) waitWebhook(id, what string, ok func(webhookView) bool) webhookView {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		wh := s.webhook(id)
		if ok(wh) {
			return wh
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("GET /webhooks/%s: %+v; want %s within 20s", id, wh, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventNumber is an event id of eventIDs as a number.
func eventNumber(t *testing.T, id string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatalf("event id %q: %v", id, err)
	}
	return n
}

// requestsFor counts the requests the receiver took, whatever it answered, per
// webhook-id.
func (rc *webhookReceiver) requestsFor() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]int{}
	for _, d := range rc.got {
		out[d.id]++
	}
	return out
}

// requests is how many requests the receiver took, whatever it answered.
func (rc *webhookReceiver) requests() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

// since are the deliveries taken (2xx) after the first n requests.
func (rc *webhookReceiver) since(n int) []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []delivery
	for _, d := range rc.got[n:] {
		if d.answered < 300 {
			out = append(out, d)
		}
	}
	return out
}

// TestWebhookDisabledAfterSchedule follows an endpoint through what an admin does with
// it: a receiver that answers 500 to every attempt of the whole retry schedule gets the
// endpoint disabled, its position kept before the failed event and nothing after it
// sent; enabled again with the receiver fixed, it delivers that event and the rest in
// order; redeliver sends the events from an id again; send answers one attempt; disable
// and delete stop the deliveries at once, while another endpoint goes on. It also checks the list, and
// what POST /webhooks refuses: bodies off its schema, and loopback and private
// addresses on a server without --webhook-allow-private. On both stores (make test).
func TestWebhookDisabledAfterSchedule(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--webhook-allow-private", "--webhook-retry-schedule", "0s,20ms,20ms"})
	rc, other := newWebhookReceiver(t), newWebhookReceiver(t)
	rc.setFailing(http.StatusInternalServerError)
	id, _ := s.createWebhook(fmt.Sprintf(`{"url": %q}`, rc.URL))
	otherID, _ := s.createWebhook(fmt.Sprintf(`{"url": %q}`, other.URL))
	start := s.webhook(id).Delivered

	const n = 3
	s.decide(n)
	ids := s.eventIDs(n)
	first := eventNumber(t, ids[0])
	if start >= first {
		t.Fatalf("a new endpoint is delivered through event %d, not before the first event after its creation, %d", start, first)
	}

	t.Run("disabled after the schedule", func(t *testing.T) {
		wh := s.waitWebhook(id, "disabled", func(wh webhookView) bool { return wh.Status == "disabled" })
		if !strings.Contains(wh.DisabledReason, ids[0]) {
			t.Errorf("disabled_reason %q does not name the failed event %s", wh.DisabledReason, ids[0])
		}
		if wh.Delivered != start {
			t.Errorf("delivered_through %d, want %d: before the failed event %s", wh.Delivered, start, ids[0])
		}
		// Three attempts of the schedule, all of the first event, and none of the
		// events after it, which wait for it: the endpoint was disabled after them.
		if got := rc.requestsFor(); len(got) != 1 || got[ids[0]] != 3 {
			t.Errorf("requests per event %v, want 3 attempts of event %s alone", got, ids[0])
		}
	})

	t.Run("enabled again", func(t *testing.T) {
		rc.setFailing(0)
		r := s.do("POST", "/webhooks/"+id+"/enable", "", nil)
		var wh webhookView
		if r.status != http.StatusOK || json.Unmarshal(r.body, &wh) != nil || wh.Status != "active" || wh.DisabledReason != "" {
			t.Fatalf("POST /webhooks/%s/enable: %s, want it active", id, r)
		}
		checkInOrder(t, waitTaken(t, rc, n, 20*time.Second), ids)
		s.waitWebhook(id, "active, delivered through "+ids[n-1], func(wh webhookView) bool {
			return wh.Status == "active" && wh.Delivered == eventNumber(t, ids[n-1])
		})
	})

	t.Run("redeliver", func(t *testing.T) {
		mark := rc.requests()
		r := s.do("POST", "/webhooks/"+id+"/redeliver", "application/json", fmt.Appendf(nil, `{"from_event_id": %s}`, ids[1]))
		if r.status != http.StatusOK {
			t.Fatalf("POST /webhooks/%s/redeliver: %s", id, r)
		}
		deadline := time.Now().Add(20 * time.Second)
		for len(rc.since(mark)) < n-1 {
			if time.Now().After(deadline) {
				t.Fatalf("after redeliver from %s the receiver took %d deliveries, want %d", ids[1], len(rc.since(mark)), n-1)
			}
			time.Sleep(20 * time.Millisecond)
		}
		checkInOrder(t, rc.since(mark), ids[1:])
	})

	t.Run("send", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			receiver  int // what the receiver answers; 0 for 200
			status    int
			wantError bool
		}{
			{"the receiver takes it", 0, http.StatusOK, false},
			{"the receiver fails", http.StatusServiceUnavailable, http.StatusServiceUnavailable, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rc.setFailing(tc.receiver)
				defer rc.setFailing(0)
				mark := rc.requests()
				r := s.do("POST", "/webhooks/"+id+"/send", "application/json", fmt.Appendf(nil, `{"event_id": %s}`, ids[0]))
				var a struct {
					EventID uint64 `json:"event_id"`
					Status  int    `json:"status"`
					Error   string `json:"error"`
				}
				if r.status != http.StatusOK || json.Unmarshal(r.body, &a) != nil {
					t.Fatalf("POST /webhooks/%s/send: %s", id, r)
				}
				if a.EventID != first || a.Status != tc.status || (a.Error != "") != tc.wantError {
					t.Errorf("POST /webhooks/%s/send answered %s, want event %d, status %d, an error %v", id, r.body, first, tc.status, tc.wantError)
				}
				rc.mu.Lock()
				got := slices.Clone(rc.got[mark:])
				rc.mu.Unlock()
				if len(got) != 1 || got[0].id != ids[0] {
					t.Errorf("the receiver took %d requests during the send, want one of event %s", len(got), ids[0])
				}
			})
		}
	})

	t.Run("bad event ids", func(t *testing.T) {
		for _, tc := range []struct {
			name, path, body, member string
		}{
			{"send of no event", "/send", `{"event_id": 999999999}`, "event_id"},
			{"send without an id", "/send", `{}`, "event_id"},
			{"send of event 0", "/send", `{"event_id": 0}`, "event_id"},
			{"send with an unknown member", "/send", fmt.Sprintf(`{"event_id": %s, "now": true}`, ids[0]), "now"},
			{"redeliver past the last event", "/redeliver", `{"from_event_id": 999999999}`, "from_event_id"},
			{"redeliver from a string", "/redeliver", `{"from_event_id": "1"}`, "from_event_id"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := s.do("POST", "/webhooks/"+id+tc.path, "application/json", []byte(tc.body))
				checkInvalidWebhook(t, r, tc.member)
			})
		}
	})

	t.Run("list", func(t *testing.T) {
		r := s.do("GET", "/webhooks", "", nil)
		var list struct {
			Webhooks  []webhookView `json:"webhooks"`
			PublicKey string        `json:"public_key"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil {
			t.Fatalf("GET /webhooks: %s", r)
		}
		var got []string
		for _, wh := range list.Webhooks {
			got = append(got, wh.ID)
			if wh.Secret != "" {
				t.Errorf("GET /webhooks shows the secret of %s", wh.ID)
			}
		}
		want := []string{id, otherID}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("GET /webhooks lists %v, want %v by id", got, want)
		}
		if !strings.HasPrefix(list.PublicKey, "whpk_") {
			t.Errorf("GET /webhooks public_key %q, want a whpk_ key", list.PublicKey)
		}
	})

	// Events decided so far; each step below decides more.
	events := n
	// stopped checks that the endpoint is sent none of the events decided after what
	// stopped it: the other endpoint takes them, and by then the stopped one would
	// have been sent them too.
	stopped := func(t *testing.T, what string) {
		t.Helper()
		before := rc.requestsFor()
		s.decide(2)
		events += 2
		more := s.eventIDs(events)[events-2:]
		waitTaken(t, other, events, 20*time.Second)
		for ev, k := range rc.requestsFor() {
			if k != before[ev] || slices.Contains(more, ev) {
				t.Errorf("the endpoint was sent event %s after its %s", ev, what)
			}
		}
	}

	t.Run("disable", func(t *testing.T) {
		r := s.do("POST", "/webhooks/"+id+"/disable", "", nil)
		var wh webhookView
		if r.status != http.StatusOK || json.Unmarshal(r.body, &wh) != nil || wh.Status != "disabled" || wh.DisabledReason == "" {
			t.Fatalf("POST /webhooks/%s/disable: %s, want it disabled with a reason", id, r)
		}
		stopped(t, "disable")
		mark := rc.requests()
		r = s.do("POST", "/webhooks/"+id+"/enable", "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("POST /webhooks/%s/enable: %s", id, r)
		}
		// Enabled again, it resumes where its record was: the events decided while it
		// was disabled come, in order, after those delivered before the disable whose
		// delivery was not yet written down, if any (at least once).
		log := s.eventIDs(events)
		deadline := time.Now().Add(20 * time.Second)
		for {
			got := firstTaken(rc.since(mark))
			if slices.Contains(got, log[events-1]) {
				if k := len(got); k < 2 || !slices.Equal(got, log[events-k:]) {
					t.Fatalf("after the enable the endpoint took %v, want the log's last events in order, %v at least", got, log[events-2:])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the enable the endpoint took %v within 20s, want the log's last events in order, %v at least", got, log[events-2:])
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if r := s.do("DELETE", "/webhooks/"+id, "", nil); r.status != http.StatusOK {
			t.Fatalf("DELETE /webhooks/%s: %s", id, r)
		}
		stopped(t, "delete")
		for _, tc := range []struct{ method, path string }{
			{"GET", "/webhooks/" + id},
			{"DELETE", "/webhooks/" + id},
			{"POST", "/webhooks/" + id + "/enable"},
		} {
			r := s.do(tc.method, tc.path, "", nil)
			if code, _ := r.errorBody(t); r.status != http.StatusNotFound || code != "webhook_not_found" {
				t.Errorf("%s %s after the delete: %s, want 404 webhook_not_found", tc.method, tc.path, r)
			}
		}
	})

	t.Run("without --webhook-allow-private", func(t *testing.T) { checkPrivateRefused(t, rc) })

	t.Run("bad bodies", func(t *testing.T) {
		for _, tc := range []struct {
			name, body, member string
		}{
			{"no url", `{"types": ["success"]}`, "url"},
			{"url not a string", `{"url": 7}`, "url"},
			{"url not http", `{"url": "ftp://127.0.0.1/x"}`, "url"},
			{"url with credentials", `{"url": "http://u:p@127.0.0.1/x"}`, "url"},
			{"unknown member", fmt.Sprintf(`{"url": %q, "colour": "blue"}`, rc.URL), "colour"},
			{"types open", fmt.Sprintf(`{"url": %q, "types": ["open"]}`, rc.URL), "types"},
			{"types not an array", fmt.Sprintf(`{"url": %q, "types": "success"}`, rc.URL), "types"},
			{"max_in_flight 0", fmt.Sprintf(`{"url": %q, "max_in_flight": 0}`, rc.URL), "max_in_flight"},
			{"max_in_flight 99", fmt.Sprintf(`{"url": %q, "max_in_flight": 99}`, rc.URL), "max_in_flight"},
			{"max_in_flight -1", fmt.Sprintf(`{"url": %q, "max_in_flight": -1}`, rc.URL), "max_in_flight"},
			{"asymmetric a string", fmt.Sprintf(`{"url": %q, "asymmetric": "yes"}`, rc.URL), "asymmetric"},
			{"policy_ids with an empty id", fmt.Sprintf(`{"url": %q, "policy_ids": [""]}`, rc.URL), "policy_ids"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				checkInvalidWebhook(t, s.do("POST", "/webhooks", "application/json", []byte(tc.body)), tc.member)
			})
		}
	})
}

// firstTaken are the ids of the events taken, in the order of their first taking.
func firstTaken(taken []delivery) []string {
	var out []string
	for _, d := range taken {
		if !slices.Contains(out, d.id) {
			out = append(out, d.id)
		}
	}
	return out
}

// checkInvalidWebhook checks that r is 422 invalid_webhook with a message that starts
// with the member at fault.
func checkInvalidWebhook(t *testing.T, r response, member string) {
	t.Helper()
	code, msg := r.errorBody(t)
	if r.status != http.StatusUnprocessableEntity || code != "invalid_webhook" || !strings.HasPrefix(msg, member+":") {
		t.Errorf("%s, want 422 invalid_webhook with a message naming %s first", r, member)
	}
}

// checkPrivateRefused checks that a server started without --webhook-allow-private
// refuses endpoints on loopback and private addresses, naming the url, and takes one
// on a public name. rc is a receiver on loopback.
func checkPrivateRefused(t *testing.T, rc *webhookReceiver) {
	s := startServer(t, nil)
	for _, tc := range []struct {
		name, url string
		refused   bool
	}{
		{"the test's receiver on loopback", rc.URL, true},
		{"localhost", "http://localhost:8080/hook", true},
		{"IPv6 loopback", "http://[::1]:8080/hook", true},
		{"a private network", "http://10.1.2.3/hook", true},
		{"link-local", "http://169.254.169.254/latest/meta-data", true},
		{"a public name", "https://hooks.example.com/intentd", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do("POST", "/webhooks", "application/json", fmt.Appendf(nil, `{"url": %q}`, tc.url))
			if !tc.refused {
				if r.status != http.StatusOK {
					t.Fatalf("POST /webhooks %s: %s, want 200", tc.url, r)
				}
				return
			}
			checkInvalidWebhook(t, r, "url")
		})
	}
}
