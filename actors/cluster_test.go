//go:build !race

// protoactor-go races with itself when several cluster members run in one process (see
// docs/cluster.md), so these tests are built without the race detector; make test runs
// them that way.

package actors

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster/clusterproviders/test"
	"github.com/google/uuid"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/cluster/clusterpb"
	"github.com/intentd/intentd/cluster/clustertls"
	"github.com/intentd/intentd/storetest"
)

// clusterOf starts n engines as members of one cluster on one NATS stream, with
// protoactor's in-process membership, and waits until each sees all n.
func clusterOf(t *testing.T, n int, tweak func(*Config)) []*harness {
	t.Helper()
	return clusterUnder(t, newTestCA(t, "cluster"), n, tweak)
}

// clusterUnder is clusterOf with the members' certificates signed by ca.
func clusterUnder(t *testing.T, ca *clustertls.CA, n int, tweak func(*Config)) []*harness {
	t.Helper()
	var shared func(*testing.T) storetest.Store
	for _, s := range stores {
		if s.name == "nats" {
			shared = s.backend(t)
		}
	}
	agent := test.NewInMemAgent()
	// The members speak mutual TLS, as production's do.
	dir := t.TempDir()
	hs := make([]*harness, n)
	for i := range hs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		hs[i] = newHarnessWith(t, shared, func(c *Config) {
			c.Cluster = &ClusterConfig{Name: "test", Host: "127.0.0.1", Port: port,
				Provider:    test.NewTestProvider(agent, test.WithTestProviderServiceTtl(time.Second)),
				Credentials: clusterTLS(t, ca, dir, fmt.Sprintf("member%d", i)).Credentials()}
			if tweak != nil {
				tweak(c)
			}
		})
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, h := range hs {
		for len(h.e.ClusterMembers()) != n {
			if time.Now().After(deadline) {
				t.Fatalf("a member sees %v, want %d members", h.e.ClusterMembers(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return hs
}

// TestClusterCommands submits through one member, proposes through another and reads
// through a third: each proposal is decided, by the member it reached whoever owns the
// intent, and each intent has one event.
func TestClusterCommands(t *testing.T) {
	hs := clusterOf(t, 3, nil)
	ids := make([]string, 9)
	for i := range ids {
		ids[i] = hs[i%3].submit("M", 2500)
	}
	for i, id := range ids {
		if err := proposeTo(hs[(i+1)%3], id, "M-cheap"); err != nil {
			t.Fatalf("proposal through another member: %v", err)
		}
	}
	for i, id := range ids {
		hs[(i+2)%3].waitState(id, intentd.StateSuccess)
	}
	seen := map[string]int{}
	for _, ev := range hs[0].events(0, len(ids)) {
		seen[ev.IntentID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("intent %s has %d events, want 1", id, seen[id])
		}
	}
	if err := proposeTo(hs[2], ids[0], "M-dear"); intentd.ErrorCode(err) != intentd.CodeProposalExists {
		t.Fatalf("second proposal = %v, want %s", err, intentd.CodeProposalExists)
	}
}

// TestClusterRetriedRequest sends one proposal three times with one request id, as
// protoactor does when it tries a request again (two tries at once, the second while
// the first runs, then a third): the grain answers each from the one run. A new request
// id is a second proposal, and refused. It runs through the intent's partition grain
// and through the intent's own grain, which members of the releases before partitions
// send to.
func TestClusterRetriedRequest(t *testing.T) {
	hs := clusterOf(t, 2, nil)
	ids, reqs := make([]string, 2), make([]string, 2)
	for i, kind := range []string{partitionKind, intentKind} {
		id := hs[0].submit("M", 2500)
		ids[i] = id
		g := grainOf(id, kind == partitionKind)
		cmd := &clusterpb.Propose{RequestId: uuid.NewString(), IntentId: id, Solution: "block:M-cheap"}
		var wg sync.WaitGroup
		try := func(n int) {
			defer wg.Done()
			res, err := hs[1].e.member.Load().cluster.Request(g.Identity, g.Kind, cmd)
			if _, ok := res.(*clusterpb.Done); err != nil || !ok {
				t.Errorf("%s: try %d: %T %v, %v; want Done", kind, n, res, res, err)
			}
		}
		wg.Add(2)
		go try(0)
		go try(1)
		wg.Wait()
		wg.Add(1)
		try(2)
		if t.Failed() {
			t.FailNow()
		}
		again := &clusterpb.Propose{RequestId: uuid.NewString(), IntentId: id, Solution: "M-dear"}
		res, err := hs[1].e.member.Load().cluster.Request(g.Identity, g.Kind, again)
		r, ok := res.(*clusterpb.ErrorReply)
		if err != nil || !ok || r.GetCode() != intentd.CodeProposalExists {
			t.Fatalf("%s: a second proposal: %T %v, %v; want %s", kind, res, res, err, intentd.CodeProposalExists)
		}
		reqs[i] = cmd.RequestId
	}
	// A try that reaches a member other than the one that took the request (the owner
	// died, and the next owner answers) finds the request's own write in the store.
	ctx := context.Background()
	for _, h := range hs {
		if _, err := h.e.registry.localCall(ctx, ids[0], propose{proposal: intentd.Proposal{Solution: "block:M-cheap"}, request: reqs[0]}); err != nil {
			t.Fatalf("the proposal's request tried again at a member: %v", err)
		}
		_, err := h.e.registry.localCall(ctx, ids[0], propose{proposal: intentd.Proposal{Solution: "block:M-cheap"}, request: uuid.NewString()})
		if intentd.ErrorCode(err) != intentd.CodeProposalExists {
			t.Fatalf("another request with the same solution = %v, want %s", err, intentd.CodeProposalExists)
		}
	}
	for _, h := range hs {
		close(h.ext.release)
	}
	for _, id := range ids {
		hs[1].waitState(id, intentd.StateSuccess)
	}

	// The same for a create.
	data, err := hs[0].store.Intent(ctx, hs[0].submit("M", 2500))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	id2 := uuid.NewString()
	snap.ID, snap.Request = id2, uuid.NewString()
	if _, err := hs[0].e.registry.localCall(ctx, id2, create{snap: snap}); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		again := *snap
		if _, err := h.e.registry.localCall(ctx, id2, create{snap: &again}); err != nil {
			t.Fatalf("the create's request tried again at a member: %v", err)
		}
		again.Request = uuid.NewString()
		if _, err := h.e.registry.localCall(ctx, id2, create{snap: &again}); intentd.ErrorCode(err) != intentd.CodeIntentExists {
			t.Fatalf("another create of the id = %v, want %s", err, intentd.CodeIntentExists)
		}
	}
}

// TestClusterExpiry lets intents submitted through every member expire: one member
// scans, the owners write, and each intent ends once.
func TestClusterExpiry(t *testing.T) {
	var finishes atomic.Int32
	hs := clusterOf(t, 3, func(c *Config) {
		c.IntentTTL = 300 * time.Millisecond
		c.ExpiryInterval = 50 * time.Millisecond
		c.Observer = &intentd.Observer{StoreCall: func(op string, _ bool, _ time.Duration) {
			if op == "finish" {
				finishes.Add(1)
			}
		}}
	})
	scanners := 0
	for _, h := range hs {
		if h.e.expiryScanner() {
			scanners++
		}
	}
	if scanners != 1 {
		t.Fatalf("%d members scan the expiry index, want 1", scanners)
	}
	ids := make([]string, 6)
	for i := range ids {
		ids[i] = hs[i%3].submit("M", 2500)
	}
	// The intents are not read meanwhile: a read would expire one itself.
	deadline := time.Now().Add(10 * time.Second)
	for int(finishes.Load()) < len(ids) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n := finishes.Load(); int(n) != len(ids) {
		t.Fatalf("%d terminal writes for %d intents", n, len(ids))
	}
	for _, id := range ids {
		if st, err := hs[0].e.Status(context.Background(), id); err != nil || st.State != intentd.StateExpired {
			t.Fatalf("intent %s: %v, %v; want expired", id, st.State, err)
		}
	}
}

// TestClusterCapacity fills the proving of members that prove one proposal at a time:
// a proposal is proved by the member that takes it, whoever owns its intent, so that
// one member given six proposals takes one and refuses the others with
// capacity_exceeded, and their intents stay open, unchanged.
func TestClusterCapacity(t *testing.T) {
	hs := clusterOf(t, 2, func(c *Config) { c.MaxProving, c.ProvingQueue = 1, 0 })
	ids := make([]string, 6)
	for i := range ids {
		ids[i] = hs[i%2].submit("M", 2500)
	}
	var accepted, refused []string
	for _, id := range ids {
		switch err := proposeTo(hs[0], id, "block:M-cheap"); {
		case err == nil:
			accepted = append(accepted, id)
		case intentd.ErrorCode(err) == intentd.CodeCapacityExceeded:
			refused = append(refused, id)
		default:
			t.Fatalf("proposal of %s: %v", id, err)
		}
	}
	if len(accepted) != 1 || len(refused) != 5 {
		t.Fatalf("%d proposals accepted and %d refused, want 1 (the one proof of the member that took them) and the rest refused", len(accepted), len(refused))
	}
	for _, id := range refused {
		if st := hs[1].status(id); st.State != intentd.StateOpen || st.Proposal != nil {
			t.Fatalf("refused intent %s is %s with %+v, want open with no proposal", id, st.State, st.Proposal)
		}
	}
	for _, h := range hs {
		close(h.ext.release)
	}
	for _, id := range accepted {
		hs[1].waitState(id, intentd.StateSuccess)
	}
}

// TestClusterWakesStuckIntents leaves an intent processing with no proof running and no
// change of members to wake it, as a member that died with the proof while the others
// still disagreed on its owner would: the scanning member finds it processing for long
// and has its owner prove it.
func TestClusterWakesStuckIntents(t *testing.T) {
	hs := clusterOf(t, 2, func(c *Config) { c.Cluster.stuckAfter = 500 * time.Millisecond })
	for _, h := range hs {
		close(h.ext.release)
	}
	ctx := context.Background()
	id := hs[0].submit("M", 2500)
	hs[1].status(id) // the owner's actor holds the intent open
	data, err := hs[0].store.Intent(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	snap.State, snap.Proposal, snap.ProposedAt = intentd.StateProcessing, &intentd.Proposal{Solution: "M-cheap"}, time.Now()
	if data, err = snap.encode(); err != nil {
		t.Fatal(err)
	}
	// Written past the actors, as the member that took the proposal did before it died.
	if err := hs[0].store.BeginProcessing(ctx, id, snap.PolicyID, data, snap.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	hs[0].waitState(id, intentd.StateSuccess)
}
