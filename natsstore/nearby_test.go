package natsstore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/intentd/intentd"
)

// TestIntentNearby reads intents as a member about to take a proposal does: from the
// nearest replica, by a direct get, on a stream this release made; through the leader
// for an intent the replica does not hold, and for every intent once the stream allows
// no direct get (a stream of an earlier release). The read is the fence of the write
// that follows it, whichever answered.
func TestIntentNearby(t *testing.T) {
	ctx := context.Background()
	srv := embed(t)
	st := open(t, srv.URL())
	defer st.Close()
	info, err := st.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Config.AllowDirect {
		t.Fatal("the stream this release made allows no direct get")
	}
	if _, err := st.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := st.CreateIntent(ctx, id, "P", []byte("open "+id), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}

	watch, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	var direct, leader atomic.Int64
	directSub, err := watch.Subscribe("$JS.API.DIRECT.GET."+st.name+".>", func(*nats.Msg) { direct.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Subscribe("$JS.API.STREAM.MSG.GET."+st.name, func(*nats.Msg) { leader.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	seen := func(what string, wantDirect, wantLeader int64) {
		t.Helper()
		if err := watch.Flush(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for (direct.Load() < wantDirect || leader.Load() < wantLeader) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if d, l := direct.Swap(0), leader.Swap(0); d != wantDirect || l != wantLeader {
			t.Fatalf("%s: %d direct gets and %d reads of the leader, want %d and %d", what, d, l, wantDirect, wantLeader)
		}
	}

	t.Run("from the replica", func(t *testing.T) {
		got, err := st.IntentNearby(ctx, "a")
		if err != nil || string(got) != "open a" {
			t.Fatalf("IntentNearby: %q, %v", got, err)
		}
		seen("an intent the replica holds", 1, 0)
		if err := st.BeginProcessing(ctx, "a", "P", []byte("processing a"), time.Now().Add(time.Hour)); err != nil {
			t.Fatalf("the write after the read: %v", err)
		}
		leader.Store(0)
	})
	t.Run("none there", func(t *testing.T) {
		if _, err := st.IntentNearby(ctx, "c"); !errors.Is(err, intentd.ErrNotFound) {
			t.Fatalf("IntentNearby of an intent never created: %v, want ErrNotFound", err)
		}
		seen("an intent the replica does not hold", 1, 1)
	})
	t.Run("no direct gets", func(t *testing.T) {
		if off := st.directOff.Load(); off != 0 {
			t.Fatalf("direct gets put off (until %v) on a stream that allows them", time.Unix(0, off))
		}
		if err := directSub.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
		cfg := info.Config
		cfg.AllowDirect = false
		if _, err := st.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := st.IntentNearby(ctx, "b")
		if err != nil || string(got) != "open b" {
			t.Fatalf("IntentNearby with direct gets off: %q, %v", got, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("IntentNearby with direct gets off took %v: it waited for a replica to answer", d)
		}
		seen("a stream without direct gets", 0, 1)
		if off := time.Unix(0, st.directOff.Load()); time.Until(off) < directRetry-time.Minute/2 {
			t.Fatalf("after a direct get nobody answered, the store tries them again at %v", off)
		}
		if got, err := st.IntentNearby(ctx, "b"); err != nil || string(got) != "open b" {
			t.Fatalf("IntentNearby while direct gets are put off: %q, %v", got, err)
		}
		seen("a read while direct gets are put off", 0, 1)
		if err := st.BeginProcessing(ctx, "b", "P", []byte("processing b"), time.Now().Add(time.Hour)); err != nil {
			t.Fatalf("the write after the read: %v", err)
		}
	})
	t.Run("nobody answers", func(t *testing.T) {
		// A responder that never answers, as a server does for a user not allowed
		// direct gets: the read waits directTry, then asks the leader.
		silent, err := watch.Subscribe("$JS.API.DIRECT.GET."+st.name+".>", func(*nats.Msg) {})
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Unsubscribe()
		if err := watch.Flush(); err != nil {
			t.Fatal(err)
		}
		st.directOff.Store(0)
		start := time.Now()
		got, err := st.IntentNearby(ctx, "b")
		if err != nil || string(got) != "processing b" {
			t.Fatalf("IntentNearby with a direct get nobody answers: %q, %v", got, err)
		}
		if d := time.Since(start); d < directTry || d > directTry+2*time.Second {
			t.Fatalf("IntentNearby took %v, want about %v: a try of the direct get, then the leader", d, directTry)
		}
		if time.Until(time.Unix(0, st.directOff.Load())) < directRetry-time.Minute/2 {
			t.Fatal("after a direct get nobody answered, the store tries the next at once")
		}
	})
}
