package main

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// webhookReceiver is an endpoint that records what it is sent, and answers failWith
// while failing is set.
type webhookReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	failWith int
	got      []delivery
}

// delivery is one request a receiver took.
type delivery struct {
	id, timestamp, signature string
	body                     []byte
	answered                 int
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	t.Helper()
	rc := &webhookReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		status := http.StatusOK
		if rc.failWith != 0 {
			status = rc.failWith
		}
		rc.got = append(rc.got, delivery{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body, status})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *webhookReceiver) setFailing(status int) {
	rc.mu.Lock()
	rc.failWith = status
	rc.mu.Unlock()
}

// taken are the deliveries answered 2xx, in the order they came.
func (rc *webhookReceiver) taken() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []delivery
	for _, d := range rc.got {
		if d.answered < 300 {
			out = append(out, d)
		}
	}
	return out
}

// createWebhook registers url and returns the endpoint's id and secret.
func (s *testServer) createWebhook(body string) (id, secret string) {
	s.t.Helper()
	r := s.do("POST", "/webhooks", "application/json", []byte(body))
	if r.status != http.StatusOK {
		s.t.Fatalf("POST /webhooks: %s", r)
	}
	var wh struct{ ID, Secret string }
	if err := json.Unmarshal(r.body, &wh); err != nil || wh.ID == "" || !strings.HasPrefix(wh.Secret, "whsec_") {
		s.t.Fatalf("POST /webhooks answered %s, want an id and a whsec_ secret", r.body)
	}
	return wh.ID, wh.Secret
}

// checkSignatures verifies a delivery's v1 signature with the secret and, when pub is
// not nil, its v1a signature with the service's public key.
func checkSignatures(t *testing.T, d delivery, secret string, pub ed25519.PublicKey) {
	t.Helper()
	content := []byte(d.id + "." + d.timestamp + "." + string(d.body))
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write(content)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	sigs := strings.Fields(d.signature)
	if len(sigs) == 0 || sigs[0] != want {
		t.Errorf("delivery %s: webhook-signature %q, want first %q", d.id, d.signature, want)
	}
	if pub == nil {
		if len(sigs) != 1 {
			t.Errorf("delivery %s: %d signatures for an endpoint without v1a", d.id, len(sigs))
		}
		return
	}
	if len(sigs) != 2 || !strings.HasPrefix(sigs[1], "v1a,") {
		t.Fatalf("delivery %s: webhook-signature %q, want a v1a signature second", d.id, d.signature)
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sigs[1], "v1a,"))
	if err != nil || !ed25519.Verify(pub, content, sig) {
		t.Errorf("delivery %s: the v1a signature does not verify with the service's webhook key", d.id)
	}
}

// webhookPublicKey reads GET /info's webhook_public_key.
func (s *testServer) webhookPublicKey() ed25519.PublicKey {
	s.t.Helper()
	r := s.do("GET", "/info", "", nil)
	var info struct {
		WebhookPublicKey string `json:"webhook_public_key"`
	}
	if err := json.Unmarshal(r.body, &info); err != nil || !strings.HasPrefix(info.WebhookPublicKey, "whpk_") {
		s.t.Fatalf("GET /info: %s, want a whpk_ webhook_public_key", r.body)
	}
	pub, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(info.WebhookPublicKey, "whpk_"))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		s.t.Fatalf("webhook_public_key %q is not the Base64 of a 32-byte key", info.WebhookPublicKey)
	}
	return pub
}

// fastRetries makes a webhook's schedule short enough for a test.
var fastRetries = []string{"--webhook-allow-private", "--webhook-retry-schedule", "0s,50ms,100ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms"}

// decide makes n intents and proposes to each, alternately a solution that passes and
// one that fails, and returns the ids in order.
func (s *testServer) decide(n int) []string {
	s.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.submit()
		sol := solutionPasses
		if i%2 == 1 {
			sol = solutionOutOfStock
		}
		if r := s.propose(ids[i], sol); r.status != http.StatusOK {
			s.t.Fatalf("propose: %s", r)
		}
	}
	return ids
}

// waitTaken waits until the receiver has taken n distinct events.
func waitTaken(t *testing.T, rc *webhookReceiver, n int, within time.Duration) []delivery {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		taken := rc.taken()
		seen := map[string]bool{}
		for _, d := range taken {
			seen[d.id] = true
		}
		if len(seen) >= n {
			return taken
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver took %d distinct events of %d within %v", len(seen), n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkInOrder checks that the events taken are the log's, each once at least, in
// ascending order of their first taking, with nothing skipped: wantIDs in order.
func checkInOrder(t *testing.T, taken []delivery, wantIDs []string) {
	t.Helper()
	var first []string
	seen := map[string]bool{}
	for _, d := range taken {
		if !seen[d.id] {
			seen[d.id] = true
			first = append(first, d.id)
		}
	}
	if strings.Join(first, ",") != strings.Join(wantIDs, ",") {
		t.Fatalf("events taken, in the order first taken:\n%v\nwant the log's, in order:\n%v", first, wantIDs)
	}
}

func TestWebhookDeliveries(t *testing.T) {
	s := startServer(t, fastRetries)
	rc := newWebhookReceiver(t)
	pub := s.webhookPublicKey()
	id, secret := s.createWebhook(fmt.Sprintf(`{"url": %q, "asymmetric": true}`, rc.URL))
	rc.setFailing(http.StatusInternalServerError)
	s.decide(10)
	// The receiver fails while the events come, then recovers: each event waits for
	// the one before it, and every one arrives, in order.
	time.Sleep(400 * time.Millisecond)
	rc.setFailing(0)
	taken := waitTaken(t, rc, 10, 20*time.Second)
	ids := s.eventIDs(10)
	checkInOrder(t, taken, ids)
	for _, d := range taken {
		checkSignatures(t, d, secret, pub)
		var ev struct {
			Type     string `json:"type"`
			IntentID string `json:"intent_id"`
		}
		if err := json.Unmarshal(d.body, &ev); err != nil || ev.IntentID == "" {
			t.Errorf("delivery %s: body %s is not an outcome event", d.id, d.body)
		}
		ts, _ := strconv.ParseInt(d.timestamp, 10, 64)
		if time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
			t.Errorf("delivery %s: webhook-timestamp %s is not now", d.id, d.timestamp)
		}
	}
	// Failed attempts were made and are shown; the endpoint is healthy again.
	var failed int
	rc.mu.Lock()
	for _, d := range rc.got {
		if d.answered == http.StatusInternalServerError {
			failed++
		}
	}
	rc.mu.Unlock()
	if failed == 0 {
		t.Fatal("no attempt was answered 500: the receiver's outage was not exercised")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := s.do("GET", "/webhooks/"+id, "", nil)
		var wh struct {
			Status    string `json:"status"`
			Delivered uint64 `json:"delivered_through"`
			Attempts  []struct {
				Status int    `json:"status"`
				Error  string `json:"error"`
			} `json:"recent_attempts"`
			Secret string `json:"secret"`
		}
		if err := json.Unmarshal(r.body, &wh); err != nil {
			t.Fatalf("GET /webhooks/%s: %s", id, r)
		}
		if wh.Secret != "" {
			t.Fatalf("GET /webhooks/%s shows the secret", id)
		}
		if strconv.FormatUint(wh.Delivered, 10) == ids[9] && wh.Status == "active" && len(wh.Attempts) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /webhooks/%s: %s, want active, delivered through %s", id, r.body, ids[9])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
