package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/intentd/intentd"
	"github.com/intentd/intentd/cluster/clusterpb"
)

// A member that the others dropped (paused past its membership TTL, or cut off from
// NATS) must stop serving grains at once: the others have placed its intents elsewhere.
// It need not stop serving altogether. Its engine, with its store, event bus and
// subscribers, is whole; only its membership is spent, and protoactor blocks a member
// id that left. So the member is an incarnation: an actor system of its own, holding
// the remoting listener, the grains and the membership, which Rejoin replaces by a new
// one under a new id, while the intents' actors, on the engine's own system, are
// dropped so that none answers from what it held before.

// incarnation is one life of this node as a member of the cluster.
type incarnation struct {
	system  *actor.ActorSystem
	cluster *cluster.Cluster
	// activations counts the intent grains active on this incarnation; a grain counts
	// itself on the incarnation it was activated on, so that grains of an earlier one
	// that stop late count nowhere.
	activations atomic.Int64
	// mu is held to read while the cluster is used, and to write by leave: protoactor's
	// cluster dereferences what its shutdown took away, so a command that loaded the
	// incarnation before it left must find it gone rather than use it.
	mu   sync.RWMutex
	gone bool
	// started is set once StartMember returned: protoactor's cluster has no identity
	// lookup before, and a command through it would dereference nothing.
	started atomic.Bool
	// owners places intents on the members of the last topology, as protoactor's
	// partition (disthash) places their grains: rendezvous hashing of the grain's
	// identity over the members' addresses. Nil before the first topology.
	owners atomic.Pointer[cluster.Rendezvous]
	// partitioned is set while every member of the last topology serves partition
	// grains (partition.go): commands then go through them.
	partitioned atomic.Bool
}

// placed takes the members of a new topology.
func (m *incarnation) placed(members []*cluster.Member) {
	r := cluster.NewRendezvous()
	r.UpdateMembers(members)
	m.partitioned.Store(allServePartitions(members))
	m.owners.Store(r)
}

// ownsHere reports whether this incarnation is, by the last topology it was told of,
// the owner of intent id: a command for it then goes to the intent's actor here
// without protoactor's placement, a grain and a reply. The placement itself answers
// from the same topology, so the two agree but while a new one reaches them, when a
// command may run here and another on the member the placement chose; the store's
// sequence checks let one of them write, as they do for a grain that outlived its
// move.
func (m *incarnation) ownsHere(id string) bool {
	r := m.owners.Load()
	if r == nil || !m.serving() {
		return false
	}
	return r.GetByClusterIdentity(grainOf(id, m.partitioned.Load())) == m.system.Address()
}

// serving reports whether commands may go through the incarnation.
func (m *incarnation) serving() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.up()
}

// up reports whether the cluster may be used: started and not gone. m.mu is held.
func (m *incarnation) up() bool { return m.started.Load() && !m.gone }

// request sends a command to its intent's grain (its partition's, or its own while a
// member serves no partitions) through this incarnation.
func (m *incarnation) request(id string, cmd clusterpb.Command, timeout time.Duration) (any, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.up() {
		return nil, errNotMember
	}
	g := grainOf(id, m.partitioned.Load())
	return m.cluster.Request(g.Identity, g.Kind, cmd, cluster.WithTimeout(timeout))
}

// members reports the addresses of the members this incarnation sees, itself included.
func (m *incarnation) members() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := []string{}
	if !m.up() {
		return out
	}
	for _, mem := range m.cluster.MemberList.Members().Members() {
		out = append(out, mem.Address())
	}
	return out
}

// forgetPlacements empties protoactor's cache of where each grain was activated. It
// keeps an entry for every grain this member ever asked for, and the entry holds the
// grain's process, mailbox and state, long after the grain passivated: after 8,000
// intents, a third of a member's live heap. The next command for an intent looks its
// grain up again, once.
func (m *incarnation) forgetPlacements() {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.up() {
		return
	}
	for _, mem := range m.cluster.MemberList.Members().Members() {
		m.cluster.PidCache.RemoveByMember(mem)
	}
}

// leave ends the incarnation: its membership, its listener, its grains. It waits for the
// commands in flight through it, each bounded by its try's time-out.
func (m *incarnation) leave() {
	m.mu.Lock()
	m.gone = true
	m.mu.Unlock()
	m.cluster.Shutdown(true) // its actor system with it
}

// Rejoin makes this node a member again, as a new incarnation, after it was fenced:
// the current incarnation leaves (its grains stop; commands meanwhile are answered 503
// member_unavailable), the intents' actors are dropped with what they held, and a new
// incarnation joins with a provider from provide, tried again (with a new provider each
// time, since a provider serves one start) until it joins or ctx ends. Outside cluster
// mode it does nothing.
func (e *Engine) Rejoin(ctx context.Context, provide func() (cluster.ClusterProvider, error)) error {
	if e.cfg.Cluster == nil {
		return nil
	}
	e.rejoinMu.Lock()
	defer e.rejoinMu.Unlock()
	if e.closed() {
		return fmt.Errorf("rejoin the cluster: %w", intentd.ErrEngineClosed)
	}
	start := time.Now()
	if m := e.member.Swap(nil); m != nil {
		m.leave()
	}
	e.membersMoved() // commands waiting on the old incarnation try again
	dropped := e.registry.passivate(-time.Hour)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err := e.joinWith(provide)
		if err == nil {
			e.log.Info("rejoined the cluster as a new member", "address", e.member.Load().system.Address(),
				"took", time.Since(start).Round(time.Millisecond), "intent_actors_dropped", dropped)
			return nil
		}
		e.log.Warn("rejoin the cluster; trying again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return fmt.Errorf("rejoin the cluster: %w", ctx.Err())
		case <-e.ctx.Done():
			return fmt.Errorf("rejoin the cluster: %w", intentd.ErrEngineClosed)
		case <-time.After(wait):
		}
	}
}

// joinWith starts an incarnation on a new provider.
func (e *Engine) joinWith(provide func() (cluster.ClusterProvider, error)) error {
	p, err := provide()
	if err != nil {
		return err
	}
	return e.startCluster(p)
}
