package natsstore

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// stallingProxy forwards TCP connections to a server until it is stalled; then it
// stops forwarding without closing anything, as a server on a machine that vanished, or
// behind a network that drops packets, looks to its clients: no reset, no answer.
type stallingProxy struct {
	ln      net.Listener
	target  string
	stalled chan struct{}
	once    sync.Once
	done    chan struct{} // closed when the test ends: held connections are let go
}

func newStallingProxy(t *testing.T, target string) *stallingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{ln: ln, target: target, stalled: make(chan struct{}), done: make(chan struct{})}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); p.stall(); close(p.done); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(2)
			go p.pipe(&conns, c, s)
			go p.pipe(&conns, s, c)
		}
	}()
	return p
}

// pipe copies from src to dst until the proxy stalls, then holds both ends open
// until the test ends.
func (p *stallingProxy) pipe(wg *sync.WaitGroup, dst, src net.Conn) {
	defer wg.Done()
	buf := make([]byte, 32<<10)
	for {
		_ = src.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, err := src.Read(buf)
		select {
		case <-p.stalled:
			<-p.done // hold the connection, answering nothing
			dst.Close()
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil && !isTimeout(err) {
			if err != io.EOF {
				dst.Close()
			}
			return
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func (p *stallingProxy) stall() { p.once.Do(func() { close(p.stalled) }) }

func (p *stallingProxy) url() string { return "nats://" + p.ln.Addr().String() }

// TestServerThatStopsAnswering: the server a store is connected to stops answering
// without closing the connection. The store must find the connection dead within
// seconds, not the minutes of NATS's default pings, and carry on through the other
// URL it was given.
func TestServerThatStopsAnswering(t *testing.T) {
	srv := embed(t)
	// Two ways to one server; the one the store takes stalls.
	target := srv.URL()[len("nats://"):]
	proxies := map[string]*stallingProxy{}
	var urls []string
	for range 2 {
		p := newStallingProxy(t, target)
		proxies[p.url()] = p
		urls = append(urls, p.url())
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
	proxy.stall()
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
