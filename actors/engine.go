package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/policy"
)

// Config configures an Engine. Store and Extractor are required; zero values elsewhere
// take the defaults documented on each field.
type Config struct {
	Store     Store
	Extractor evidence.Extractor
	// Prover makes receipts; nil means outcomes carry no receipt.
	Prover Prover
	// Verify sets what authorship is accepted (unsigned intents, passkey origin and RP id).
	Verify crypto.VerifyOptions
	// IntentTTL is how long an intent waits for a proposal; 24 h by default.
	IntentTTL time.Duration
	// MaxProving is the number of proposals proved at once; 64 by default.
	MaxProving int
	// ProvingQueue is the number of accepted proposals that may wait for a proving slot;
	// negative means none wait, 0 takes the default of 1024.
	ProvingQueue int
	// ProvingTimeout bounds one proposal's extraction and proof; 30 s by default. The
	// extractors keep their own, shorter, limits.
	ProvingTimeout time.Duration
	// EventRetention keeps the newest events; 1,000,000 by default.
	EventRetention uint64
	// EventRetentionAge keeps events younger than this; 7 days by default.
	EventRetentionAge time.Duration
	// MaxSubscribers bounds the event subscribers; 10,000 by default.
	MaxSubscribers int
	// SubscriberBuffer is the events a subscriber may fall behind before it is cut off;
	// 1024 by default.
	SubscriberBuffer int
	// PassivateAfter is how long an intent actor may be idle before it stops; 10 s by
	// default, so that a burst of submissions does not keep its actors for long.
	PassivateAfter time.Duration
	// ExpiryInterval is the longest the expiry scheduler sleeps; 1 s by default.
	ExpiryInterval time.Duration
	// Now is the clock; time.Now by default.
	Now func() time.Time
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
	// Observer is told of transitions and timings, for metrics; nil: nobody.
	Observer *Observer
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.IntentTTL, 24*time.Hour)
	def(&c.ProvingTimeout, 30*time.Second)
	def(&c.EventRetentionAge, 7*24*time.Hour)
	def(&c.PassivateAfter, 10*time.Second)
	def(&c.ExpiryInterval, time.Second)
	if c.MaxProving <= 0 {
		c.MaxProving = 64
	}
	switch {
	case c.ProvingQueue == 0:
		c.ProvingQueue = 1024
	case c.ProvingQueue < 0:
		c.ProvingQueue = 0
	}
	if c.EventRetention == 0 {
		c.EventRetention = 1_000_000
	}
	if c.MaxSubscribers <= 0 {
		c.MaxSubscribers = 10_000
	}
	if c.SubscriberBuffer <= 0 {
		c.SubscriberBuffer = 1024
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Engine is what the HTTP layer calls. It owns the actor system: one actor per live
// intent, the proving limiter and the event bus.
type Engine struct {
	cfg    Config
	store  Store
	log    *slog.Logger
	system *actor.ActorSystem

	registry *registry
	// dispatcher runs the intent actors' mailboxes.
	dispatcher *warmDispatcher
	limiter    *actor.PID
	bus        *actor.PID

	policiesMu sync.RWMutex
	policies   map[string]*policy.Policy

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

// Open starts an engine on a store. It resumes the proposals that were processing when
// the store was last written and expires the intents whose time passed meanwhile.
func Open(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.Extractor == nil {
		return nil, errors.New("actors: Config.Store and Config.Extractor are required")
	}
	cfg.setDefaults()
	e := &Engine{
		cfg:        cfg,
		store:      cfg.Store,
		log:        cfg.Logger,
		policies:   make(map[string]*policy.Policy),
		ready:      make(chan struct{}),
		expiryWake: make(chan struct{}, 1),
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return cfg.Logger.With("component", "actor")
	}))
	_, last, err := e.store.EventBounds()
	if err != nil {
		return nil, internal("read event bounds: %w", err)
	}
	e.bus = e.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return newBus(last, cfg.MaxSubscribers)
	}))
	e.store.SetEventSink(func(ev persistence.Event) {
		e.system.Root.Send(e.bus, publish{ev})
	})
	e.limiter = e.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return newLimiter(cfg.MaxProving, cfg.ProvingQueue)
	}))
	e.dispatcher = newWarmDispatcher(300) // protoactor's default throughput
	e.registry = newRegistry(e)

	if err := e.resumeProcessing(); err != nil {
		e.Close()
		return nil, err
	}
	for _, loop := range []func(){e.expiryLoop, e.passivationLoop, e.retentionLoop} {
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
	ids, err := e.store.Processing()
	if err != nil {
		return internal("list processing intents: %w", err)
	}
	for _, id := range ids {
		if _, err := e.registry.call(id, resume{}); err != nil {
			return internal("resume intent: %w", fmt.Errorf("%s: %w", id, err))
		}
	}
	if len(ids) > 0 {
		e.log.Info("resumed interrupted proposals", "count", len(ids))
	}
	return nil
}

// PutPolicy compiles source and stores the policy; it returns the policy's id. The same
// policy stored twice keeps its id and changes nothing.
func (e *Engine) PutPolicy(ctx context.Context, source string) (string, error) {
	p, err := policy.Compile(source)
	if err != nil {
		return "", &Error{Kind: KindInvalid, Code: CodePolicyInvalid, Message: err.Error()}
	}
	id := p.ID()
	if _, err := e.store.PutPolicy(id, p.Bytecode(), []byte(source)); err != nil {
		return "", internal("store policy: %w", err)
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
	bytecode, _, err := e.store.Policy(id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, Errorf(KindNotFound, CodePolicyNotFound, "policy %s not found", id)
	}
	if err != nil {
		return nil, internal("read policy: %w", err)
	}
	p, err = policy.Decode(bytecode)
	if err != nil {
		return nil, internal("decode stored policy: %w", fmt.Errorf("%s: %w", id, err))
	}
	e.cachePolicy(id, p)
	return p, nil
}

// maxCachedPolicies bounds the decoded-policy cache; past it the cache starts over,
// which costs a decode per policy and keeps memory flat whatever callers post.
const maxCachedPolicies = 4096

func (e *Engine) cachePolicy(id string, p *policy.Policy) {
	e.policiesMu.Lock()
	if len(e.policies) >= maxCachedPolicies {
		clear(e.policies)
	}
	e.policies[id] = p
	e.policiesMu.Unlock()
}

// DeletePolicy deletes a policy unless an open or processing intent names it.
func (e *Engine) DeletePolicy(ctx context.Context, id string) error {
	err := e.store.DeletePolicy(id)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return Errorf(KindNotFound, CodePolicyNotFound, "policy %s not found", id)
	case errors.Is(err, persistence.ErrPolicyInUse):
		return Errorf(KindConflict, CodePolicyInUse, "policy %s is named by an open or processing intent", id)
	case err != nil:
		return internal("delete policy: %w", err)
	}
	e.policiesMu.Lock()
	delete(e.policies, id)
	e.policiesMu.Unlock()
	return nil
}

// SubmitIntent verifies and stores a new intent. rawIntent is the intent's JSON as
// received: the signature covers its JCS form, which is what is stored. Each of checks
// is run on the decoded intent before anything else is spent on it, and the first error
// is returned as it is: the caller's own limits, without a second decoding.
func (e *Engine) SubmitIntent(ctx context.Context, rawIntent []byte, authorship crypto.Authorship, checks ...func(Intent) error) error {
	in, err := DecodeIntent(rawIntent)
	if err != nil {
		return err
	}
	for _, check := range checks {
		if err := check(in); err != nil {
			return err
		}
	}
	if err := checkExactInts(in); err != nil {
		return err
	}
	canon, err := crypto.Canonicalize(rawIntent)
	if err != nil {
		return Errorf(KindUnprocessable, CodeInvalidIntent, "intent: cannot be canonicalized: %v", err)
	}
	p, err := e.Policy(ctx, in.PolicyID)
	if err != nil {
		if ErrorKind(err) == KindNotFound {
			return Errorf(KindInvalid, CodePolicyNotFound, "intent.policy_id: policy %s does not exist", in.PolicyID)
		}
		return err
	}
	attrs := in.Attrs
	if attrs == nil {
		attrs = &policy.Attrs{}
	}
	if err := p.CheckAttrs(*attrs); err != nil {
		return Errorf(KindUnprocessable, CodeAttrsMismatch, "intent.attrs.%v", err)
	}
	if err := crypto.VerifyCanonical(canon, authorship, e.cfg.Verify); err != nil {
		if errors.Is(err, crypto.ErrUnsignedNotPermitted) {
			return Errorf(KindInvalid, CodeUnsignedNotPermitted, "unsigned intents are not permitted by this service")
		}
		return Errorf(KindInvalid, CodeAuthorshipInvalid, "authorship: %v", err)
	}
	authored, err := encodeAuthored(canon, authorship)
	if err != nil {
		return internal("encode authored intent: %w", err)
	}
	id, _ := CanonicalIntentID(in.ID)
	now := e.cfg.Now()
	snap := &snapshot{
		V:         snapshotVersion,
		ID:        id,
		PolicyID:  in.PolicyID,
		Authored:  authored,
		State:     StateOpen,
		CreatedAt: now,
		ExpiresAt: now.Add(e.cfg.IntentTTL),
	}
	_, err = e.registry.call(id, create{snap: snap})
	return err
}

// maxExactInt is the largest integer an IEEE double holds exactly. JCS writes numbers as
// doubles, so an attribute beyond it would be signed and stored as another value than
// the one checked; such intents are refused.
const maxExactInt = 1<<53 - 1

func checkExactInts(in Intent) error {
	if in.Attrs == nil {
		return nil
	}
	for name, v := range *in.Attrs {
		ints := v.Ints()
		if v.Type() == policy.TypeInt {
			ints = []int64{v.Int()}
		}
		for _, n := range ints {
			if n > maxExactInt || n < -maxExactInt {
				return Errorf(KindUnprocessable, CodeInvalidIntent,
					"intent.attrs.fields.%s: %d is beyond ±(2^53-1), which JCS (RFC 8785) cannot sign exactly", name, n)
			}
		}
	}
	return nil
}

// GetIntent returns a stored intent with its authorship, as JSON.
func (e *Engine) GetIntent(ctx context.Context, id string) (json.RawMessage, error) {
	snap, err := e.loadSnapshot(id)
	if err != nil {
		return nil, err
	}
	return snap.Authored, nil
}

// Status returns an intent's status. An open intent past its deadline is expired first,
// so that a reader never sees open what can no longer be proposed to.
func (e *Engine) Status(ctx context.Context, id string) (Status, error) {
	snap, err := e.loadSnapshot(id)
	if err != nil {
		return Status{}, err
	}
	if snap.State == StateOpen && !e.cfg.Now().Before(snap.ExpiresAt) {
		reply, err := e.registry.call(snap.ID, expire{})
		if err != nil {
			return Status{}, err
		}
		snap = reply.(*snapshot)
	}
	return snap.status(), nil
}

func (e *Engine) loadSnapshot(rawID string) (*snapshot, error) {
	id, ok := CanonicalIntentID(rawID)
	if !ok {
		return nil, Errorf(KindNotFound, CodeIntentNotFound, "intent %q not found: not a UUID", rawID)
	}
	data, err := e.store.Intent(id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, Errorf(KindNotFound, CodeIntentNotFound, "intent %s not found", id)
	}
	if err != nil {
		return nil, internal("read intent: %w", err)
	}
	return decodeSnapshot(data)
}

// MaxSolutionBytes is the default limit on a proposal's solution.
const MaxSolutionBytes = 4096

// Propose submits a proposal for an open intent. On success the intent is processing,
// durably, and proving follows.
func (e *Engine) Propose(ctx context.Context, rawID string, p Proposal) error {
	id, ok := CanonicalIntentID(rawID)
	if !ok {
		return Errorf(KindInvalid, CodeInvalidID, "intent id %q is not a UUID", rawID)
	}
	if p.Solution == "" {
		return Errorf(KindUnprocessable, CodeInvalidProposal, "solution: must not be empty")
	}
	if len(p.Solution) > MaxSolutionBytes {
		return Errorf(KindUnprocessable, CodeInvalidProposal, "solution: %d bytes, over the limit of %d", len(p.Solution), MaxSolutionBytes)
	}
	_, err := e.registry.call(id, propose{proposal: p})
	return err
}
