package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/cluster/actorlog"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/policy"
	"go.opentelemetry.io/otel/trace"
)

// Config configures an Engine. Open takes it as it is: start from DefaultConfig, the one
// place the engine's defaults are written, and change what you need. Store and
// Extractor are required.
type Config struct {
	Store     intentd.Store
	Extractor evidence.Extractor
	// Prover makes receipts; nil means outcomes carry no receipt.
	Prover Prover
	// Verify sets what authorship is accepted (unsigned intents, passkey origin and RP id).
	Verify crypto.VerifyOptions
	// IntentTTL is how long an intent waits for a proposal.
	IntentTTL time.Duration
	// MaxProving is the number of proposals proved at once; at least 1.
	MaxProving int
	// ProvingQueue is the number of accepted proposals that may wait for a proving slot;
	// 0: none wait, and a proposal that finds every slot taken is refused at once.
	ProvingQueue int
	// MaxPreviewing is the number of previews decided at once, a share of proving of
	// their own beside MaxProving; at least 1. Previews are refused while proposals
	// wait for a proving slot.
	MaxPreviewing int
	// MaxSolutionBytes bounds a proposal's solution, and a preview's: 1 to
	// intentd.MaxSolutionBytes. It is the engine's so that every way in (the HTTP API,
	// the MCP tools, a caller in process) meets the one limit the operator set; a server
	// in front may check it first, with the same refusal.
	MaxSolutionBytes int
	// MaxPreviewsPerIntent is how many previews one intent may have; 0: no bound. The
	// count is kept in memory, not in the store (a preview writes nothing), so it
	// starts again when the service restarts; it ends with the intent.
	MaxPreviewsPerIntent int
	// ProvingTimeout bounds one proposal's extraction and proof. The extractors keep
	// their own, shorter, limits.
	ProvingTimeout time.Duration
	// EventRetention keeps the newest events; at least 1.
	EventRetention uint64
	// EventRetentionAge keeps events younger than this.
	EventRetentionAge time.Duration
	// MaxSubscribers bounds the event subscribers; at least 1.
	MaxSubscribers int
	// OwnSubscribers are places beyond MaxSubscribers for the service's own readers of
	// the events (the transparency log), so that a refusal names the limit the
	// operator set, not one more.
	OwnSubscribers int
	// SubscriberBuffer is the events a subscriber may fall behind before it is cut off.
	// Subscribers without a filter share one ring of the newest events, this many
	// rounded up to a power of two; one with a filter has a buffer of its own, for the
	// events it matches.
	SubscriberBuffer int
	// RecentIntentBytes is how much memory the snapshots of new intents may take while
	// they wait for their first proposal (recent.go), so that its actor starts without
	// reading the store; 0: none are kept. Each takes about 400 bytes beyond its signed
	// intent; at least the newest half of the budget's worth are held.
	RecentIntentBytes int
	// PassivateAfter is how long an intent actor may be idle before it stops.
	PassivateAfter time.Duration
	// ExpiryInterval is the longest the expiry scheduler sleeps.
	ExpiryInterval time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
	// Observer is told of transitions and timings, for metrics; nil: nobody.
	Observer *intentd.Observer
	// Cluster, when set, makes the engine a member of a cluster (cluster.go); its store
	// must be one that every member shares.
	Cluster *ClusterConfig
	// TracerProvider makes the spans of the engine's steps (trace.go); nil: no spans,
	// at the cost of a nil check a step.
	TracerProvider trace.TracerProvider
}

// DefaultConfig is the configuration of an engine with every default: what intentd runs
// with when no flag says otherwise (docs/operating.md).
func DefaultConfig() Config {
	return Config{
		IntentTTL:    24 * time.Hour,
		MaxProving:   64,
		ProvingQueue: 1024,
		// A quarter of the proposals' share: enough for agents to compare a few
		// candidates at once, little enough that previews never crowd out proving.
		MaxPreviewing:        16,
		MaxPreviewsPerIntent: 20,
		MaxSolutionBytes:     intentd.DefaultSolutionBytes,
		ProvingTimeout:       30 * time.Second,
		EventRetention:       1_000_000,
		EventRetentionAge:    7 * 24 * time.Hour,
		MaxSubscribers:       10_000,
		SubscriberBuffer:     1024,
		// About 20,000 intents of 1.5 KB: a proposal that comes within that many
		// creates of its intent's skips a read of the store.
		RecentIntentBytes: 32 << 20,
		// A burst of submissions should not keep its actors for long.
		PassivateAfter: 10 * time.Second,
		ExpiryInterval: time.Second,
	}
}

// validate refuses a configuration the engine cannot run with, naming the field.
func (c *Config) validate() error {
	switch {
	case c.Store == nil || c.Extractor == nil:
		return errors.New("actors: Config.Store and Config.Extractor are required")
	case c.MaxPreviewing < 1 || c.MaxPreviewsPerIntent < 0:
		return fmt.Errorf("actors: Config preview counts out of range (MaxPreviewing %d, MaxPreviewsPerIntent %d): start from DefaultConfig",
			c.MaxPreviewing, c.MaxPreviewsPerIntent)
	case c.MaxSolutionBytes < 1 || c.MaxSolutionBytes > intentd.MaxSolutionBytes:
		return fmt.Errorf("actors: Config.MaxSolutionBytes %d out of range: want 1 to %d (intentd.MaxSolutionBytes)", c.MaxSolutionBytes, intentd.MaxSolutionBytes)
	case c.MaxProving < 1 || c.ProvingQueue < 0 || c.MaxSubscribers < 1 || c.OwnSubscribers < 0 || c.SubscriberBuffer < 1 || c.EventRetention < 1:
		return fmt.Errorf("actors: Config counts out of range (MaxProving %d, ProvingQueue %d, MaxSubscribers %d, SubscriberBuffer %d, EventRetention %d): start from DefaultConfig",
			c.MaxProving, c.ProvingQueue, c.MaxSubscribers, c.SubscriberBuffer, c.EventRetention)
	case c.IntentTTL <= 0 || c.ProvingTimeout <= 0 || c.EventRetentionAge <= 0 || c.PassivateAfter <= 0 || c.ExpiryInterval <= 0:
		return fmt.Errorf("actors: Config durations must be positive (IntentTTL %s, ProvingTimeout %s, EventRetentionAge %s, PassivateAfter %s, ExpiryInterval %s): start from DefaultConfig",
			c.IntentTTL, c.ProvingTimeout, c.EventRetentionAge, c.PassivateAfter, c.ExpiryInterval)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return nil
}

// Engine is what the HTTP layer calls. It owns the actor system: one actor per live
// intent, the proving limiter and the event bus.
type Engine struct {
	cfg    Config
	store  intentd.Store
	obs    intentd.Observer
	log    *slog.Logger
	tracer trace.Tracer // nil: traces off
	system *actor.ActorSystem
	// member is this node's current incarnation as a member of the cluster (rejoin.go),
	// nil outside cluster mode and while a fenced member rejoins. Past maxGrains active
	// grains, a grain refuses (grainsRefused counts it).
	member        atomic.Pointer[incarnation]
	rejoinMu      sync.Mutex
	maxGrains     int64
	grainsRefused atomic.Uint64
	// membersChanged is closed when the members change, and replaced: a command
	// waiting on an owner that may be gone tries again at once.
	membersMu      sync.Mutex
	membersChanged chan struct{}

	registry *registry
	recent   *recentIntents // nil in a cluster
	// nearby reads an intent from a replica near this node, which may be behind the
	// store (intentd.NearbyReader); nil when the store has no such read.
	nearby func(ctx context.Context, id string) ([]byte, error)
	// dispatcher runs the intent actors' mailboxes.
	dispatcher *warmDispatcher
	limiter    *limiter
	bus        *actor.PID
	feed       *feed // the events the bus hands its subscribers

	policiesMu sync.RWMutex
	policies   map[string]*policy.Policy
	// policyBytes is the bytecode of the cached policies, which their memory follows.
	policyBytes int

	// previewed counts the previews of each intent that had one, until it ends.
	previewMu sync.Mutex
	previewed map[string]int

	// mandateStore is the store's mandates, nil when it keeps none (mandate.go);
	// mandates are this member's live mandate actors.
	mandateStore intentd.MandateStore
	mandates     mandateActors

	ctx    context.Context // cancelled by Close: ends proving and background loops
	cancel context.CancelFunc
	// wg counts background loops and proving workers; trackMu keeps a worker from being
	// added once Close has begun to wait.
	wg       sync.WaitGroup
	trackMu  sync.Mutex
	stopping bool

	closeOnce  sync.Once
	ready      chan struct{}
	expiryWake chan struct{}
}

// callTimeout bounds a request to an actor; every actor answers after at most one store
// write, so reaching it means the service is in trouble.
const callTimeout = 30 * time.Second

// ask sends msg to pid and waits for its answer, for at most callTimeout and no longer
// than ctx allows. protoactor's futures block without a context, so a caller whose ctx
// can end waits on a goroutine of its own. The intent actors, asked far more often, are
// asked through a channel instead (registry.localCall).
func (e *Engine) ask(ctx context.Context, pid *actor.PID, msg any) (any, error) {
	f := e.system.Root.RequestFuture(pid, msg, callTimeout)
	if ctx.Done() == nil {
		return f.Result()
	}
	type answer struct {
		res any
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := f.Result()
		ch <- answer{res, err}
	}()
	select {
	case a := <-ch:
		return a.res, a.err
	case <-ctx.Done():
		return nil, intentd.Canceled(ctx.Err())
	}
}

// Open starts an engine on a store. It resumes the proposals that were processing when
// the store was last written and expires the intents whose time passed meanwhile.
func Open(cfg Config) (*Engine, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:        cfg,
		store:      cfg.Store,
		obs:        observer(cfg.Observer),
		log:        cfg.Logger,
		tracer:     newTracer(cfg.TracerProvider),
		policies:   make(map[string]*policy.Policy),
		previewed:  make(map[string]int),
		ready:      make(chan struct{}),
		expiryWake: make(chan struct{}, 1),

		membersChanged: make(chan struct{}),
	}
	if cfg.Observer != nil && cfg.Observer.StoreCall != nil {
		e.store = timedStore{s: cfg.Store, call: cfg.Observer.StoreCall}
	}
	e.mandateStore, _ = cfg.Store.(intentd.MandateStore)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	// protoactor's lines go through the service's logger one level lower, its repeats
	// quieted: a peer that went away is an event a cluster recovers from.
	e.system = actor.NewActorSystem(actor.WithLoggerFactory(actorlog.Factory(cfg.Logger)))
	e.system.EventStream.Subscribe(answerDeadLetters)
	var last uint64
	err := e.atStart("read the event bounds", func() (err error) {
		_, last, err = e.store.EventBounds(e.ctx)
		return err
	})
	if err != nil {
		return nil, storeFailed("read event bounds: %w", err)
	}
	e.feed = newFeed(cfg.SubscriberBuffer)
	// A store that paces its events hears from the bus whether anyone waits for them;
	// until the first subscriber, nobody does.
	pacer, _ := cfg.Store.(intentd.EventPacer)
	if pacer != nil {
		pacer.EventsAwaited(false)
	}
	// A store whose replicas near this node answer reads serves the read of an intent
	// before its proposal.
	if r, ok := cfg.Store.(intentd.NearbyReader); ok {
		e.nearby = r.IntentNearby
		if t, ok := e.store.(timedStore); ok {
			e.nearby = t.nearby(r)
		}
	}
	// A store that can stop following the events while nobody reads them hears so too.
	follower, _ := cfg.Store.(intentd.EventFollower)
	if follower != nil {
		follower.UnwantEvents()
	}
	e.bus = e.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return newBus(last, cfg.MaxSubscribers, cfg.OwnSubscribers, e.feed, pacer, follower, e.obs.Published)
	}))
	e.store.SetEventSink(func(ev intentd.Event) {
		e.system.Root.Send(e.bus, publish{ev})
	})
	e.limiter = newLimiter(cfg.MaxProving, cfg.ProvingQueue, cfg.MaxPreviewing)
	e.dispatcher = newWarmDispatcher(300) // protoactor's default throughput
	e.registry = newRegistry(e)
	if cfg.Cluster == nil {
		e.recent = newRecentIntents(cfg.RecentIntentBytes)
	}

	if cfg.Cluster != nil {
		if err := e.startCluster(cfg.Cluster.Provider); err != nil {
			e.Close()
			return nil, err
		}
	}
	if err := e.resumeProcessing(); err != nil {
		e.Close()
		return nil, err
	}
	// The first prune is done before the engine serves: a subscriber that resumes at
	// once meets the log as retention leaves it, and is told if it missed events.
	e.pruneEvents()
	loops := []func(){e.expiryLoop, e.passivationLoop, e.retentionLoop}
	if cfg.Cluster != nil {
		loops = append(loops, e.wakeStuckLoop)
	}
	for _, loop := range loops {
		e.track()
		go func() {
			defer e.wg.Done()
			loop()
		}()
	}
	return e, nil
}

// Ready is closed once start-up recovery is done: the interrupted proposals are
// resumed and the first expiry sweep, which expires what fell due while the service was
// down, has run.
func (e *Engine) Ready() <-chan struct{} { return e.ready }

// Close stops the engine: background loops end, subscriptions end, proving in flight is
// cancelled (it is resumed from the store on the next Open), and the actors stop. It does
// not close the store.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.trackMu.Lock()
		e.stopping = true
		e.trackMu.Unlock()
		e.cancel()
		e.system.Root.RequestFuture(e.bus, closeBus{}, callTimeout).Wait()
		e.wg.Wait()
		e.rejoinMu.Lock()
		if m := e.member.Swap(nil); m != nil {
			m.leave()
		}
		e.rejoinMu.Unlock()
		e.system.Shutdown()
		e.dispatcher.close()
	})
	return nil
}

func (e *Engine) closed() bool { return e.ctx.Err() != nil }

// track counts one more goroutine for Close to wait for, unless Close has begun.
func (e *Engine) track() bool {
	e.trackMu.Lock()
	defer e.trackMu.Unlock()
	if e.stopping {
		return false
	}
	e.wg.Add(1)
	return true
}

func (e *Engine) resumeProcessing() error {
	ids, err := e.store.Processing(e.ctx)
	if err != nil {
		return intentd.Internal("list processing intents: %w", err)
	}
	for _, id := range ids {
		err := e.atStart("resume an interrupted proposal", func() error {
			_, err := e.registry.call(e.ctx, id, resume{})
			return err
		})
		if err != nil {
			return intentd.Internal("resume intent: %w", fmt.Errorf("%s: %w", id, err))
		}
	}
	if len(ids) > 0 {
		e.log.Info("resumed interrupted proposals", "count", len(ids))
	}
	return nil
}

// startWait bounds how long the start waits for a store that answers "retry later": a
// store on a NATS cluster whose servers restarted with this node may take a few seconds
// to elect its leaders, as the store's own open waits for them.
const startWait = 30 * time.Second

// atStart calls fn until it succeeds, fails for another reason than a store that says
// to retry later, or startWait passes.
func (e *Engine) atStart(what string, fn func() error) error {
	deadline := time.Now().Add(startWait)
	for logged := false; ; {
		err := fn()
		if err == nil || intentd.ErrorCode(err) != intentd.CodeStoreUnavailable || time.Now().After(deadline) {
			return err
		}
		if !logged {
			e.log.Info("the store asks to retry later; the start waits", "doing", what, "error", err)
			logged = true
		}
		select {
		case <-e.ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// PutPolicy compiles source and stores the policy; it returns the policy's id. The same
// policy stored twice keeps its id and changes nothing.
func (e *Engine) PutPolicy(ctx context.Context, source string) (string, error) {
	p, err := policy.Compile(source)
	if err != nil {
		return "", &intentd.Error{Kind: intentd.KindInvalid, Code: intentd.CodePolicyInvalid, Message: err.Error()}
	}
	id := p.ID()
	if _, err := e.store.PutPolicy(ctx, id, p.Bytecode(), []byte(source)); err != nil {
		return "", storeFailed("store policy: %w", err)
	}
	e.cachePolicy(id, p)
	return id, nil
}

// Policy returns a stored policy.
func (e *Engine) Policy(ctx context.Context, id string) (*policy.Policy, error) {
	e.policiesMu.RLock()
	p := e.policies[id]
	e.policiesMu.RUnlock()
	if p != nil {
		return p, nil
	}
	bytecode, _, err := e.store.Policy(ctx, id)
	if errors.Is(err, intentd.ErrNotFound) {
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodePolicyNotFound, "policy %s not found", id)
	}
	if err != nil {
		return nil, storeFailed("read policy: %w", err)
	}
	p, err = policy.Decode(bytecode)
	if err != nil {
		return nil, intentd.Internal("decode stored policy: %w", fmt.Errorf("%s: %w", id, err))
	}
	e.cachePolicy(id, p)
	return p, nil
}

// The decoded-policy cache is bounded by its count and by the bytecode of what it
// holds; past either it starts over, which costs a decode per policy and keeps memory
// flat whatever callers post. A decoded policy holds about 30 to 70 times its bytecode:
// 6.6 KB for a policy of a dozen constraints (224 bytes), 3.4 MB for the longest the
// source limit allows (49 KB), so that the count alone let 4,096 of the latter take
// 14 GB. The bytes' bound keeps the worst to about 150 MB and is never reached by
// policies of common size.
const (
	maxCachedPolicies    = 4096
	maxCachedPolicyBytes = 2 << 20
)

func (e *Engine) cachePolicy(id string, p *policy.Policy) {
	n := len(p.Bytecode())
	e.policiesMu.Lock()
	defer e.policiesMu.Unlock()
	if old := e.policies[id]; old != nil {
		e.policyBytes -= len(old.Bytecode())
		delete(e.policies, id)
	}
	if len(e.policies) >= maxCachedPolicies || e.policyBytes+n > maxCachedPolicyBytes {
		clear(e.policies)
		e.policyBytes = 0
	}
	e.policies[id] = p
	e.policyBytes += n
}

// DeletePolicy deletes a policy unless an open or processing intent names it.
func (e *Engine) DeletePolicy(ctx context.Context, id string) error {
	err := e.store.DeletePolicy(ctx, id)
	switch {
	case errors.Is(err, intentd.ErrNotFound):
		return intentd.Errorf(intentd.KindNotFound, intentd.CodePolicyNotFound, "policy %s not found", id)
	case errors.Is(err, intentd.ErrPolicyInUse):
		return intentd.Errorf(intentd.KindConflict, intentd.CodePolicyInUse, "policy %s is named by an open or processing intent", id)
	case err != nil:
		return storeFailed("delete policy: %w", err)
	}
	e.policiesMu.Lock()
	if p := e.policies[id]; p != nil {
		e.policyBytes -= len(p.Bytecode())
		delete(e.policies, id)
	}
	e.policiesMu.Unlock()
	return nil
}

// SubmitIntent verifies and stores a new intent: its policy must exist and take its
// attrs, and its authorship must verify over its canonical form, which is what is stored.
func (e *Engine) SubmitIntent(ctx context.Context, sub intentd.Submission) error {
	in, canon, authorship := sub.Intent, sub.Canonical, sub.Authorship
	if err := e.checkPolicyOf(ctx, in); err != nil {
		return err
	}
	if err := e.verifyAuthorship(canon, authorship); err != nil {
		return err
	}
	id, _ := intentd.CanonicalIntentID(in.ID)
	now := e.cfg.Now()
	snap := &snapshot{
		V:         snapshotVersion,
		ID:        id,
		PolicyID:  in.PolicyID,
		State:     intentd.StateOpen,
		CreatedAt: now,
		ExpiresAt: now.Add(e.cfg.IntentTTL),
	}
	if err := snap.setAuthored(canon, authorship); err != nil {
		return intentd.Internal("encode authored intent: %w", err)
	}
	// The create is written here, by whichever member took the request, unless an
	// actor of the intent is live here: the member that takes the intent's proposal,
	// or its owner for the commands that cross, reads it from the store with its first
	// command, so the create need not cross.
	// The store refuses a taken id, whoever writes.
	if done, err := e.registry.createIdle(ctx, id, func() error {
		// Written without an actor, under a span of its own as an actor's create
		// would be; on the engine's context, as an actor writes, not the caller's.
		sctx, span := e.span(withParent(e.ctx, spanOf(ctx)), spanCreate, id)
		written, err := e.storeCreate(sctx, id, snap, func() (*snapshot, error) {
			s, err := e.loadSnapshot(e.ctx, id)
			if intentd.ErrorKind(err) == intentd.KindNotFound {
				return nil, nil
			}
			return s, err
		})
		if written {
			e.recent.put(snap)
		}
		endSpan(span, err)
		return err
	}); done {
		return err
	}
	_, err := e.registry.call(ctx, id, create{snap: snap})
	return err
}

// checkPolicyOf refuses an intent whose policy is not stored or does not take its attrs.
func (e *Engine) checkPolicyOf(ctx context.Context, in intentd.Intent) error {
	p, _, err := e.checkAttrsOf(ctx, "intent", in.PolicyID, in.Attrs)
	if err != nil {
		return err
	}
	// A mandate's values have no meaning for an intent alone, and a decision that read
	// them as zero would pass a budget it never checked.
	if reads := p.Reads(); reads != 0 {
		return intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidIntent,
			"intent.policy_id: policy %s reads %s, values of a decision under a mandate: an intent of it alone is refused; make a mandate of it (docs/mandates.md)", in.PolicyID, reads)
	}
	return nil
}

// checkAttrsOf reads the policy an intent or a mandate (what) names and checks that it
// takes the attrs: their types, and the keys of a delegation. It returns the policy
// and the attrs, an empty set for none.
func (e *Engine) checkAttrsOf(ctx context.Context, what, policyID string, a *policy.Attrs) (*policy.Policy, policy.Attrs, error) {
	p, err := e.Policy(ctx, policyID)
	if err != nil {
		if intentd.ErrorKind(err) == intentd.KindNotFound {
			return nil, nil, intentd.Errorf(intentd.KindInvalid, intentd.CodePolicyNotFound, "%s.policy_id: policy %s does not exist", what, policyID)
		}
		return nil, nil, err
	}
	attrs := policy.Attrs{}
	if a != nil {
		attrs = *a
	}
	if err := p.CheckAttrs(attrs); err != nil {
		return nil, nil, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeAttrsMismatch, "%s.attrs.%v", what, err)
	}
	// A delegation names keys: one that is not a key delegates to nobody, and the
	// person who signed it would not learn so until an agent was refused.
	if param, ok := p.Agents(); ok {
		for _, k := range attrs[param].Strings() {
			if _, ok := intentd.DecodeAgentKey(k); !ok {
				return nil, nil, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeAttrsMismatch,
					"%s.attrs.fields.%s: %q is not a Base58 Ed25519 public key (the policy delegates to the agents it lists)", what, param, clipKey(k))
			}
		}
	}
	return p, attrs, nil
}

// clipKey shortens a would-be key for a message.
func clipKey(k string) string {
	if len(k) > 64 {
		return k[:64] + "…"
	}
	return k
}

// verifyAuthorship checks an intent's authorship over its canonical form, with the
// service's error for a refusal.
func (e *Engine) verifyAuthorship(canon []byte, authorship crypto.Authorship) error {
	if err := crypto.VerifyCanonical(canon, authorship, e.cfg.Verify); err != nil {
		if errors.Is(err, crypto.ErrUnsignedNotPermitted) {
			return intentd.Errorf(intentd.KindInvalid, intentd.CodeUnsignedNotPermitted, "unsigned intents are not permitted by this service")
		}
		return intentd.Errorf(intentd.KindInvalid, intentd.CodeAuthorshipInvalid, "%v", err)
	}
	return nil
}

// GetIntent returns a stored intent with its authorship, as JSON.
func (e *Engine) GetIntent(ctx context.Context, id string) (json.RawMessage, error) {
	snap, err := e.loadSnapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	return snap.Authored, nil
}

// Status returns an intent's status. An open intent past its deadline is expired first,
// so that a reader never sees open what can no longer be proposed to.
func (e *Engine) Status(ctx context.Context, id string) (intentd.Status, error) {
	snap, err := e.current(ctx, id)
	if err != nil {
		return intentd.Status{}, err
	}
	return snap.status(), nil
}

// current reads an intent's snapshot and expires it first when its deadline has passed,
// so that a reader never sees open what can no longer be proposed to. While the store
// refuses writes the intent is answered as expired all the same: the expiry is written,
// with its event, once the store takes writes again.
func (e *Engine) current(ctx context.Context, id string) (*snapshot, error) {
	snap, err := e.loadSnapshot(ctx, id)
	if err != nil || snap.State != intentd.StateOpen || e.cfg.Now().Before(snap.ExpiresAt) {
		return snap, err
	}
	reply, err := e.registry.call(ctx, snap.ID, expire{})
	if intentd.ErrorCode(err) == intentd.CodeStorageFull {
		expired := snap.clone()
		expired.State = intentd.StateExpired
		return expired, nil
	}
	if err != nil {
		return nil, err
	}
	if snap, ok := reply.(*snapshot); ok {
		return snap, nil
	}
	return e.loadSnapshot(ctx, id) // the owner in a cluster wrote it; the store has it
}

func (e *Engine) loadSnapshot(ctx context.Context, rawID string) (*snapshot, error) {
	id, ok := intentd.CanonicalIntentID(rawID)
	if !ok {
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeIntentNotFound, "intent %q not found: not a UUID", rawID)
	}
	data, err := e.store.Intent(ctx, id)
	if errors.Is(err, intentd.ErrNotFound) {
		return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeIntentNotFound, "intent %s not found", id)
	}
	if err != nil {
		return nil, storeFailed("read intent: %w", err)
	}
	return decodeSnapshot(data)
}

// Propose submits a proposal for an open intent. On success the intent is processing,
// durably, and proving follows.
func (e *Engine) Propose(ctx context.Context, rawID string, p intentd.Proposal, by *intentd.AgentSignature) error {
	id, ok := intentd.CanonicalIntentID(rawID)
	if !ok {
		return intentd.Errorf(intentd.KindInvalid, intentd.CodeInvalidID, "intent id %q is not a UUID", rawID)
	}
	if err := e.checkSolution(p); err != nil {
		return err
	}
	if by != nil {
		if err := e.spendNonce(ctx, by); err != nil {
			return err
		}
	}
	_, err := e.registry.call(ctx, id, propose{proposal: p, agent: by})
	return err
}

// checkSolution refuses a solution the engine takes from no caller, whatever the
// server in front of it allows. Its message is http.Limits.CheckSolution's, so that a
// caller is told the same whichever of the two refuses first.
func (e *Engine) checkSolution(p intentd.Proposal) error {
	if p.Solution == "" {
		return intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal, "solution: must not be empty")
	}
	if len(p.Solution) > e.cfg.MaxSolutionBytes {
		return intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidProposal, "solution: %d bytes, over the limit of %d", len(p.Solution), e.cfg.MaxSolutionBytes)
	}
	return nil
}
