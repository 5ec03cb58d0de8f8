package actors

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/intentd/intentd"
)

// registryShards spread the live-actor table over locks so that callers of different
// intents rarely meet.
const registryShards = 64

// registry tracks the live intent actors and how recently each was used, so that idle
// ones can be passivated (stopped; their snapshot brings them back). protoactor's name
// registry (SpawnNamed) keeps one actor per id; this table adds what it lacks: a count of
// requests in flight, which keeps an actor from being stopped under a caller, and the
// time of its last use. ReceiveTimeout would do the latter but races at the protoactor
// version in use, so activity is tracked here.
type registry struct {
	e      *Engine
	seed   maphash.Seed // of the hash that picks an id's shard
	shards [registryShards]registryShard
	// n counts the entries of the shards' tables, so that the bound on a member's
	// actors (overBound), read on its commands, costs no pass over the shards.
	n atomic.Int64
	// endedStops counts the actors stopped at their intent's end (stop), for the
	// release of memory once the member is idle (passivationLoop).
	endedStops atomic.Int64
}

type registryShard struct {
	mu sync.Mutex
	m  map[string]*liveActor
}

type liveActor struct {
	pid      *actor.PID
	inflight int
	lastUsed time.Time
	// stopping is closed when a passivated actor is gone, or a create written without
	// an actor is done; callers wait for it before spawning the intent's actor again
	// under the same name.
	stopping chan struct{}
	// createErr is the error of the create written without an actor, set before
	// stopping is closed.
	createErr error
	// ended marks an actor whose intent has reached its end while other calls were in
	// flight; the last of them to finish stops it.
	ended bool
}

func newRegistry(e *Engine) *registry {
	r := &registry{e: e, seed: maphash.MakeSeed()}
	for i := range r.shards {
		r.shards[i].m = make(map[string]*liveActor)
	}
	return r
}

// shard is the shard of id. maphash hashes a string without allocating; hash/fnv's
// hasher and the copy of id into it were two allocations a call.
func (r *registry) shard(id string) *registryShard {
	return &r.shards[maphash.String(r.seed, id)%registryShards]
}

// call sends msg to the actor of intent id, wherever it lives: here, or in a cluster on
// the member that owns the intent, but for a proposal, which this member's actor of the
// intent decides (decidedWhereTaken).
func (r *registry) call(ctx context.Context, id string, msg any) (any, error) {
	if r.e.cfg.Cluster != nil {
		if m := r.e.member.Load(); m != nil && (m.ownsHere(id) || r.decidedWhereTaken(msg) && m.serving()) {
			// This member owns the intent, or the command is a proposal: no grain, no
			// placement, no reply to carry. The bound on grains holds for these actors
			// too, so that a flood of commands costs a member a moment, not memory.
			if err := r.bound(id, msg); err != nil {
				return nil, err
			}
			return r.localCall(ctx, id, msg)
		}
		cmd, err := command(id, msg)
		if err != nil {
			return nil, intentd.Internal("encode intent command: %w", err)
		}
		if cmd != nil {
			return r.e.clusterCall(ctx, id, cmd)
		}
	}
	return r.localCall(ctx, id, msg)
}

// decidedWhereTaken reports whether msg is decided by the member that took it, whoever
// owns its intent: a proposal is. Sent to the owner, a proposal crossed twice (the
// command and its reply, protobuf and gRPC both ways and the wake-ups on both members),
// about 560 µs of the two members' CPU, to be decided by an actor that read the intent
// from the store all the same, since its create was written by the member that took it.
// Decided here, it costs that read. The store makes it safe: a proposal is taken by the
// write of its processing record, conditioned on the intent's last record (the open one),
// and its outcome by a write conditioned on that processing record, so that of two
// members (or an owner's actor whose snapshot is older) only one takes a proposal, and
// the other reads the intent again and answers from what was written. The owner still
// expires, resumes and creates what it serves (docs/cluster.md, "What a command does").
//
// A purchase's proposal still goes to the owner. When the members change, every owner
// is asked to resume its processing intents, and an owner that is not proving one
// proves it again: for a plain intent the store keeps the first outcome and drops the
// second, but a purchase's proof is decided against its mandate, which would count the
// second decision as well as the first.
func (r *registry) decidedWhereTaken(msg any) bool {
	p, ok := msg.(propose)
	return ok && !p.purchase && !r.e.cfg.Cluster.ownerDecides
}

// localCall sends msg to this member's actor of intent id, spawning it from its
// snapshot if it is not live, and returns its reply. When ctx ends first, localCall
// returns at once; the actor still handles the message, and what it writes stays
// written.
func (r *registry) localCall(ctx context.Context, id string, msg any) (any, error) {
	for attempt := 0; ; attempt++ {
		pid, err := r.acquire(ctx, id)
		if err != nil {
			return nil, err
		}
		req := &request{msg: msg, reply: make(chan reply, 1), trace: spanOf(ctx)}
		r.e.system.Root.Send(pid, req)
		timeout := time.NewTimer(callTimeout)
		var rep reply
		select {
		case rep = <-req.reply:
			timeout.Stop()
		case <-timeout.C:
			r.release(id, pid, false, false)
			return nil, intentd.Internal("ask intent actor: %w", fmt.Errorf("%s: no answer in %v", id, callTimeout))
		case <-ctx.Done():
			timeout.Stop()
			go r.releaseWhenAnswered(id, pid, req)
			return nil, intentd.Canceled(ctx.Err())
		}
		dead := r.releaseAnswered(id, pid, rep)
		if dead && attempt < 3 {
			continue // the actor stopped for good; a new one comes from the snapshot
		}
		if dead {
			return nil, intentd.Internal("ask intent actor: %w", fmt.Errorf("%s: %w", id, rep.err))
		}
		return rep.value, rep.err
	}
}

// releaseWhenAnswered gives back the call of a caller that left before the answer,
// once the answer comes, so that the actor is not stopped under the message; or after
// callTimeout, as for a caller that waited that long.
func (r *registry) releaseWhenAnswered(id string, pid *actor.PID, req *request) {
	timeout := time.NewTimer(callTimeout)
	defer timeout.Stop()
	select {
	case rep := <-req.reply:
		r.releaseAnswered(id, pid, rep)
	case <-timeout.C:
		r.release(id, pid, false, false)
	}
}

// releaseAnswered gives back a call by the answer it got, and reports whether that
// answer says the actor was gone.
func (r *registry) releaseAnswered(id string, pid *actor.PID, rep reply) (dead bool) {
	dead = errors.Is(rep.err, errDeadLetter)
	r.release(id, pid, dead, ended(rep.value))
	return dead
}

// request is a call to an intent actor from this member: the message, and the channel
// its answer goes to. A channel of the caller's own rather than a protoactor future: a
// future registers a process and starts a timer of its own for each call, and waiting
// for one while a context can end took a goroutine more; with the hand-offs between
// them that was about 5 % of the decide path's CPU.
type request struct {
	msg   any
	reply chan reply // buffered: the actor never waits for its caller
	// trace is the caller's span, which the actor's span of the message continues;
	// nil when the caller does not trace.
	trace *trace.SpanContext
}

// answer gives the request its answer, unless it has one already: guard answers after
// a panic, and the actor may have answered before it. The channel holds one answer, so
// neither ever waits.
func (q *request) answer(rep reply) {
	select {
	case q.reply <- rep:
	default:
	}
}

// IgnoreDeadLetterLogging keeps protoactor from logging a request that found its actor
// gone: the registry answers it (answerDeadLetters) and sends it again.
func (*request) IgnoreDeadLetterLogging() {}

// errDeadLetter answers a request whose actor had stopped before it was delivered.
var errDeadLetter = errors.New("the intent actor had stopped")

// answerDeadLetters answers the requests that reach protoactor's dead letters, those
// sent to an actor that stopped in the meantime, which would otherwise wait for their
// whole time-out. It is subscribed to the actor system's event stream.
func answerDeadLetters(ev any) {
	dl, ok := ev.(*actor.DeadLetterEvent)
	if !ok {
		return
	}
	if req, ok := dl.Message.(*request); ok {
		req.answer(reply{err: errDeadLetter})
	}
}

// createIdle runs create, the store's write of a new intent, without an actor, when
// none is live for id; it reports false, having run nothing, when one is. An actor
// asked for in the meantime waits until the write is done, so that it reads what the
// write left. Most intents are created and then left alone for a while: an actor
// spawned for the create, asked once and passivated later, cost about a fifth of what
// the service does for an intent it takes in. As with an actor, a caller whose ctx
// ends first is answered at once, and the write goes on. The write runs on one of the
// dispatcher's workers, as an actor's would: on a goroutine of its own, its stack grew
// in the store's write path at every create, and copying it cost 4 % of intake's CPU.
func (r *registry) createIdle(ctx context.Context, id string, create func() error) (bool, error) {
	// The write is counted among the work Close waits for, so that the store is not
	// closed under it.
	if !r.e.track() {
		return true, intentd.Errorf(intentd.KindBusy, intentd.CodeShuttingDown, "the service is shutting down")
	}
	s := r.shard(id)
	s.mu.Lock()
	if s.m[id] != nil {
		s.mu.Unlock()
		r.e.wg.Done()
		return false, nil
	}
	la := &liveActor{stopping: make(chan struct{})}
	r.put(s, id, la)
	s.mu.Unlock()
	r.e.dispatcher.Schedule(func() {
		defer r.e.wg.Done()
		err := create()
		s.mu.Lock()
		r.drop(s, id)
		s.mu.Unlock()
		la.createErr = err
		close(la.stopping)
	})
	select {
	case <-la.stopping:
		return true, la.createErr
	case <-ctx.Done():
		return true, intentd.Canceled(ctx.Err())
	}
}

// acquire counts a call in flight to the actor of id, spawning it when none is live.
// An actor being stopped, or a create being written without one, is waited for first;
// a caller whose ctx ends meanwhile is answered at once, since that wait lasts as long
// as a store write, which a full disk or a store gone away can make long.
func (r *registry) acquire(ctx context.Context, id string) (*actor.PID, error) {
	s := r.shard(id)
	for {
		if r.e.closed() {
			return nil, intentd.Errorf(intentd.KindBusy, intentd.CodeShuttingDown, "the service is shutting down")
		}
		s.mu.Lock()
		la := s.m[id]
		if la != nil && la.stopping != nil {
			ch := la.stopping
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, intentd.Canceled(ctx.Err())
			case <-r.e.ctx.Done():
			}
			continue
		}
		if la == nil {
			props := actor.PropsFromProducer(func() actor.Actor { return &intentActor{e: r.e, id: id} },
				actor.WithDispatcher(r.e.dispatcher))
			pid, err := r.e.system.Root.SpawnNamed(props, "intent/"+id)
			if err != nil && !errors.Is(err, actor.ErrNameExists) {
				s.mu.Unlock()
				return nil, intentd.Internal("spawn intent actor: %w", err)
			}
			la = &liveActor{pid: pid}
			r.put(s, id, la)
		}
		la.inflight++
		la.lastUsed = r.e.cfg.Now()
		s.mu.Unlock()
		return la.pid, nil
	}
}

// ended reports whether an actor's answer is the snapshot of an intent that has
// reached its end.
func ended(value any) bool {
	snap, ok := value.(*snapshot)
	return ok && snap.State.Terminal()
}

// release gives back a call to the actor of id. dead says the call found the actor
// gone. ended says its answer was the snapshot of an intent that has reached its end:
// the actor is then stopped as soon as no call holds it, at once or when the last call
// in flight finishes (a proposal's own call can outlast a quick proof of it). A decided
// intent's actor has nothing left to do, and until passivation it kept its snapshot,
// evidence and receipt included: at a thousand decisions a second that was most of the
// live heap, whose marking by the collector set the tail of the decide path's latency
// (p99 32 to 45 ms against 13 to 17 ms with the actors gone within a second). A
// cluster's members do the same with the intents they own: the grains that bring them
// commands hold no intent's state, and a later command (a retry, a read) spawns the
// actor again from its snapshot.
func (r *registry) release(id string, pid *actor.PID, dead, ended bool) {
	s := r.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	la := s.m[id]
	if la == nil || la.pid != pid {
		return
	}
	la.inflight--
	la.lastUsed = r.e.cfg.Now()
	if ended {
		la.ended = true
	}
	switch {
	case la.inflight > 0 || la.stopping != nil:
	case dead:
		r.drop(s, id)
	case la.ended:
		r.stop(s, id, la)
	}
}

// stop stops la, the actor of id, and takes it out of the table once it is gone. The
// caller holds s.mu.
func (r *registry) stop(s *registryShard, id string, la *liveActor) {
	la.stopping = make(chan struct{})
	go func() {
		r.e.system.Root.StopFuture(la.pid).Wait()
		s.mu.Lock()
		if s.m[id] == la {
			r.drop(s, id)
		}
		s.mu.Unlock()
		close(la.stopping)
		r.endedStops.Add(1)
	}()
}

// overBound reports whether a command for intent id, one a grain would have taken,
// would make an actor past the member's bound on grains (ClusterConfig.MaxGrains),
// counting the actors live here, those of grains among them. A proof's outcome is
// never refused: it ends a proof under way.
func (r *registry) overBound(id string, msg any) bool {
	max := r.e.maxGrains
	if max <= 0 || !crosses(msg) || r.n.Load() < max {
		return false
	}
	s := r.shard(id)
	s.mu.Lock()
	_, live := s.m[id]
	s.mu.Unlock()
	return !live
}

// bound refuses, and counts, a command that overBound finds past the member's bound.
func (r *registry) bound(id string, msg any) error {
	if !r.overBound(id, msg) {
		return nil
	}
	r.e.grainsRefused.Add(1)
	return errGrainsFull
}

// put enters la as the actor of id in s, whose lock the caller holds.
func (r *registry) put(s *registryShard, id string, la *liveActor) {
	s.m[id] = la
	r.n.Add(1)
}

// drop takes the entry of id, which is there, out of s, whose lock the caller holds.
func (r *registry) drop(s *registryShard, id string) {
	delete(s.m, id)
	r.n.Add(-1)
}

// live reports the number of live intent actors, and of creates being written
// without one.
func (r *registry) live() int { return int(r.n.Load()) }

// passivate stops the actors idle for longer than idle and reports how many it stopped.
func (r *registry) passivate(idle time.Duration) int {
	cutoff := r.e.cfg.Now().Add(-idle)
	n := 0
	for i := range r.shards {
		s := &r.shards[i]
		var victims []*liveActor
		var ids []string
		s.mu.Lock()
		for id, la := range s.m {
			if la.inflight == 0 && la.stopping == nil && la.lastUsed.Before(cutoff) {
				la.stopping = make(chan struct{})
				victims = append(victims, la)
				ids = append(ids, id)
			}
		}
		s.mu.Unlock()
		if len(victims) == 0 {
			continue
		}
		futures := make([]*actor.Future, len(victims))
		for j, la := range victims {
			futures[j] = r.e.system.Root.StopFuture(la.pid)
		}
		for _, f := range futures {
			f.Wait()
		}
		s.mu.Lock()
		for j, la := range victims {
			if s.m[ids[j]] == la {
				r.drop(s, ids[j])
			}
			close(la.stopping)
		}
		s.mu.Unlock()
		n += len(victims)
	}
	return n
}

func (e *Engine) passivationLoop() {
	period := max(e.cfg.PassivateAfter/2, 10*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	// The actors stopped since memory was last released: passivated, and stopped at
	// their intent's end.
	stopped, ended := 0, 0
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
			stopped += e.registry.passivate(e.cfg.PassivateAfter)
			ended += int(e.registry.endedStops.Swap(0))
			e.passivateMandates(e.cfg.PassivateAfter)
			if e.burstOver(stopped, ended) {
				if m := e.member.Load(); m != nil {
					m.forgetPlacements()
				}
				releaseMemory()
				stopped, ended = 0, 0
			}
		}
	}
}

// releaseAfter is how many actors the passivation sweeps stop, once most of those that
// were live are gone (a burst is over), before the memory they held goes back to the
// operating system at once. After a burst the heap is mostly
// garbage, and Go returns it only as its next collections and its scavenger get to it,
// which an idle service does not ask for: a member that took 12,000 intents in 9 s
// still held 230-365 MiB 30 s later, from 68 MiB before. A burst that size costs one
// full collection (tens of milliseconds of CPU); a trickle never triggers it.
const releaseAfter = 1000

// releaseIdleAfter is how many actors stopped since the last release make a release
// once nothing is live any more: no intent actor and, in a cluster, no grain. A long
// load releases on the way, whenever a quarter of what it stopped is still live, and
// what it stops after that (up to releaseAfter) would otherwise stay held until the
// scavenger gets to it: 26 to 36 MiB of a member's resident memory 30 s after 10,000
// intents (docs/cluster.md, "Memory after a load").
const releaseIdleAfter = 100

// burstOver reports whether the memory of the stopped actors, counted since the last
// release, is to go back now: a burst is over (most of what it spawned has stopped), or
// the member has gone idle. Grains count as live, so that the release comes after the
// last of them stopped with what it held. Actors stopped at their intent's end (ended)
// count only once the member is idle: under a steady load they stop by the thousand
// while as many start, and a release every few seconds would hand back memory the next
// seconds fault in again.
func (e *Engine) burstOver(stopped, ended int) bool {
	if stopped+ended < releaseIdleAfter {
		return false
	}
	live := e.registry.live() + e.ClusterActivations()
	return live == 0 || stopped >= releaseAfter && live < stopped/4
}

// releaseMemory runs a collection and returns the freed memory to the operating system.
func releaseMemory() { debug.FreeOSMemory() }

// guard answers a request whose handling panicked with an internal error, so its caller
// does not wait for a reply that will never come, and then lets the panic go on to the
// supervisor, which restarts the actor from its snapshot.
func guard(ctx actor.Context, log func(msg string, args ...any)) {
	if r := recover(); r != nil {
		log("intent actor panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		answer(ctx, reply{err: intentd.Internal("intent actor: %w", fmt.Errorf("panic: %v", r))})
		panic(r)
	}
}

// answer gives rep to whoever asked the message ctx holds: a request's channel, or a
// future's sender.
func answer(ctx actor.Context, rep reply) {
	if req, ok := ctx.Message().(*request); ok {
		req.answer(rep)
		return
	}
	if ctx.Sender() != nil {
		ctx.Respond(rep)
	}
}
