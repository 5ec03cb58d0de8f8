package actors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/google/uuid"
	"google.golang.org/grpc/credentials"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/cluster/actorlog"
	"github.com/intentd/intentd/cluster/clusterpb"
)

// ClusterConfig makes the engine one member of a cluster. Its intents are placed on the
// members by protoactor's partitioning, through grains of their partitions
// (partition.go): a command for an intent goes, over remoting, to its partition's grain
// on the member that owns it, which hands it to its own intent actor. The state stays in the shared store,
// whose sequence checks refuse an activation that outlived its move, so the grain keeps
// nothing the store does not.
type ClusterConfig struct {
	// Name keeps clusters apart on one NATS.
	Name string
	// Host and Port are where this member listens for the other members, and where they
	// reach it unless Advertise says otherwise.
	Host string
	Port int
	// Advertise, HOST:PORT, is where the other members reach this member when that is
	// not Host:Port: a name its certificate carries while it listens on an address that
	// changes (a Kubernetes pod's DNS name, on the pod's address), since the members
	// dial, and check the certificate against, the address a member advertises. Empty:
	// Host:Port, resolved (a name given as Host is advertised as the address it
	// resolved to).
	Advertise string
	// Provider tells the members of the cluster (natsprovider on the store's NATS).
	Provider cluster.ClusterProvider
	// Credentials, when set, secure the remoting port both ways, for the listener and
	// for dials (clustertls makes mutual TLS ones). Nil: plaintext, which anyone who
	// reaches the port can use as a member: for loopback only.
	Credentials credentials.TransportCredentials
	// MaxGrains bounds the intents this member holds for commands (their actors): a
	// command for one more, through a partition's grain or from this member's own
	// clients, is answered 503 capacity_exceeded, and counted (ClusterGrainsRefused).
	// Partition grains are 1,024 at most; intents' own grains, used beside a member of
	// a release before partitions, count too. 0: DefaultMaxGrains; negative: no bound.
	MaxGrains int
	// RequestTimeout bounds a command to another member, all its tries; 0:
	// DefaultClusterRequestTimeout.
	RequestTimeout time.Duration
	// Log, when this member keeps the transparency log, is that log: the member then
	// serves it to the members that keep none (clusterlog.go). Nil: it keeps none, and
	// reads the cluster's through ClusterLog.
	Log intentd.LogReader

	stuckAfter time.Duration // 0: stuckAfter; shorter in tests
	// noPartitions serves intents' own grains alone, as the releases before partition
	// grains did: tests of a cluster of mixed releases.
	noPartitions bool
	// ownerDecides sends proposals to their intent's owner, as the releases before
	// decidedWhereTaken did: tests of the crossing, which those releases' proposals
	// and every member's expiries and resumes still take.
	ownerDecides bool
}

// DefaultMaxGrains is the bound on the intents a member holds for commands when none is
// given: an idle intent's actor, with what the member keeps beside it, costs a few KiB,
// so the bound holds them to a few hundred MB, and actors passivate after
// PassivateAfter, so only a burst of that many intents within it meets the bound.
const DefaultMaxGrains = 100_000

// gossipInterval is how often a member gossips with the others (protoactor's default is
// 300 ms). Membership comes from the NATS provider, not from gossip; gossip carries each
// member's heartbeat, which the others block a member for only after
// HeartbeatExpiration (20 s) without one, and the notice of a member that left
// cleanly, which the provider's topology brings as well.
const gossipInterval = time.Second

// intentKind is the grain kind of an intent.
const intentKind = "intent"

// membersMoved wakes the commands waiting on the members as they were: each tries again.
func (e *Engine) membersMoved() {
	e.membersMu.Lock()
	close(e.membersChanged)
	e.membersChanged = make(chan struct{})
	e.membersMu.Unlock()
}

// endpointQueue is the first size of the queue of messages to one peer.
const endpointQueue = 1024

// startCluster joins the cluster as a new incarnation (rejoin.go) whose membership
// provider is p; it returns once this member has the first topology. protoactor panics
// when its listener cannot bind or the membership provider fails to start: the port is
// tried first, for an error that names it, and a panic of the start becomes an error, so
// that a node that cannot join says why in one line.
func (e *Engine) startCluster(p cluster.ClusterProvider) (err error) {
	c := e.cfg.Cluster
	addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cluster port: %w", err)
	}
	ln.Close()
	switch e.maxGrains = int64(c.MaxGrains); {
	case c.MaxGrains == 0:
		e.maxGrains = DefaultMaxGrains
	case c.MaxGrains < 0:
		e.maxGrains = 0
	}
	// Each incarnation is an actor system of its own, whose id is its member id: a
	// member the others dropped comes back under a new one, as protoactor requires,
	// while the engine's own actors (the intents, the event bus) stay where they are.
	m := &incarnation{system: actor.NewActorSystem(actor.WithLoggerFactory(actorlog.Factory(e.cfg.Logger)))}
	m.system.EventStream.Subscribe(answerDeadLetters)
	grains := actor.PropsFromProducer(func() actor.Actor { return &grain{e: e, member: m} },
		actor.WithDispatcher(e.dispatcher))
	kinds := []*cluster.Kind{cluster.NewKind(intentKind, grains)}
	if !c.noPartitions {
		kinds = append(kinds, cluster.NewKind(partitionKind, grains))
	}
	if c.Log != nil {
		// One bound for the incarnation's reads, whichever activation of the grain
		// took them: a grain placed away and back finds its reads still counted.
		reads := make(chan struct{}, maxLogReads)
		kinds = append(kinds, cluster.NewKind(logKind, actor.PropsFromProducer(func() actor.Actor {
			return &logGrain{e: e, member: m, log: c.Log, reads: reads}
		})))
	}
	// protoactor makes each peer's outgoing queue with room for a million messages up
	// front, 16 MiB a peer that stayed held after the peer went quiet; the queue grows
	// by doubling when a burst needs it.
	ropts := []remote.ConfigOption{remote.WithEndpointWriterQueueSize(endpointQueue)}
	if c.Advertise != "" {
		ropts = append(ropts, remote.WithAdvertisedHost(c.Advertise))
	}
	ropts = append(ropts, remote.WithServerOptions(serverOptions(c.Credentials)...),
		remote.WithDialOptions(dialOptions(c.Credentials)...))
	cfg := cluster.Configure(c.Name, p, disthash.New(), remote.Configure(c.Host, c.Port, ropts...),
		cluster.WithKinds(kinds...), cluster.WithRequestTimeout(e.requestBudget()))
	cfg.GossipInterval = gossipInterval
	m.cluster = cluster.New(m.system, cfg)
	m.system.EventStream.Subscribe(func(evt any) {
		// Called with the member list's lock held: hand the work to a goroutine.
		t, ok := evt.(*cluster.ClusterTopology)
		if !ok {
			return
		}
		m.placed(t.Members)
		e.membersMoved()
		// The member that scans the expiry index keeps it; the others need not
		// follow every intent of the cluster (intentd.IndexKeeper).
		if k, ok := e.cfg.Store.(intentd.IndexKeeper); ok {
			k.KeepIndex(e.expiryScanner())
		}
		if e.track() {
			go func() {
				defer e.wg.Done()
				e.resumeMoved()
			}()
		}
	})
	// The incarnation is in place before it starts: the first topology comes during
	// StartMember, and the commands it resumes go through it.
	e.member.Store(m)
	defer func() {
		if r := recover(); r != nil {
			e.member.CompareAndSwap(m, nil)
			if m.cluster.Remote != nil {
				m.cluster.Remote.Shutdown(false)
			}
			m.system.Shutdown()
			err = fmt.Errorf("join the cluster at %s: %v", addr, r)
		}
	}()
	m.cluster.StartMember()
	m.started.Store(true)
	return nil
}

// resumeMoved asks the owners of the processing intents to prove them, when the members
// change: the intents of a member that left are owned by others now, and nobody else
// would wake them. An owner already proving an intent does nothing. The member that
// scans the expiry index asks, as it keeps the index of the processing intents; a
// member that becomes it with this change loads the index first.
func (e *Engine) resumeMoved() {
	if !e.expiryScanner() {
		return
	}
	ids, err := e.store.Processing(e.ctx)
	if err != nil {
		e.log.Error("list processing intents after a change of members", "err", err)
		return
	}
	// The members may not all agree yet on who owns what: an owner that does not
	// answer is asked again, a little later, until every intent has been handed over.
	for wait := 500 * time.Millisecond; len(ids) > 0; wait = min(2*wait, 5*time.Second) {
		var left []string
		for _, id := range ids {
			if _, err := e.registry.call(e.ctx, id, resume{}); err != nil && e.ctx.Err() == nil {
				if intentd.ErrorKind(err) != intentd.KindBusy {
					e.log.Warn("resume an intent after a change of members", "intent_id", id, "err", err)
					continue
				}
				left = append(left, id)
			}
		}
		ids = left
		select {
		case <-e.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// stuckAfter is how long an intent may stay processing before the scanning member asks
// its owner to prove it. Proving takes milliseconds; an intent processing for longer was
// left by a member that died with its proof while the others did not yet agree on who
// owns it now, and no change of members is coming to wake it. An owner already proving
// it changes nothing.
const stuckAfter = 10 * time.Second

// wakeStuckLoop is the net under resumeMoved: the member that scans the expiry index
// also looks, every half of stuckAfter, for intents processing since its last look but
// one, and asks their owners to resume them.
func (e *Engine) wakeStuckLoop() {
	after := e.cfg.Cluster.stuckAfter
	if after == 0 {
		after = stuckAfter
	}
	t := time.NewTicker(after / 2)
	defer t.Stop()
	seen := make(map[string]time.Time) // a processing intent, and when it was first seen so
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
		}
		if !e.expiryScanner() {
			clear(seen)
			continue
		}
		ids, err := e.store.Processing(e.ctx)
		if err != nil {
			e.log.Error("list processing intents", "err", err)
			continue
		}
		now := time.Now()
		next := make(map[string]time.Time, len(ids))
		var stuck []string
		for _, id := range ids {
			first, ok := seen[id]
			if !ok {
				first = now
			}
			next[id] = first
			if now.Sub(first) >= after {
				stuck = append(stuck, id)
				next[id] = now // once per stuckAfter, while a slow proof goes on
			}
		}
		seen = next
		if len(stuck) > 0 {
			e.log.Warn("intents processing for long; their owners are asked to prove them", "count", len(stuck), "after", after)
			e.sendAll(stuck, resume{}, "resume intent")
		}
	}
}

// command is the wire form of an intent actor's message, or nil for a message that
// never leaves its member: a proof's outcome goes to the actor on the member that
// proved it.
func command(id string, msg any) (clusterpb.Command, error) {
	rid := uuid.NewString()
	switch m := msg.(type) {
	case create:
		data, err := m.snap.encode()
		if err != nil {
			return nil, err
		}
		return &clusterpb.CreateIntent{RequestId: rid, IntentId: id, PolicyId: m.snap.PolicyID, Snapshot: data,
			ExpiresAtUnixNano: m.snap.ExpiresAt.UnixNano()}, nil
	case propose:
		return &clusterpb.Propose{RequestId: rid, IntentId: id, Solution: m.proposal.Solution,
			Agent: clusterpb.FromAgentSignature(m.agent), Purchase: m.purchase}, nil
	case expire:
		return &clusterpb.Expire{RequestId: rid, IntentId: id}, nil
	case resume:
		return &clusterpb.Resume{RequestId: rid, IntentId: id}, nil
	}
	return nil, nil
}

// crosses reports whether msg is one command encodes, the messages a grain takes on
// the owner.
func crosses(msg any) bool {
	switch msg.(type) {
	case create, propose, expire, resume:
		return true
	}
	return false
}

// message is the intent actor's message of a command that came over the wire.
func message(cmd clusterpb.Command) (any, error) {
	switch c := cmd.(type) {
	case *clusterpb.CreateIntent:
		snap, err := decodeSnapshot(c.Snapshot)
		if err != nil {
			return nil, err
		}
		snap.Request = c.RequestId
		return create{snap: snap}, nil
	case *clusterpb.Propose:
		return propose{proposal: intentd.Proposal{Solution: c.Solution}, agent: c.GetAgent().Domain(), request: c.RequestId, purchase: c.Purchase}, nil
	case *clusterpb.Expire:
		return expire{}, nil
	case *clusterpb.Resume:
		return resume{}, nil
	}
	return nil, fmt.Errorf("no intent command %T", cmd)
}

// clusterCall sends an intent's command to the member that owns the intent and returns
// its answer. The owner's reply value is not sent back: a caller that needs the intent
// reads it from the store.
//
// Each try has a short time-out of its own: a try that meets a member which just died
// waits out its whole time-out before protoactor forgets where the grain was, so one
// long try would spend the caller's whole budget on the dead member. The next try
// carries the same request id, so a command that did run is answered as it was, not
// run again.
func (e *Engine) clusterCall(ctx context.Context, id string, cmd clusterpb.Command) (any, error) {
	start := time.Now()
	send, _ := commandSpans(cmd)
	ctx, span := e.commandSpan(ctx, send, cmd, clientKind)
	clusterpb.SetTraceContext(cmd, traceparentOf(ctx))
	res, err := e.clusterTries(ctx, id, cmd)
	e.obs.RemoteCall(time.Since(start), err)
	if err == nil {
		if r, ok := res.(*clusterpb.ErrorReply); ok {
			err = r.Err()
		}
	}
	endSpan(span, err)
	if err != nil {
		return nil, err
	}
	switch r := res.(type) {
	case *clusterpb.Done:
		return nil, nil
	case *clusterpb.ErrorReply:
		return nil, r.Err()
	}
	return nil, intentd.Internal("intent command: %w", fmt.Errorf("%s answered %T", id, res))
}

// requestBudget bounds a command to another member, all its tries
// (ClusterConfig.RequestTimeout).
func (e *Engine) requestBudget() time.Duration {
	if t := e.cfg.Cluster.RequestTimeout; t != 0 {
		return t
	}
	return DefaultClusterRequestTimeout
}

// budgetEnd is when a request to other members that starts now must have its answer:
// the request budget from now, or ctx's deadline when that comes first.
func (e *Engine) budgetEnd(ctx context.Context) time.Time {
	end := time.Now().Add(e.requestBudget())
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		return d
	}
	return end
}

// clusterTries sends cmd until the owner answers, the budget is spent or ctx ends.
func (e *Engine) clusterTries(ctx context.Context, id string, cmd clusterpb.Command) (any, error) {
	deadline := e.budgetEnd(ctx)
	var err error
	for {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			break
		}
		var res any
		res, err = e.clusterTry(ctx, id, cmd, min(left, clusterTryTimeout))
		if r, ok := res.(*clusterpb.ErrorReply); ok && err == nil && r.GetCode() == intentd.CodeShuttingDown {
			// The owner is leaving the cluster: once it has, the next try reaches the
			// intent's next owner.
			err = r.Err()
			select {
			case <-time.After(membersSettle):
			case <-ctx.Done():
			}
			continue
		}
		if err == nil {
			return res, nil
		}
	}
	if ctx.Err() != nil {
		return nil, intentd.Canceled(ctx.Err())
	}
	e.log.Warn("intent command to its member", "intent_id", id, "err", err)
	return nil, &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeMemberUnavailable,
		Message: "the cluster member that holds the intent did not answer; retry later", Err: err}
}

// clusterTry sends a command once and waits for its answer, for at most timeout, or
// until the members change. A request to an owner that died can wait longer than its
// time-out (protoactor waits a fixed 5 s for the owner's placement actor), and once the
// others have dropped the dead member the next try reaches the new owner at once; so a
// try is left to finish by itself, and a new one starts. Both carry one request id, so
// the command runs once.
func (e *Engine) clusterTry(ctx context.Context, id string, cmd clusterpb.Command, timeout time.Duration) (any, error) {
	return e.tryOnce(ctx, timeout, func(m *incarnation) (any, error) { return m.request(id, cmd, timeout) })
}

// tryOnce sends one request through the current incarnation, as send does it, and
// waits for its answer as clusterTry says: for at most timeout, until the members
// change, or until ctx ends, whichever comes first, leaving send to finish by itself.
func (e *Engine) tryOnce(ctx context.Context, timeout time.Duration, send func(*incarnation) (any, error)) (any, error) {
	m := e.member.Load()
	if m == nil || !m.serving() {
		// Between two incarnations, or while one starts: the next try is a moment
		// away, not at once.
		select {
		case <-time.After(membersSettle):
		case <-ctx.Done():
		}
		return nil, errNotMember
	}
	if !e.track() {
		return nil, intentd.ErrEngineClosed
	}
	e.membersMu.Lock()
	changed := e.membersChanged
	e.membersMu.Unlock()
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer e.wg.Done()
		res, err := send(m)
		done <- answer{res, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-done:
		return a.res, a.err
	case <-changed:
		// Every listener of the change (protoactor's partition table and cache of
		// owners among them) runs after this one may have: give them a moment.
		select {
		case <-time.After(membersSettle):
		case <-ctx.Done():
		}
		return nil, errMembersChanged
	case <-t.C:
		return nil, fmt.Errorf("no answer within %v", timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// membersSettle is how long a command waits after the members change before it tries
// again.
const membersSettle = 100 * time.Millisecond

var errMembersChanged = errors.New("the members changed while the command waited")

// errNotMember is a try's error while this node is between two incarnations.
var errNotMember = errors.New("this node is rejoining the cluster")

// DefaultClusterRequestTimeout bounds a command to another member when the caller sets
// no shorter deadline: long enough for the cluster to drop a member that died (its
// membership key lives 3 s; protoactor then waits up to 5 s on the old owner), short
// enough to answer a client before its own time-out.
const DefaultClusterRequestTimeout = 8 * time.Second

// clusterTryTimeout bounds one try of a command; a live member answers one in
// milliseconds (a single write to the store).
const clusterTryTimeout = 2 * time.Second

// expiryScanner reports whether this node scans the expiry index: on one node, always;
// in a cluster, the member of the lowest address among those it sees, so that one
// member at a time sends the expiries and the owners of the intents write them. While
// the members disagree on who is in, two may scan for a moment; an intent's second
// expiry finds it expired and changes nothing.
func (e *Engine) expiryScanner() bool {
	if e.cfg.Cluster == nil {
		return true
	}
	m := e.member.Load()
	if m == nil {
		return false
	}
	members := m.members()
	if len(members) == 0 {
		return false
	}
	return slices.Min(members) == m.system.Address()
}

// ClusterActivations reports the intent grains active on this member's current
// incarnation.
func (e *Engine) ClusterActivations() int {
	if m := e.member.Load(); m != nil {
		return int(m.activations.Load())
	}
	return 0
}

// ClusterGrainsRefused counts the grains activated past the member's bound, each of
// which answered its command 503 and stopped.
func (e *Engine) ClusterGrainsRefused() uint64 { return e.grainsRefused.Load() }

// ClusterMembers reports the addresses of the members this one sees, itself included,
// or nil when the engine is not in a cluster.
func (e *Engine) ClusterMembers() []string {
	if e.cfg.Cluster == nil {
		return nil
	}
	m := e.member.Load()
	if m == nil {
		return []string{} // rejoining: in cluster mode, and seeing nobody
	}
	return m.members()
}
