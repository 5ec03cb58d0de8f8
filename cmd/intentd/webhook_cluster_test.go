package main_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// delivererOf reads GET /webhooks/{id} at url and returns the index of the node its
// deliverer names, -1 when none does (or none answers). A member is named by its
// cluster address, the rig's --cluster-bind, and a part new at each start.
func delivererOf(t *testing.T, url, id string, nodes []*crashServer) int {
	t.Helper()
	resp, err := client.Get(url + "/webhooks/" + id)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var wh struct {
		Deliverer string `json:"deliverer"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&wh) != nil || wh.Deliverer == "" {
		return -1
	}
	addr, _, _ := strings.Cut(wh.Deliverer, "/")
	for k, n := range nodes {
		if i := slices.Index(n.args, "--cluster-bind"); i >= 0 && n.args[i+1] == addr {
			return k
		}
	}
	t.Fatalf("GET /webhooks/%s names the deliverer %q, which is none of the members", id, wh.Deliverer)
	return -1
}

// waitDeliverer waits until the endpoint's deliverer, read at url, is a member that ok
// accepts, and returns its index.
func waitDeliverer(t *testing.T, url, id string, nodes []*crashServer, within time.Duration, ok func(k int) bool) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if k := delivererOf(t, url, id, nodes); k >= 0 && ok(k) {
			return k
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /webhooks/%s at %s names no fitting deliverer within %v", id, url, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterWebhooks delivers the outcomes of intents decided through every member of
// a three-node cluster to one endpoint, which one member delivers at a time under its
// lease. That member is killed with SIGKILL while deliveries are under way; once its
// lease runs out (15 s) another member takes the endpoint over from the cursor in the
// store, and every event of the log reaches the endpoint, in order of first arrival,
// none skipped.
func TestClusterWebhooks(t *testing.T) {
	// The rig's processes inherit the environment: the endpoint is on loopback.
	t.Setenv("INTENTD_WEBHOOK_ALLOW_PRIVATE", "true")
	r := startRig(t)
	nodes := r.nodes
	rc := newHookReceiver(t, 20*time.Millisecond)
	id := createHook(t, nodes[0].url, rc.URL)
	deliverer := waitDeliverer(t, nodes[1].url, id, nodes, 30*time.Second, func(int) bool { return true })
	t.Logf("node %d delivers the endpoint", deliverer)

	// Each request goes to the next member up, in turn: intents are submitted through
	// one member and proposed to through another.
	var turn atomic.Uint64
	var down atomic.Int64
	down.Store(-1)
	next := func() string {
		for {
			k := int(turn.Add(1) % uint64(len(nodes)))
			if int64(k) != down.Load() {
				return nodes[k].url
			}
		}
	}
	const clients, each = 3, 20
	hd := startHookDeciders(t, clients, each, next, r.policy, r.signer)
	rc.waitDistinct(t, clients*each/4, 60*time.Second)
	down.Store(int64(deliverer))
	nodes[deliverer].kill()
	t.Logf("killed node %d, the deliverer, with %d intents submitted and %d events taken", deliverer, hd.count(), rc.distinct())

	ids := hd.wait()
	alive := nodes[(deliverer+1)%len(nodes)]
	live := func() string { return alive.url }
	waitEnded(t, live, ids)
	log := readAll(t, alive.url)
	if len(log) != len(ids) {
		t.Fatalf("the log has %d events for %d intents, each of which ended", len(log), len(ids))
	}
	// The lease of the dead member runs out unrenewed after 15 s; the deliveries left
	// then take a few seconds more.
	checkHookDeliveries(t, rc, log, 60*time.Second)
	now := waitDeliverer(t, alive.url, id, nodes, 30*time.Second, func(k int) bool { return k != deliverer })
	t.Logf("node %d delivers the endpoint after the kill", now)
}
