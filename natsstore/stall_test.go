package natsstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/stallproxy"
)

// TestServerThatStopsAnswering: the server a store is connected to stops answering
// without closing the connection. The store must find the connection dead within
// seconds, not the minutes of NATS's default pings, and carry on through the other
// URL it was given.
func TestServerThatStopsAnswering(t *testing.T) {
	srv := embed(t)
	// Two ways to one server; the one the store takes stalls.
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
	defer s.Close()
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
