package natsstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/internal/stallproxy"
)

// TestServerThatStopsAnswering: the server a store is connected to stops answering
// without closing the connection. The store must find the connection dead within
// seconds, not the minutes of NATS's default pings, and carry on through the other
// URL it was given.
func TestServerThatStopsAnswering(t *testing.T) {
	s, proxies := storeThroughProxies(t)
	ctx := context.Background()
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	proxy := proxies[s.nc.ConnectedUrl()]
	if proxy == nil {
		t.Fatalf("connected to %s, not through a proxy", s.nc.ConnectedUrl())
	}
	proxy.Stall()
	stalled := time.Now()
	for i := 0; ; i++ {
		err := s.CreateIntent(ctx, fmt.Sprint("i", i), "P", nil, time.Now().Add(time.Hour))
		if err == nil {
			break
		}
		if time.Since(stalled) > 20*time.Second {
			t.Fatalf("writes still fail %v after the server stopped answering: %v", time.Since(stalled).Round(time.Millisecond), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("a write succeeded %v after the server stopped answering, through %s", time.Since(stalled).Round(time.Millisecond), s.nc.ConnectedUrl())
}

// TestProbeMovesFromAStalledServer: the probe a missed heartbeat starts leaves a
// connected server that stopped answering for the other URL, and leaves one that
// answers alone.
func TestProbeMovesFromAStalledServer(t *testing.T) {
	s, proxies := storeThroughProxies(t)

	if s.probeServer() {
		t.Fatal("the probe moved away from a server that answers")
	}
	from := s.nc.ConnectedUrl()
	proxy := proxies[from]
	if proxy == nil {
		t.Fatalf("connected to %s, not through a proxy", from)
	}
	proxy.Stall()
	// Only a missed heartbeat probes: another interruption is the consumer's own.
	s.probeIfSilent(errors.New("nats: some other error"))
	if s.probing.Load() {
		t.Fatal("an interruption other than missed heartbeats probed the server")
	}
	s.probeIfSilent(jetstream.ErrNoHeartbeat)
	s.probeIfSilent(jetstream.ErrNoHeartbeat) // the other follower's, at once
	eventually(t, func() bool {
		// ConnectedUrl is "" while the connection moves, which is not from either: a
		// move seen between IsConnected and it is not one done. Nor is one whose
		// reconnection the store has not heard of yet (its handler runs a moment after
		// the connection is back): until then the store refuses calls, to be retried.
		url := s.nc.ConnectedUrl()
		return url != "" && url != from && s.nc.IsConnected() && s.check() == nil
	}, "the connection on the other URL, and the store told of it")
	eventually(t, func() bool { return !s.probing.Load() }, "the probe done")
	if got := s.serverMoves.Load(); got != 1 {
		t.Errorf("server moves = %d, want 1", got)
	}
	if _, err := s.PutPolicy(context.Background(), "P", []byte{1}, nil); err != nil {
		t.Fatalf("a write after the move: %v", err)
	}
}

// storeThroughProxies opens a store on one embedded server reached two ways, each
// through a proxy the test can stall, and returns it with the proxies by URL.
func storeThroughProxies(t *testing.T) (*Store, map[string]*stallproxy.Proxy) {
	t.Helper()
	srv := embed(t)
	target := srv.URL()[len("nats://"):]
	proxies := map[string]*stallproxy.Proxy{}
	var urls []string
	for range 2 {
		p, err := stallproxy.New(target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		url := "nats://" + p.Addr()
		proxies[url] = p
		urls = append(urls, url)
	}
	s, err := Open(context.Background(), Options{URLs: urls, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, proxies
}
