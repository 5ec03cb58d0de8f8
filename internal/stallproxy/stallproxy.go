// Package stallproxy is, for tests, a TCP proxy that can stall: it stops forwarding
// without closing anything, as a server on a machine that vanished, or behind a network
// that drops packets, looks to its clients (no reset, no answer), until it resumes.
package stallproxy

import (
	"net"
	"os"
	"sync"
	"time"
)

// Proxy forwards the connections it accepts to one target.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	stalled bool
	conns   []net.Conn // every connection, both ends, for Resume and Close to let go
	wg      sync.WaitGroup
}

// New listens on a free loopback port and forwards to target (HOST:PORT).
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's HOST:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stall stops forwarding: the connections open are held as they are, and those accepted
// meanwhile are held unanswered.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// Resume closes the connections held and forwards new ones again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled {
		p.closeConns()
		p.stalled = false
	}
}

// Close stops accepting, lets every connection go and waits for the forwarding to end.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closeConns()
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// closeConns closes every connection; p.mu is held.
func (p *Proxy) closeConns() {
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *Proxy) isStalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		stalled := p.stalled
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		if stalled {
			continue // held, unanswered, until Resume or Close closes it
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// pipe copies src to dst, reading in short slices so that a stall takes hold at once.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		_ = src.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, err := src.Read(buf)
		if p.isStalled() {
			return // the connection is held as it is; Resume or Close closes it
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil && !os.IsTimeout(err) {
			dst.Close()
			return
		}
	}
}
