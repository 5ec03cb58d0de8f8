package main_test

import (
	"crypto/ed25519"
	"sync/atomic"
	"testing"
	"time"
)

// TestClusterMandateCrash makes purchases of one mandate from eight clients through the
// three members of a cluster, kills one member with SIGKILL while they go on, and
// starts it again. Each client sends a purchase again, with the same intent id and
// through another member, until it is answered. After recovery every purchase
// accepted has ended, the mandate's totals are those of its successes exactly, the
// budget holds, and no two successes were decided against the same totals: each
// member's actor of the mandate is serialized with the others' by the fence on the
// mandate's record, and a decision that died with its member is made again once.
func TestClusterMandateCrash(t *testing.T) {
	r := startRig(t)
	nodes := r.nodes
	policyID := postPolicy(t, nodes[0].url, crashMandatePolicy)
	_, key, _ := ed25519.GenerateKey(nil)
	mandateID := createCrashMandate(t, nodes[0].url, policyID, key)

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
	ps := startPurchasers(8, 15, next, mandateID)
	time.Sleep(400 * time.Millisecond)
	down.Store(1)
	nodes[1].kill()
	t.Logf("killed member 1 with %d purchases answered", ps.count())
	time.Sleep(time.Second)
	nodes[1].start()
	down.Store(-1)
	answered := ps.wait()
	waitMembers(t, nodes, 3)

	successes := checkCrashPurchases(t, nodes[2].url, answered)
	var st struct {
		Spent     int64 `json:"spent"`
		Purchases int64 `json:"purchases"`
	}
	getJSON(t, nodes[0].url+"/mandates/"+mandateID+"/status", &st)
	t.Logf("%d purchases accepted, %d succeeded; the mandate spent %d in %d", accepted(answered), len(successes), st.Spent, st.Purchases)
	if st.Spent != int64(len(successes))*crashTeePrice || st.Purchases != int64(len(successes)) || st.Spent > crashBudget {
		t.Fatalf("mandate status spent %d in %d purchases; %d purchases succeeded (budget %d)", st.Spent, st.Purchases, len(successes), crashBudget)
	}
	if want := min(accepted(answered), crashBudget/crashTeePrice); len(successes) != want {
		t.Errorf("%d successes of %d purchases accepted, want %d", len(successes), accepted(answered), want)
	}
	checkDecidedApart(t, nodes[0].url, successes)
}
