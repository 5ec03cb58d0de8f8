package main_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
)

// hookReceiver is a webhook endpoint that takes every delivery, after a delay that
// keeps deliveries under way when a server dies, and records each request that came
// whole, in order.
type hookReceiver struct {
	*httptest.Server
	delay time.Duration
	mu    sync.Mutex
	got   []hookDelivery
}

// hookDelivery is one request a hookReceiver took.
type hookDelivery struct {
	id   string // webhook-id
	body []byte
}

func newHookReceiver(t *testing.T, delay time.Duration) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{delay: delay}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // cut short by the sender's death: not taken
		}
		rc.mu.Lock()
		rc.got = append(rc.got, hookDelivery{r.Header.Get("webhook-id"), body})
		rc.mu.Unlock()
		time.Sleep(rc.delay)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// deliveries are the requests taken so far.
func (rc *hookReceiver) deliveries() []hookDelivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// distinct is how many events the receiver took, each counted once.
func (rc *hookReceiver) distinct() int {
	seen := map[string]bool{}
	for _, d := range rc.deliveries() {
		seen[d.id] = true
	}
	return len(seen)
}

// waitDistinct waits until the receiver took n events, or fails after within.
func (rc *hookReceiver) waitDistinct(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for rc.distinct() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the receiver took %d events of %d within %v", rc.distinct(), n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createHook registers the endpoint url through the server at base and returns its id.
func createHook(t *testing.T, base, url string) string {
	t.Helper()
	resp, err := client.Post(base+"/webhooks", "application/json", strings.NewReader(fmt.Sprintf(`{"url": %q}`, url)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var wh struct{ ID, Secret string }
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &wh) != nil || wh.ID == "" {
		t.Fatalf("POST /webhooks: %d %s", resp.StatusCode, body)
	}
	return wh.ID
}

// hookDeciders decide intents from a few clients at once, each intent submitted and
// then proposed to, each request sent again until the server answers it, through its
// deaths.
type hookDeciders struct {
	mu  sync.Mutex
	ids []string // the intents submitted
	wg  sync.WaitGroup
}

// startHookDeciders starts clients clients of each intents of policyID, signed with key,
// sent to url() at each try. Proposals alternate among crashSolutions, so that the
// outcomes differ.
func startHookDeciders(t *testing.T, clients, each int, url func() string, policyID string, key ed25519.PrivateKey) *hookDeciders {
	hd := &hookDeciders{}
	for c := range clients {
		hd.wg.Go(func() {
			for i := range each {
				id := uuid.NewString()
				raw := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":{"fields":{"size":{"String":"M"},"max_price_cents":{"Int":5000}}}}`, id, policyID)
				auth, _ := crypto.SignEd25519(key, raw)
				authJSON, _ := json.Marshal(auth)
				// A submit retried after the server died may find the intent stored
				// (409): it was taken either way.
				if code := postUntilAnswered(url, "/intents", fmt.Appendf(nil, `{"intent":%s,"authorship":%s}`, raw, authJSON)); code != http.StatusOK && code != http.StatusConflict {
					t.Errorf("POST /intents answered %d", code)
					return
				}
				hd.mu.Lock()
				hd.ids = append(hd.ids, id)
				hd.mu.Unlock()
				sol := crashSolutions[(c+i)%len(crashSolutions)]
				// Likewise a proposal retried may find the intent decided, or expired
				// while the server was down (409): it ends either way.
				if code := postUntilAnswered(url, "/intents/"+id+"/proposal", fmt.Appendf(nil, `{"solution":%q}`, sol)); code != http.StatusOK && code != http.StatusConflict {
					t.Errorf("POST /intents/%s/proposal answered %d", id, code)
					return
				}
			}
		})
	}
	return hd
}

// count is how many intents were submitted so far.
func (hd *hookDeciders) count() int {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	return len(hd.ids)
}

// wait waits for every client and returns the intents submitted.
func (hd *hookDeciders) wait() []string {
	hd.wg.Wait()
	return hd.ids
}

// postUntilAnswered posts body to url()+path until an answer below 500 comes, for two
// minutes at most (then 0).
func postUntilAnswered(url func() string, path string, body []byte) int {
	for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(20 * time.Millisecond) {
		if code := post(url()+path, body); code != 0 && code < 500 {
			return code
		}
	}
	return 0
}

// waitEnded waits until every intent is terminal, read at url().
func waitEnded(t *testing.T, url func() string, ids []string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range ids {
		for {
			st := getStatus(t, url(), id)
			if st == "success" || st == "failure" || st == "expired" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("intent %s is still %s a minute after the last restart", id, st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// checkHookDeliveries waits until the receiver has taken every event of the log, for
// within at most, then checks that it took them in the log's order of their first
// taking, none skipped and none that is not the log's, and that each repeat carried
// the same webhook-id with the same body: the event's.
func checkHookDeliveries(t *testing.T, rc *hookReceiver, log []sseEvent, within time.Duration) {
	t.Helper()
	want := make([]string, len(log))
	for i, ev := range log {
		want[i] = strconv.FormatUint(ev.id, 10)
	}
	rc.waitDistinct(t, len(want), within)
	got := rc.deliveries()
	var first []string
	bodies := map[string][]byte{}
	repeats := 0
	for _, d := range got {
		b, seen := bodies[d.id]
		if !seen {
			bodies[d.id] = d.body
			first = append(first, d.id)
			continue
		}
		repeats++
		if !bytes.Equal(b, d.body) {
			t.Errorf("webhook-id %s came again with another body:\n%s\nthen\n%s", d.id, b, d.body)
		}
	}
	if !slices.Equal(first, want) {
		t.Fatalf("events taken, in the order first taken:\n%v\nwant the log's, in order:\n%v", first, want)
	}
	for _, ev := range log {
		var body struct {
			Type     string `json:"type"`
			IntentID string `json:"intent_id"`
		}
		id := strconv.FormatUint(ev.id, 10)
		if err := json.Unmarshal(bodies[id], &body); err != nil || body.IntentID != ev.intentID || body.Type != ev.typ {
			t.Errorf("webhook-id %s carried %s, want the event %s of intent %s", id, bodies[id], ev.typ, ev.intentID)
		}
	}
	t.Logf("%d events delivered in order; %d requests, %d of them repeats", len(want), len(got), repeats)
}

// TestWebhookCrash kills intentd with SIGKILL three times while it delivers the
// outcomes of a hundred intents to an endpoint that takes each in 20 ms, and starts it
// again on the same data each time. Once the intents have ended, every event of the
// log has reached the endpoint, in the log's order of first arrival, none skipped, and
// the events sent again carried the same webhook-id: at least once, never out of
// order. On Pebble (where a restarted server takes its own lease at once) and on NATS
// JetStream (where it waits the lease of its previous run out, 15 s).
func TestWebhookCrash(t *testing.T) {
	// Not parallel: heavy: a server killed under load, whose time-outs a test beside it would starve.
	if v := os.Getenv("INTENTD_TEST_STORE"); v != "" && v != "pebble" {
		t.Skip("chooses its own stores; runs when INTENTD_TEST_STORE is pebble")
	}
	if testing.Short() {
		t.Skip("the webhook crash test starts and kills a server several times")
	}
	crashOnBothStores(t, buildIntentd(t), webhookCrash)
}

func webhookCrash(t *testing.T, bin string, storeArgs []string) {
	srv := &crashServer{t: t, bin: bin, data: filepath.Join(t.TempDir(), "data"), args: append(slices.Clone(storeArgs), "--webhook-allow-private")}
	srv.start()
	defer func() {
		if srv.cmd.ProcessState == nil {
			srv.kill()
		}
	}()
	defer func() {
		if t.Failed() {
			t.Logf("the server's last warnings and errors, across its restarts:\n%s", strings.Join(srv.warnings(), "\n"))
		}
	}()
	var urlMu sync.RWMutex
	current := func() string { urlMu.RLock(); defer urlMu.RUnlock(); return srv.url }

	rc := newHookReceiver(t, 20*time.Millisecond)
	createHook(t, srv.url, rc.URL)
	policyID := postPolicy(t, srv.url, crashPolicy)
	_, key, _ := ed25519.GenerateKey(nil)
	const clients, each = 4, 25
	hd := startHookDeciders(t, clients, each, current, policyID, key)
	// Each kill falls when the endpoint has taken another share of the events, so that
	// deliveries are under way at each; on NATS the share after a restart comes once
	// the restarted server has the lease again.
	for k := 1; k <= 3; k++ {
		rc.waitDistinct(t, k*clients*each/5, 90*time.Second)
		t.Logf("killed with %d intents submitted and %d events taken", hd.count(), rc.distinct())
		srv.kill()
		urlMu.Lock()
		srv.start()
		urlMu.Unlock()
	}
	ids := hd.wait()
	waitEnded(t, current, ids)
	log := readAll(t, srv.url)
	if len(log) != len(ids) {
		t.Fatalf("the log has %d events for %d intents, each of which ended", len(log), len(ids))
	}
	checkHookDeliveries(t, rc, log, 90*time.Second)
}
