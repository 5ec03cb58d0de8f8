package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/intentd/intentd"
	"github.com/intentd/intentd/cluster/clusterpb"
	"github.com/intentd/intentd/crypto"
	"google.golang.org/protobuf/proto"
)

// grain is, on the member that owns them, an intent (a grain of kind intentKind) or a
// partition of the intents (partitionKind, partition.go): it hands each command to the
// intent's actor here and sends back its answer. Commands run side by side, each in a
// goroutine of its own, so that a partition's intents do not wait for one another. A
// command protoactor sends again (a retried request) is answered from the replies the
// grain keeps, or joins the run under way, and does not run twice.
type grain struct {
	e         *Engine
	member    *incarnation // the incarnation the grain was activated on
	id        string       // the intent or partition this grain is, from protoactor's ClusterInit
	partition bool         // a grain of partitionKind
	full      bool         // an intent's grain activated past ClusterConfig.MaxGrains: it refuses, then stops
	replies   map[string]proto.Message
	order     []keptReply // the kept replies' request ids, oldest first
	// running holds the commands under way, by request id.
	running map[string]*run
	// idle is the grain's own timer of its idleness (idle.go): it stops once idle for
	// linger with no command under way.
	idle idleness
}

// run is a command under way in a goroutine of its own, and those waiting for its
// answer: the sender of each try. The goroutine answers them itself, through the
// member's actor system rather than the grain, so that a grain stopped meanwhile (its
// partition placed elsewhere, the member leaving) still answers what it took.
type run struct {
	mu      sync.Mutex
	waiting []*actor.PID
	done    bool
	reply   proto.Message
}

// wait adds a try's sender to those the run answers, or answers it at once when the
// run is done.
func (r *run) wait(ctx actor.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		ctx.Respond(r.reply)
		return
	}
	r.waiting = append(r.waiting, ctx.Sender())
}

// finish records the run's reply and sends it to every try waiting.
func (r *run) finish(root *actor.RootContext, reply proto.Message) {
	r.mu.Lock()
	r.done, r.reply = true, reply
	waiting := r.waiting
	r.waiting = nil
	r.mu.Unlock()
	for _, to := range waiting {
		if to != nil {
			root.Send(to, reply)
		}
	}
}

// keptReply is when a kept reply was made, under its request id.
type keptReply struct {
	request string
	at      time.Time
}

// handled tells a grain that the command of a request it ran has answered, so that it
// keeps the reply for the request's later tries.
type handled struct {
	request string
	reply   proto.Message
}

// errGrainsFull answers a command whose grain was activated past the member's bound.
var errGrainsFull = &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeCapacityExceeded,
	Message: "the cluster member that holds the intent holds as many intents as it may; retry later"}

// errShuttingDown answers a command that reaches a member whose engine is closing.
var errShuttingDown = intentd.Errorf(intentd.KindBusy, intentd.CodeShuttingDown, "the cluster member that holds the intent is shutting down; retry")

// fullGrainLinger is how long a grain activated past the bound waits for the command it
// was activated for, before it stops unasked.
const fullGrainLinger = time.Second

// maxKeptReplies bounds the replies a grain keeps for retried requests. A retry comes
// within its command's budget (ClusterConfig.RequestTimeout), so a reply is kept that
// long; an intent's grain meets a handful of commands, a partition's as many as its
// intents get in that time.
const maxKeptReplies = 256

func (g *grain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case clusterpb.Command:
		g.idle.touch()
		g.command(ctx, m)
	case *handled:
		g.idle.touch()
		g.keep(m.request, m.reply)
		delete(g.running, m.request)
	case *actor.Started:
		g.member.activations.Add(1)
		// A grain idle as long as an intent actor may be stops, as the actor does:
		// its state is in the store, and the next command activates it again.
		g.idle.start(ctx, g.e.cfg.PassivateAfter)
	case *cluster.ClusterInit:
		// protoactor tells a grain what it is after Started, before any command.
		g.id = m.Identity.Identity
		g.partition = m.Identity.Kind == partitionKind
		if max := g.e.maxGrains; max > 0 && !g.partition && g.member.activations.Load() > max {
			// Past the bound an intent's grain answers its first command busy and
			// stops: a flood of activations costs the member a moment, not its
			// memory. Partitions are 1,024 at most; their bound is on the intents
			// they hold (handle).
			g.full = true
			g.e.grainsRefused.Add(1)
			g.idle.start(ctx, fullGrainLinger)
		}
	case idleCheck:
		// A grain waiting for a command's answer stays: it passivates once idle again.
		if g.idle.over(m) && len(g.running) == 0 {
			ctx.Stop(ctx.Self())
		}
	case *actor.Restarting:
		// A restart sends Started again without Stopped.
		g.member.activations.Add(-1)
		g.idle.stop()
	case *actor.Stopped:
		g.member.activations.Add(-1)
		g.idle.stop()
	}
}

// command answers cmd: from the replies kept, by joining its run under way, or by
// running it in a goroutine, which answers and tells the grain (handled).
func (g *grain) command(ctx actor.Context, cmd clusterpb.Command) {
	req := cmd.GetRequestId()
	if g.full {
		ctx.Respond(clusterpb.NewErrorReply(req, errGrainsFull))
		ctx.Stop(ctx.Self())
		return
	}
	if r, ok := g.replies[req]; ok {
		ctx.Respond(r)
		return
	}
	if r, ok := g.running[req]; ok {
		r.wait(ctx)
		return
	}
	if !g.e.track() {
		// The member is shutting down: it leaves the cluster once its commands under
		// way are answered, and the sender tries the intent's next owner.
		ctx.Respond(clusterpb.NewErrorReply(req, errShuttingDown))
		return
	}
	if g.running == nil {
		g.running = make(map[string]*run)
	}
	r := &run{waiting: []*actor.PID{ctx.Sender()}}
	g.running[req] = r
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		defer g.e.wg.Done()
		reply := g.handle(cmd)
		r.finish(root, reply)
		root.Send(self, &handled{request: req, reply: reply})
	}()
}

// keep keeps reply r of request req for the retries of the request, and lets go of
// the replies older than a command's budget or past maxKeptReplies.
func (g *grain) keep(req string, r proto.Message) {
	now, budget := time.Now(), g.e.requestBudget()
	for len(g.order) > 0 && (len(g.order) >= maxKeptReplies || now.Sub(g.order[0].at) > budget) {
		delete(g.replies, g.order[0].request)
		g.order = g.order[1:]
	}
	if g.replies == nil {
		g.replies = make(map[string]proto.Message)
	}
	g.replies[req] = r
	g.order = append(g.order, keptReply{request: req, at: now})
}

func (g *grain) handle(cmd clusterpb.Command) proto.Message {
	msg, err := message(cmd)
	if err == nil {
		err = g.check(cmd, msg)
	}
	if err == nil && g.partition {
		// A partition's grain holds any number of intents: the bound is on the
		// intents' actors this member holds, as for the commands it takes itself.
		err = g.e.registry.bound(cmd.GetIntentId(), msg)
	}
	if err == nil {
		// The owner's span of the command is a child of the sender's, whose context
		// came with the command: the two members' spans make one trace.
		ctx, cancel := context.WithTimeout(fromTraceparent(g.e.ctx, cmd.GetTraceContext()), callTimeout)
		_, receive := commandSpans(cmd)
		ctx, span := g.e.commandSpan(ctx, receive, cmd, serverKind)
		_, err = g.e.registry.localCall(ctx, cmd.GetIntentId(), msg)
		endSpan(span, err)
		cancel()
	}
	if err != nil {
		var ie *intentd.Error
		if !errors.As(err, &ie) || ie.Kind == intentd.KindInternal {
			g.e.log.Error("intent command", "intent_id", cmd.GetIntentId(), "err", err)
		}
		return clusterpb.NewErrorReply(cmd.GetRequestId(), err)
	}
	return &clusterpb.Done{RequestId: cmd.GetRequestId()}
}

// check refuses a command that no member sends: one for another intent than the grain
// is (or than its partition holds), or a create that is not of a new intent whose authorship verifies. Only members
// reach a grain (mutual TLS on the remoting port), and a member checks all this before
// it sends; the owner checks again, since it is the one that writes, and since a
// member's settings (--allow-unsigned, the passkey checks) may differ from its own.
func (g *grain) check(cmd clusterpb.Command, msg any) error {
	if grainOf(cmd.GetIntentId(), g.partition).Identity != g.id {
		return intentd.Internal("intent command: %w", fmt.Errorf("a command for intent %q reached the grain of %q", cmd.GetIntentId(), g.id))
	}
	switch m := msg.(type) {
	case create:
		return g.e.checkCreate(cmd.GetIntentId(), m.snap)
	case propose:
		return g.e.checkSolution(m.proposal)
	}
	return nil
}

// createSkew is how far a create's time may be from the owner's clock: the members'
// clocks differ by less, and a create crosses to its owner in milliseconds.
const createSkew = time.Minute

// checkCreate refuses a create whose snapshot is not that of a new, open intent of id,
// as SubmitIntent makes one: made now, with a deadline no further than this member's
// --intent-ttl, its authored intent naming id and a stored policy that takes its attrs,
// and its authorship verifying over the intent's canonical bytes.
func (e *Engine) checkCreate(id string, s *snapshot) error {
	bad := func(format string, args ...any) error {
		return intentd.Internal("create: %w", fmt.Errorf("intent %q: %s", id, fmt.Sprintf(format, args...)))
	}
	switch {
	case s.ID != id:
		return bad("the snapshot is of intent %q", s.ID)
	case s.State != intentd.StateOpen:
		return bad("the snapshot is %s, not open", s.State)
	case s.Proposal != nil || s.Evidence != nil || s.Receipt != nil || s.Failures != nil || s.Reason != "" ||
		s.FailureKind != "" || s.EvidenceMissing != nil || !s.ProposedAt.IsZero() || !s.FinishedAt.IsZero():
		return bad("the snapshot carries what only a proposal writes")
	case !s.ExpiresAt.After(s.CreatedAt) || s.ExpiresAt.Sub(s.CreatedAt) > e.cfg.IntentTTL+createSkew:
		return bad("the snapshot expires at %v, not within --intent-ttl (%v) after it was created at %v", s.ExpiresAt, e.cfg.IntentTTL, s.CreatedAt)
	case s.CreatedAt.Sub(e.cfg.Now()).Abs() > createSkew:
		return bad("the snapshot was created at %v, not now (%v)", s.CreatedAt, e.cfg.Now())
	}
	canon, rawAuthorship, ok := s.authoredParts()
	if !ok {
		return bad("the authored intent is not an intent and its authorship")
	}
	in, err := intentd.DecodeIntent(canon)
	if err != nil {
		return bad("the authored intent: %v", err)
	}
	if cid, _ := intentd.CanonicalIntentID(in.ID); cid != id || in.PolicyID != s.PolicyID {
		return bad("the authored intent is %s of policy %s, the snapshot %s of policy %s", in.ID, in.PolicyID, id, s.PolicyID)
	}
	authorship, err := crypto.DecodeAuthorship(rawAuthorship)
	if err != nil {
		return bad("the authorship: %v", err)
	}
	if s.Mandate != "" {
		return e.checkPurchaseCreate(id, s.Mandate, canon, authorship, bad)
	}
	if err := e.verifyAuthorship(canon, authorship); err != nil {
		return err
	}
	return e.checkPolicyOf(e.ctx, in)
}

// checkPurchaseCreate refuses the create of a purchase's intent unless the mandate it
// names takes purchases (or decided this one, whose create is tried again) and the
// intent is the one a purchase makes: the mandate's policy and attrs under the
// purchase's id, unsigned. The mandate's author signed the mandate, and the sender's
// mandate actor took the purchase before it sent the create.
func (e *Engine) checkPurchaseCreate(id, mandateID string, canon []byte, a crypto.Authorship, bad func(string, ...any) error) error {
	rec, p, parts, err := e.mandateWithPolicy(e.ctx, mandateID)
	if err != nil {
		return err
	}
	if st := rec.state(p, parts.attrs, e.cfg.Now()); st != intentd.MandateActive && rec.purchase(id) == nil {
		// The mandate stopped between the sender's take and this create.
		return intentd.Errorf(intentd.KindConflict, intentd.CodeForMandateState(st), "mandate %s is %s: it takes no purchase", mandateID, st)
	}
	want, err := rec.purchaseIntent(parts, id)
	if err != nil {
		return intentd.Internal("encode purchase intent: %w", err)
	}
	if !bytes.Equal(want, canon) || !a.Unsigned() {
		return bad("it is not the intent of a purchase under mandate %s", mandateID)
	}
	return nil
}
