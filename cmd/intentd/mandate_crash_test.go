package main_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/natsstore"
)

// crashMandatePolicy is a mandate of the demo catalog's t-shirts with a budget alone:
// the limit every purchase is decided against.
const crashMandatePolicy = `
name crash_mandate
amount evidence.price_cents + evidence.shipping_cents
parameters { size: string  budget_cents: int }
evidence { size: string  price_cents: int  shipping_cents: int }
requires {
  evidence.size == parameters.size;
  mandate.spent + purchase.amount <= parameters.budget_cents;
}
`

// crashTee is the demo catalog's navy t-shirt in M: 19.99 and 4.99 of shipping.
const (
	crashTee      = "https://shop.example/products/tshirt-navy-m"
	crashTeePrice = 2498
	crashBudget   = 40 * crashTeePrice
)

// TestMandateCrash makes purchases of one mandate from eight clients at once while the
// server is killed with SIGKILL and started again, each client sending a purchase again
// with the same intent id until it has an answer, as docs/mandates.md advises. After
// recovery every purchase taken has ended, the mandate's totals are those of the
// successes exactly, the budget holds, and no two successes were decided against the
// same totals. On Pebble and on NATS JetStream.
func TestMandateCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("the mandate crash test starts and kills a server several times")
	}
	crashOnBothStores(t, buildIntentd(t), mandateCrash)
}

// crashOnBothStores runs a crash test of the binary bin on Pebble, then on an embedded
// NATS server, each a subtest given the flags of its store.
func crashOnBothStores(t *testing.T, bin string, crash func(t *testing.T, bin string, storeArgs []string)) {
	t.Run("pebble", func(t *testing.T) { crash(t, bin, nil) })
	t.Run("nats", func(t *testing.T) {
		srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Shutdown()
		crash(t, bin, []string{"--store", srv.URL()})
	})
}

func mandateCrash(t *testing.T, bin string, storeArgs []string) {
	srv := &crashServer{t: t, bin: bin, data: filepath.Join(t.TempDir(), "data"), args: storeArgs}
	srv.start()
	defer func() {
		if srv.cmd.ProcessState == nil {
			srv.kill()
		}
	}()
	var urlMu sync.RWMutex
	current := func() string { urlMu.RLock(); defer urlMu.RUnlock(); return srv.url }

	policyID := postPolicy(t, srv.url, crashMandatePolicy)
	_, key, _ := ed25519.GenerateKey(nil)
	mandateID := createCrashMandate(t, srv.url, policyID, key)

	// A hundred and sixty purchases from eight clients, each a few tens of
	// milliseconds after the last, for a budget of forty: the kills fall while
	// purchases are taken and decided.
	ps := startPurchasers(8, 20, current, mandateID)
	rng := rand.New(rand.NewPCG(3, 3))
	for range 3 {
		time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
		t.Logf("killed with %d purchases answered", ps.count())
		srv.kill()
		urlMu.Lock()
		srv.start()
		urlMu.Unlock()
	}
	answered := ps.wait()
	successes := checkCrashPurchases(t, srv.url, answered)
	var st struct {
		Spent     int64    `json:"spent"`
		Purchases int64    `json:"purchases"`
		Intents   []string `json:"intents"`
	}
	getJSON(t, srv.url+"/mandates/"+mandateID+"/status", &st)
	if st.Spent != int64(len(successes))*crashTeePrice || st.Purchases != int64(len(successes)) || st.Spent > crashBudget {
		t.Fatalf("mandate status spent %d in %d purchases; %d purchases succeeded (budget %d)", st.Spent, st.Purchases, len(successes), crashBudget)
	}
	if want := min(accepted(answered), crashBudget/crashTeePrice); len(successes) != want {
		t.Errorf("%d successes of %d purchases accepted, want %d: every purchase but those past the budget succeeds", len(successes), accepted(answered), want)
	}
	checkDecidedApart(t, srv.url, successes)
}

// checkDecidedApart checks that each success was decided against the totals the ones
// before it left: its receipt binds how many succeeded before it, and what they spent,
// and no two say the same.
func checkDecidedApart(t *testing.T, url string, successes []string) {
	t.Helper()
	var before []int64
	for _, id := range successes {
		var bundle struct {
			Receipt struct {
				Receipt struct {
					Mandate struct {
						Purchases int64 `json:"purchases"`
						Spent     int64 `json:"spent"`
					} `json:"mandate"`
				} `json:"receipt"`
			} `json:"receipt"`
		}
		getJSON(t, url+"/intents/"+id+"/proof", &bundle)
		m := bundle.Receipt.Receipt.Mandate
		if m.Spent != m.Purchases*crashTeePrice {
			t.Errorf("success %s was decided against spent %d after %d purchases", id, m.Spent, m.Purchases)
		}
		before = append(before, m.Purchases)
	}
	slices.Sort(before)
	for i, n := range before {
		if n != int64(i) {
			t.Fatalf("the successes were decided after %v purchases, want 0 to %d each once", before, len(before)-1)
		}
	}
}

// purchasers are clients making purchases under one mandate at once, each a few tens
// of milliseconds after its last, each sent again until answered.
type purchasers struct {
	mu       sync.Mutex
	answered map[string]int // intent id -> the purchase's final HTTP status
	wg       sync.WaitGroup
}

// startPurchasers starts clients clients of each purchases, sent to url().
func startPurchasers(clients, each int, url func() string, mandateID string) *purchasers {
	ps := &purchasers{answered: map[string]int{}}
	for c := range clients {
		ps.wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 9))
			for range each {
				id := uuid.NewString()
				code := purchaseUntilAnswered(url, mandateID, id)
				ps.mu.Lock()
				ps.answered[id] = code
				ps.mu.Unlock()
				time.Sleep(time.Duration(10+rng.IntN(50)) * time.Millisecond)
			}
		})
	}
	return ps
}

// count is how many purchases were answered so far.
func (ps *purchasers) count() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.answered)
}

// wait waits for every client and returns the answers.
func (ps *purchasers) wait() map[string]int {
	ps.wg.Wait()
	return ps.answered
}

// accepted is how many purchases were answered 200.
func accepted(answered map[string]int) int {
	n := 0
	for _, code := range answered {
		if code == http.StatusOK {
			n++
		}
	}
	return n
}

// createCrashMandate stores a signed mandate of the crash policy for size M and the
// test's budget.
func createCrashMandate(t *testing.T, url, policyID string, key ed25519.PrivateKey) string {
	t.Helper()
	id := uuid.NewString()
	md := fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"expires_at":%q,"attrs":{"fields":{"size":{"String":"M"},"budget_cents":{"Int":%d}}}}`,
		id, policyID, time.Now().Add(time.Hour).UTC().Format(time.RFC3339), crashBudget)
	auth, err := crypto.SignEd25519(key, md)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := auth.MarshalJSON()
	body := fmt.Appendf(nil, `{"mandate":%s,"authorship":%s}`, md, a)
	resp, err := client.Post(url+"/mandates", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /mandates: %d %s", resp.StatusCode, msg)
	}
	return id
}

// purchaseUntilAnswered sends a purchase until the server answers it, through its
// restarts, and returns the answer's status.
func purchaseUntilAnswered(url func() string, mandateID, intentID string) int {
	body := fmt.Appendf(nil, `{"intent_id":%q,"solution":%q}`, intentID, crashTee)
	for {
		resp, err := client.Post(url()+"/mandates/"+mandateID+"/purchases", "application/json", bytes.NewReader(body))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return resp.StatusCode
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkCrashPurchases waits for every accepted purchase to end and returns the ids of
// those that succeeded. A purchase answered other than 200 is one whose intent expired
// while the server was down between its steps (409 intent_expired), and nothing else.
func checkCrashPurchases(t *testing.T, url string, answered map[string]int) []string {
	t.Helper()
	var successes []string
	deadline := time.Now().Add(60 * time.Second)
	for id, code := range answered {
		if code != http.StatusOK {
			if code != http.StatusConflict {
				t.Fatalf("purchase %s answered %d", id, code)
			}
			continue
		}
		for {
			st := getStatus(t, url, id)
			if st == "success" {
				successes = append(successes, id)
				break
			}
			if st == "failure" {
				break
			}
			if time.Now().After(deadline) || st == "expired" || strings.HasPrefix(st, "open") {
				t.Fatalf("purchase %s is %s after recovery", id, st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return successes
}
