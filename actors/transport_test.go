package actors

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// pingCounter is a connection that reads the HTTP/2 frames going both ways and counts
// the pings among them (not their answers).
type pingCounter struct {
	net.Conn
	out, in *io.PipeWriter
	pings   atomic.Int64
	wg      sync.WaitGroup
}

func countPings(c net.Conn) *pingCounter {
	p := &pingCounter{Conn: c}
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	p.out, p.in = outW, inW
	p.wg.Add(2)
	go p.read(outR, true)
	go p.read(inR, false)
	return p
}

func (p *pingCounter) read(r io.Reader, client bool) {
	defer p.wg.Done()
	if client {
		if _, err := io.ReadFull(r, make([]byte, len(http2.ClientPreface))); err != nil {
			return
		}
	}
	fr := http2.NewFramer(nil, r)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			io.Copy(io.Discard, r) // the connection ends; keep its writer from blocking
			return
		}
		if ping, ok := f.(*http2.PingFrame); ok && !ping.IsAck() {
			p.pings.Add(1)
		}
	}
}

func (p *pingCounter) Write(b []byte) (int, error) {
	p.out.Write(b)
	return p.Conn.Write(b)
}

func (p *pingCounter) Read(b []byte) (int, error) {
	n, err := p.Conn.Read(b)
	p.in.Write(b[:n])
	return n, err
}

func (p *pingCounter) Close() error {
	err := p.Conn.Close()
	p.out.Close()
	p.in.Close()
	return err
}

// TestMembersDoNotPingPerMessage checks that the options members dial and serve with
// keep gRPC from pinging for its bandwidth estimate: with its defaults, a connection
// that carries one request and its answer at a time pings for nearly every message,
// both ways (100 pings for 50 calls when this was written).
// The requests here are health checks over a connection made like a member's.
func TestMembersDoNotPingPerMessage(t *testing.T) {
	const calls = 50
	cases := []struct {
		name     string
		dial     []grpc.DialOption
		serve    []grpc.ServerOption
		maxPings int64
	}{
		{"gRPC's defaults", dialOptions(nil)[:1], nil, calls / 2},
		{"the members' options", dialOptions(nil), serverOptions(nil), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := grpc.NewServer(c.serve...)
			healthpb.RegisterHealthServer(srv, health.NewServer())
			go srv.Serve(ln)
			defer srv.Stop()
			var counted atomic.Pointer[pingCounter]
			dial := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				if err != nil {
					return nil, err
				}
				p := countPings(conn)
				counted.Store(p)
				return p, nil
			})
			conn, err := grpc.NewClient(ln.Addr().String(), append(c.dial, dial)...)
			if err != nil {
				t.Fatal(err)
			}
			client := healthpb.NewHealthClient(conn)
			for range calls {
				if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
					t.Fatal(err)
				}
			}
			conn.Close()
			p := counted.Load()
			p.wg.Wait()
			pings := p.pings.Load()
			switch {
			case c.maxPings == 0 && pings != 0:
				t.Errorf("%d pings over %d calls, want none", pings, calls)
			case c.maxPings > 0 && pings < c.maxPings:
				// gRPC's defaults ping; if they stop, this test no longer tells the
				// options apart from them.
				t.Errorf("gRPC's defaults sent %d pings over %d calls, expected %d or more", pings, calls, c.maxPings)
			}
		})
	}
}
