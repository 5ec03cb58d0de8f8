package natsprovider

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/natsstore"
)

// The membership TTL of the tests: one second, the server's least, keeps them short;
// -natsprovider.ttl=3s measures the default.
var testTTL = flag.Duration("natsprovider.ttl", time.Second, "membership TTL of the cluster tests")

// logger writes to the test output with -v at debug level (INTENTD_TEST_LOG=debug), and
// says only warnings otherwise: three members' start-up is a few hundred lines.
func logger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("INTENTD_TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// embed starts a NATS server with JetStream for one test and returns a JetStream
// connection to it.
func embed(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return connectJS(t, srv.URL())
}

// connectJS connects to NATS at urls for one test and returns a JetStream connection.
func connectJS(t *testing.T, urls string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// peer is a provider with a stand-in for protoactor's member list: it records the
// topologies it is handed.
type peer struct {
	prov     *Provider
	fencedBy chan error

	mu     sync.Mutex
	view   []string
	pushes int
}

var nextPort = 20000

func startPeer(t *testing.T, js jetstream.JetStream) *peer { return startPeerOn(t, js, 1) }

// startPeerOn starts a peer whose bucket, if it makes it, has the given replicas.
func startPeerOn(t *testing.T, js jetstream.JetStream, replicas int) *peer {
	t.Helper()
	return startPeerWith(t, js, replicas, nil)
}

// startPeerWith starts a peer as startPeerOn does, letting prep set the provider's test
// hooks before its loops begin.
func startPeerWith(t *testing.T, js jetstream.JetStream, replicas int, prep func(*Provider)) *peer {
	t.Helper()
	nextPort++
	pr := &peer{fencedBy: make(chan error, 1)}
	prov, err := New(Config{JetStream: js, TTL: *testTTL, Replicas: replicas, Logger: logger(), OnFenced: func(err error) { pr.fencedBy <- err }})
	if err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(prov)
	}
	pr.prov = prov
	m := &cluster.Member{Id: fmt.Sprintf("peer%d", nextPort), Host: "127.0.0.1", Port: int32(nextPort), Kinds: []string{"intent"}}
	err = prov.startMember("test", m, func(ms cluster.Members) {
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m.Id
		}
		pr.mu.Lock()
		pr.view, pr.pushes = ids, pr.pushes+1
		pr.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prov.Shutdown(true) })
	return pr
}

func (pr *peer) sees() ([]string, int) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return slices.Clone(pr.view), pr.pushes
}

func peerIDs(ps ...*peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.prov.ID()
	}
	slices.Sort(out)
	return out
}

// waitPeers waits until every peer in ps sees exactly want, and returns how long it took.
func waitPeers(t *testing.T, within time.Duration, want []string, ps ...*peer) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok := true
		for _, p := range ps {
			if v, _ := p.sees(); !slices.Equal(v, want) {
				ok = false
			}
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > within {
			for _, p := range ps {
				v, _ := p.sees()
				t.Errorf("%s sees %v", p.prov.ID(), v)
			}
			t.Fatalf("the peers did not all see %v within %v", want, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startPeers(t *testing.T, js jetstream.JetStream, n int) []*peer {
	t.Helper()
	ps := make([]*peer, n)
	for i := range ps {
		ps[i] = startPeer(t, js)
	}
	waitPeers(t, 3*time.Second, peerIDs(ps...), ps...)
	return ps
}

// TestTopologyOnlyWhenTheSetChanges: renewals rewrite every key every TTL/3; protoactor
// must not be handed a topology for each.
func TestTopologyOnlyWhenTheSetChanges(t *testing.T) {
	js := embed(t)
	ps := startPeers(t, js, 3)
	_, before := ps[0].sees()
	time.Sleep(2 * *testTTL)
	if _, after := ps[0].sees(); after != before {
		t.Errorf("%d topologies handed over while nothing changed", after-before)
	}
	if got := ps[0].prov.Members(); len(got) != 3 || got[0].Id > got[1].Id || got[1].Id > got[2].Id {
		t.Errorf("Members() = %v, want three sorted by id", got)
	}
}

func TestShutdownLeavesAtOnce(t *testing.T) {
	js := embed(t)
	ps := startPeers(t, js, 3)
	start := time.Now()
	if err := ps[2].prov.Shutdown(true); err != nil {
		t.Fatal(err)
	}
	waitPeers(t, 3*time.Second, peerIDs(ps[0], ps[1]), ps[0], ps[1])
	d := time.Since(start)
	t.Logf("a peer shut down left every other view %v after its shutdown began (TTL %v)", d, *testTTL)
	if d > *testTTL {
		t.Errorf("leaving took %v, longer than the TTL: the key was not deleted", d)
	}
	select {
	case err := <-ps[2].fencedBy:
		t.Errorf("a member that left was fenced: %v", err)
	default:
	}
}

func TestConfig(t *testing.T) {
	js := embed(t)
	for _, c := range []Config{
		{},
		{JetStream: js, TTL: 500 * time.Millisecond},
		{JetStream: js, TTL: 1500 * time.Millisecond},
		{JetStream: js, Bucket: "members.x"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	p, err := New(Config{JetStream: js})
	if err != nil || p.ttl != DefaultTTL {
		t.Errorf("defaults: %v, ttl %v", err, p.ttl)
	}
}

// TestBucketRefusingRenewalsFencesNobody makes the members bucket refuse every write for
// three TTLs, as a bucket does while it elects a leader, which can take longer than a
// TTL: no member can renew meanwhile, and none of them is dropped or fenced for it. When
// the bucket takes writes again, every view is still whole.
//
// The first renewal taken after the refusal starts a new run of acknowledgements, and
// the watch may bring it before its heartbeat records the acknowledgement, when the
// scheduler leaves the heartbeat waiting: the member must not judge the others by the
// run that ended, in which they have been silent for three TTLs.
func TestBucketRefusingRenewalsFencesNobody(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lateAck bool // peer 0 records its first acknowledgement after the refusal late
	}{
		{"acknowledgements recorded at once", false},
		{"an acknowledgement recorded after the watch brought its renewal", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := embed(t)
			var late atomic.Bool
			ps := []*peer{startPeerWith(t, js, 1, func(p *Provider) {
				p.acking = func() {
					if late.CompareAndSwap(true, false) {
						// Longer than the watch takes to bring the renewal, and than
						// the period of judging.
						time.Sleep(*testTTL / 2)
					}
				}
			})}
			ps = append(ps, startPeer(t, js), startPeer(t, js))
			waitPeers(t, 3*time.Second, peerIDs(ps...), ps...)
			ctx := context.Background()
			stream, err := js.Stream(ctx, "KV_members-test")
			if err != nil {
				t.Fatal(err)
			}
			cfg := stream.CachedInfo().Config
			limit := func(size int32) {
				t.Helper()
				cfg.MaxMsgSize = size
				if _, err := js.UpdateStream(ctx, cfg); err != nil {
					t.Fatal(err)
				}
			}
			limit(1) // no member's record fits
			refused := time.Now()
			check := func(until time.Time) {
				t.Helper()
				for time.Now().Before(until) {
					for i, p := range ps {
						select {
						case err := <-p.fencedBy:
							t.Fatalf("peer %d fenced %v after the bucket began to refuse renewals: %v", i, time.Since(refused), err)
						default:
						}
					}
					if v, _ := ps[0].sees(); len(v) != len(ps) {
						t.Fatalf("%v after the bucket began to refuse renewals, a peer sees %v", time.Since(refused), v)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			check(refused.Add(3 * *testTTL))
			late.Store(tc.lateAck)
			limit(-1)
			check(time.Now().Add(2 * *testTTL))
			if late.Load() {
				t.Fatal("peer 0 renewed no more after the bucket took writes again")
			}
			waitPeers(t, time.Second, peerIDs(ps...), ps...)
		})
	}
}

// TestWatchOnADeadServer kills the NATS server that one member is connected to, while
// another member stops renewing as a killed node would. The member on the dead server
// moves to another and its watch must not hold it back: it drops the silent member
// about when the member whose server lived does, counting the silence from the last
// renewal the bucket took, not from when its new watch began.
func TestWatchOnADeadServer(t *testing.T) {
	srvs, err := natsstore.EmbedCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		t.Cleanup(s.Shutdown)
	}
	connect := func(first int) jetstream.JetStream {
		t.Helper()
		urls := []string{srvs[first].URL()}
		for i, s := range srvs {
			if i != first {
				urls = append(urls, s.URL())
			}
		}
		return connectJS(t, strings.Join(urls, ","), nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	}
	ps := []*peer{startPeerOn(t, connect(0), 3)}
	ctx := context.Background()
	stream, err := ps[0].prov.cfg.JetStream.Stream(ctx, "KV_members-test")
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The server to kill leads nothing of the bucket, so no election comes into it.
	leader := info.Cluster.Leader
	victim, other := -1, -1
	for i, s := range srvs {
		switch {
		case s.Name() == leader:
		case victim < 0:
			victim = i
		default:
			other = i
		}
	}
	_ = ps[0].prov.Shutdown(true)
	ps = []*peer{startPeerOn(t, connect(victim), 3), startPeerOn(t, connect(other), 3), startPeerOn(t, connect(other), 3)}
	waitPeers(t, 5*time.Second, peerIDs(ps...), ps...)
	time.Sleep(*testTTL) // a few renewals through every watch

	ps[2].prov.pause.Lock()
	defer ps[2].prov.pause.Unlock()
	srvs[victim].Shutdown()
	want := peerIDs(ps[0], ps[1])
	// A member frozen at the kill renewed at most TTL/3 before it; the others judge
	// every TTL/3, and the member on the dead server notices its watch behind within
	// TTL/3 of a renewal the bucket took and may miss one renewal while it moves.
	within := 2*(*testTTL) + *testTTL/2
	var moved, stayed time.Duration
	var wg sync.WaitGroup
	wg.Go(func() { moved = waitPeers(t, 10**testTTL, want, ps[0]) })
	wg.Go(func() { stayed = waitPeers(t, 10**testTTL, want, ps[1]) })
	wg.Wait()
	t.Logf("the silent member was dropped %v after the kill by the member whose server died, %v by the other (TTL %v)",
		moved.Round(time.Millisecond), stayed.Round(time.Millisecond), *testTTL)
	if moved > within || stayed > within {
		t.Errorf("dropping a member silent since the kill took more than %v: the silence was counted afresh", within)
	}
}

// TestBucketLost deletes the members bucket under three members, as a restart of a NATS
// server that kept it in memory loses it: each makes it again, or finds it made again
// by another and its key missing there, and registers anew; every view is whole again
// within a few TTLs, and nobody is fenced.
func TestBucketLost(t *testing.T) {
	for _, again := range []bool{false, true} {
		name := "gone"
		if again {
			name = "made again by another"
		}
		t.Run(name, func(t *testing.T) { bucketLost(t, again) })
	}
}

func bucketLost(t *testing.T, madeAgain bool) {
	js := embed(t)
	ps := startPeers(t, js, 3)
	if err := js.DeleteKeyValue(context.Background(), "members-test"); err != nil {
		t.Fatal(err)
	}
	lost := time.Now()
	if madeAgain {
		if _, err := ps[0].prov.bucket(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for {
		kv, err := js.KeyValue(context.Background(), "members-test")
		if err == nil {
			keys, _ := kv.Keys(context.Background())
			if len(keys) == len(ps) {
				break
			}
		}
		if time.Since(lost) > 5**testTTL {
			t.Fatalf("the bucket was not made again with every member's key: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the bucket was made again with every member's key %v after it was lost (TTL %v)", time.Since(lost).Round(time.Millisecond), *testTTL)
	// Nobody is dropped meanwhile or later, with the watches on the new bucket.
	waitPeersStay(t, 2**testTTL, 3**testTTL, peerIDs(ps...), ps...)
	for i, p := range ps {
		select {
		case err := <-p.fencedBy:
			t.Errorf("peer %d fenced %v after the bucket was lost: %v", i, time.Since(lost), err)
		default:
		}
	}
	kv, err := js.KeyValue(context.Background(), "members-test")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(context.Background())
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, peerIDs(ps...)) {
		t.Errorf("keys in the bucket made again: %v, %v; want %v", keys, err, peerIDs(ps...))
	}
}

// waitPeersStay waits until every peer has seen want for a whole hold, and returns
// how long it took from the call until that hold began.
func waitPeersStay(t *testing.T, within, hold time.Duration, want []string, ps ...*peer) time.Duration {
	t.Helper()
	start := time.Now()
	var since time.Time
	for {
		ok := true
		for _, p := range ps {
			if v, _ := p.sees(); !slices.Equal(v, want) {
				ok = false
			}
		}
		switch {
		case !ok:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= hold:
			return since.Sub(start)
		}
		if time.Since(start) > within+hold {
			for _, p := range ps {
				v, _ := p.sees()
				t.Errorf("%s sees %v", p.prov.ID(), v)
			}
			t.Fatalf("the peers did not all see %v for %v within %v", want, hold, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDeleteKeyOfASilentMember deletes a member's key at the revision its judge saw,
// on a real bucket: a member that renewed since keeps its key and is not reported gone;
// a key deleted at the revision it holds is gone; and so is a key another member
// deleted first, which a second deletion at that revision finds refused.
func TestDeleteKeyOfASilentMember(t *testing.T) {
	js := embed(t)
	ps := startPeers(t, js, 2)
	p := ps[0].prov
	ctx := context.Background()
	key := peerIDs(ps[1])[0]
	e, err := p.kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	seen := e.Revision()
	waitRenewed := func() uint64 {
		t.Helper()
		deadline := time.Now().Add(3 * *testTTL)
		for time.Now().Before(deadline) {
			if e, err := p.kv.Get(ctx, key); err == nil && e.Revision() > seen {
				return e.Revision()
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("the member did not renew its key")
		return 0
	}
	now := waitRenewed()
	// Revision 0, a member kept from a bucket made again: nothing is deleted, and a key
	// that is there is not gone; a key that never was is, and no marker is written.
	if p.deleteKey(key, 0) {
		t.Error("a member whose key is there was reported gone at revision 0")
	}
	if _, err := p.kv.Get(ctx, key); err != nil {
		t.Fatalf("a deletion at revision 0 took the key: %v", err)
	}
	if !p.deleteKey("never-registered", 0) {
		t.Error("a key that never was was not reported gone")
	}
	if _, err := p.kv.Get(ctx, "never-registered"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("a deletion at revision 0 wrote to a key that never was: %v", err)
	}
	if p.deleteKey(key, seen) {
		t.Error("a member that renewed since the revision seen was reported gone")
	}
	if _, err := p.kv.Get(ctx, key); err != nil {
		t.Fatalf("a member that renewed lost its key: %v", err)
	}
	// Stop the member's renewals without its leaving, as a death would: the key stays
	// at the revision read next.
	ps[1].prov.cancel()
	ps[1].prov.wg.Wait()
	e, err = p.kv.Get(ctx, key)
	if err != nil {
		t.Fatalf("the key after its member stopped without leaving: %v", err)
	}
	if e.Revision() < now {
		t.Fatalf("the key went back from revision %d to %d", now, e.Revision())
	}
	if !p.deleteKey(key, e.Revision()) {
		t.Error("a key deleted at the revision it held was not reported gone")
	}
	if !p.deleteKey(key, e.Revision()) {
		t.Error("a key another deletion took first was not reported gone")
	}
}
