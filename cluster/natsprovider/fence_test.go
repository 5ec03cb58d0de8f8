package natsprovider

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/natsstore"
)

// TestFrozenMemberLeavesFencesAndRejoins freezes a peer as SIGSTOP would (no renewals,
// no watch), measures how long the others take to drop it, resumes it, and expects it
// to fence itself at once; a new member then joins in its place.
func TestFrozenMemberLeavesFencesAndRejoins(t *testing.T) {
	js := embed(t)
	ps := startPeers(t, js, 3)
	frozen := ps[2]

	frozen.prov.pause.Lock()
	start := time.Now()
	d := waitPeers(t, *testTTL+5*time.Second, peerIDs(ps[0], ps[1]), ps[0], ps[1])
	t.Logf("a frozen peer left every other view %v after it stopped renewing (TTL %v)", d, *testTTL)
	if d > *testTTL+2*time.Second {
		t.Errorf("detection took %v, want at most TTL + 2s", d)
	}
	if frozen.prov.FenceCause() != nil {
		t.Fatal("fenced while frozen")
	}
	frozen.prov.pause.Unlock()
	select {
	case err := <-frozen.fencedBy:
		t.Logf("the resumed peer fenced itself %v after it was frozen: %v", time.Since(start), err)
		if !errors.Is(err, ErrFenced) || !errors.Is(frozen.prov.FenceCause(), ErrFenced) {
			t.Errorf("fence cause %v", err)
		}
	case <-time.After(*testTTL):
		t.Fatal("the resumed peer did not fence itself")
	}
	<-frozen.prov.Fenced()
	// Fenced, it neither renews nor rewrites its key: the others keep it out.
	time.Sleep(*testTTL)
	if v, _ := ps[0].sees(); slices.Contains(v, frozen.prov.ID()) {
		t.Errorf("the fenced peer is back in the view: %v", v)
	}

	back := startPeer(t, js)
	d = waitPeers(t, 3*time.Second, peerIDs(ps[0], ps[1], back), ps[0], ps[1], back)
	t.Logf("a new peer was in every view %v after it started", d)
}

// TestDeletedKeyFences: a member that finds its own key gone fences itself through its
// watch, without waiting for its next renewal.
func TestDeletedKeyFences(t *testing.T) {
	js := embed(t)
	ps := startPeers(t, js, 3)
	kv, err := js.KeyValue(context.Background(), "members-test")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := kv.Delete(context.Background(), ps[1].prov.ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ps[1].fencedBy:
		t.Logf("fenced %v after its key was deleted: %v", time.Since(start), err)
	case <-time.After(*testTTL):
		t.Fatal("the peer whose key was deleted did not fence itself within its TTL")
	}
	waitPeers(t, 3*time.Second, peerIDs(ps[0], ps[2]), ps[0], ps[2])
}

// TestNATSUnreachableDoesNotFence: a member that cannot reach NATS keeps going. The
// store is on the same NATS, so its grains can write nothing meanwhile; and a member
// that fenced on silence would stop with every other whenever the bucket's leader
// moves.
func TestNATSUnreachableDoesNotFence(t *testing.T) {
	srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	p := startPeer(t, js)
	srv.Shutdown()
	select {
	case err := <-p.fencedBy:
		t.Fatalf("fenced while NATS was away: %v", err)
	case <-time.After(2**testTTL + time.Second):
	}
}

// TestShutdownWaitsForOnFenced: the call of OnFenced is a goroutine of the provider's
// like its loops, and Shutdown returns only once it has returned.
func TestShutdownWaitsForOnFenced(t *testing.T) {
	js := embed(t)
	var returned atomic.Bool
	prov, err := New(Config{JetStream: js, TTL: *testTTL, Logger: logger(), OnFenced: func(error) {
		time.Sleep(100 * time.Millisecond)
		returned.Store(true)
	}})
	if err != nil {
		t.Fatal(err)
	}
	m := &cluster.Member{Id: "fenced-member", Host: "127.0.0.1", Port: 7000, Kinds: []string{"intent"}}
	if err := prov.startMember("test", m, func(cluster.Members) {}); err != nil {
		t.Fatal(err)
	}
	if err := prov.kv.Delete(context.Background(), m.Id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-prov.Fenced():
	case <-time.After(*testTTL):
		t.Fatal("not fenced after its key was deleted")
	}
	if err := prov.Shutdown(true); err != nil {
		t.Fatal(err)
	}
	if !returned.Load() {
		t.Error("Shutdown returned before OnFenced did")
	}
}
