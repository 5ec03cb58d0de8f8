package natsstore

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A follower's consumer that misses its heartbeats (jetstream.ErrNoHeartbeat) has gone
// silent for one of two reasons: the server holding the consumer stopped (the ordered
// consumer starts again on another by itself), or the server this store is connected
// to stopped answering while the connection stays open. In the second case nothing
// moves until the client's pings find the connection stale, 4 to 6 s after the server
// stopped (store.go), and the node's index and event stream stand still behind the
// other nodes' meanwhile. A missed heartbeat asks the server for a PONG at once; a
// server that does not answer within serverProbe is left for another, 3 s after it
// stopped instead of up to 6.

// serverProbe is how long the connected server has to answer the probe's ping.
const serverProbe = time.Second

// probeIfSilent is told what interrupted a follower's consumer, and probes the
// connected server, one probe at a time, when it was missed heartbeats.
func (s *Store) probeIfSilent(err error) {
	if errors.Is(err, jetstream.ErrNoHeartbeat) && s.probing.CompareAndSwap(false, true) {
		go func() {
			defer s.probing.Store(false)
			s.probeServer()
		}()
	}
}

// probeServer pings the connected server and moves the connection to another server
// when the ping goes unanswered within serverProbe. It reports whether it moved it.
func (s *Store) probeServer() bool {
	if s.nc.Status() != nats.CONNECTED {
		return false // already moving, or closed
	}
	url := s.nc.ConnectedUrlRedacted()
	err := s.nc.FlushTimeout(serverProbe)
	if err == nil || !errors.Is(err, nats.ErrTimeout) || s.nc.ConnectedUrlRedacted() != url {
		return false
	}
	s.log.Warn("nats store: the connected NATS server does not answer; moving to another", "url", url, "waited", serverProbe)
	if err := s.nc.ForceReconnect(); err != nil {
		return false
	}
	s.serverMoves.Add(1)
	return true
}

// followersInterrupted notes an interruption of the connection under both followers:
// once it is back, a follower still behind has owed its records since now.
func (s *Store) followersInterrupted(now time.Time) {
	for _, f := range s.followers() {
		f.interrupted(now)
	}
}
