package natsstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/compactmap"
	"github.com/intentd/intentd/internal/redact"
)

// Options configure Open.
type Options struct {
	// URLs are the NATS servers to connect to; the client finds the rest of a cluster
	// from them.
	URLs []string
	// Creds is a credentials file (JWT and seed); Token is a plain token; NKey is a file
	// of an NKey user's seed (mode 0600, see LoadNKey). At most one.
	Creds string
	Token string
	NKey  string
	// OnlyURLs keeps the connection on URLs, never moving to a server they advertise: an
	// embedded server's connection stays on it, the one server that admits its user.
	OnlyURLs bool
	// TLSCA is a PEM file of the certificate authorities that sign the servers'
	// certificates; empty means the system's.
	TLSCA string
	// Prefix starts every subject and names the stream (upper-cased); "intentd" when
	// empty. Two services with different prefixes share a NATS account without meeting.
	Prefix string
	// Replicas is the stream's replication factor; 0 means 3 when the client knows of
	// three servers or more, else 1.
	Replicas int
	// Logger hears of disconnections and reconnections; nil discards them.
	Logger *slog.Logger
	// Timeout bounds a call whose context has no deadline; 0 means 10 s.
	Timeout time.Duration
	// FollowWindow is how long the store's follower of the events lets records gather
	// before it takes them, once one has come, while someone waits for the events
	// (intentd.EventPacer): 0 hands each record on as it comes, and at most
	// MaxFollowWindow. A window spends less CPU on every member following a busy stream,
	// and delays the events by up to the window. The follower of the indexes, which
	// those who wait for it hurry, and the events' follower while nobody but the
	// transparency log reads them, let records gather ten times as long, up to
	// MaxFollowWindow (pull.go).
	FollowWindow time.Duration

	// repairAfter is the store's repairAfter; tests shorten it.
	repairAfter time.Duration
	// indexLinger is the store's indexLinger; tests shorten it.
	indexLinger time.Duration
	// eventsLinger is the store's eventsLinger; tests shorten it.
	eventsLinger time.Duration
}

// Store is the JetStream-backed store. Its methods are safe for concurrent use.
type Store struct {
	nc *nats.Conn
	// probing is set while a probe of the connected server runs (probe.go);
	// serverMoves counts the connections it moved to another server.
	probing     atomic.Bool
	serverMoves atomic.Uint64

	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string
	prefix  string
	log     *slog.Logger
	timeout time.Duration
	// followWindow is Options.FollowWindow.
	followWindow time.Duration
	// awaited is set while someone waits for the events (EventsAwaited), and
	// eventsHurry is the events' follower's hurry, which a subscriber's coming fills.
	awaited     atomic.Bool
	eventsHurry chan struct{}

	mu      sync.Mutex
	closed  bool
	intents map[string]*entry
	// intentsSize follows the index's size, so that the map is rebuilt once most of a
	// burst of open intents has been decided: Go never shrinks a map's table.
	intentsSize compactmap.Tracker
	policies    map[string]policyState
	floor       uint64 // events with lower ids are pruned
	pruned      uint64 // the id of the newest pruned event
	applied     uint64 // the last sequence the watcher applied
	advanced    chan struct{}
	// What the index follows (scope.go). partial: the follower follows the policies
	// alone, and the intents' entries are in fences; indexing: the follower applies the
	// intents' records to intents. needs counts the callers using the index now, and
	// lastNeed is when one last began or ended, or KeepIndex was last called.
	partial, indexing bool
	fences            fences
	needs             int
	lastNeed          time.Time
	// scopeMu holds one change of what the index follows at a time; keep is what
	// KeepIndex was last told, true until then; indexLinger is the store's indexLinger,
	// 0 meaning indexLinger (tests shorten it).
	scopeMu     sync.Mutex
	scoping     atomic.Bool // a check's scope is under way
	indexLoads  atomic.Uint64
	keep        atomic.Bool
	indexLinger time.Duration
	// Whether the events are followed (eventscope.go): eventsMu holds one change at a
	// time; eventsWanted and unwantedAt are what the engine last said (wanted until it
	// says otherwise), eventsHalted whether the follower is stopped; eventsLinger is the
	// store's eventsLinger, 0 meaning eventsLinger (tests shorten it).
	eventsMu     sync.Mutex
	eventsWanted atomic.Bool
	unwantedAt   atomic.Int64
	eventsHalted atomic.Bool
	// directOff is when IntentNearby may next try a direct get, in Unix nanoseconds:
	// a minute after one failed other than by finding no record (no replica answered,
	// as on a stream that allows none, made by an earlier release), so that each read
	// does not ask in vain first.
	directOff    atomic.Int64
	eventsLinger time.Duration
	// down is cancelled when the connection drops, and replaced when it is back: calls
	// waiting on the servers then end at once instead of at their time-out. A call
	// registers on it with context.AfterFunc, which starts no goroutine unless the
	// connection drops while the call runs.
	down       context.Context
	markedDown context.CancelFunc
	// tryTimeout bounds one try of a write; 0 means writeTry. Tests shorten it.
	tryTimeout time.Duration
	// triedAgain counts the tries that went unanswered.
	triedAgain atomic.Int64
	// fullAt is when a write was last refused for want of space (Unix nanoseconds), 0
	// once one has succeeded since.
	fullAt atomic.Int64
	// batches holds a place for each atomic batch in flight; see maxBatches.
	batches chan struct{}
	// health is what was last found of the streams the store needs (health.go).
	health health
	// tombstones are the policies whose last record is a tombstone, with when this
	// store first saw it: one an open intent still needs is put back (repairStranded).
	tombstones map[string]tombstone
	// repairAfter is how old a tombstone is before this store puts its policy back; 0
	// means repairAfter. Tests shorten it.
	repairAfter time.Duration
	// Test hooks, run by the caller of a two-step write around its first step (the
	// tombstone of a policy delete, the intent of a create): beforeFirstStep just
	// before it, afterFirstStep right after it. Nil runs nothing.
	beforeFirstStep, afterFirstStep func()
	// beforePurge is a test hook run just before PruneEvents purges events, and
	// beforeFloorWrite one run between the read of the floor record and the write of a
	// higher one. Nil runs nothing.
	beforePurge, beforeFloorWrite func()

	watch  *follower // of the indexes' subjects
	events *follower // of the events, for the sink
	// closing is cancelled when Close begins: the periodic checks end, and what they
	// have in flight is cut off; checker is their goroutine, which Close waits for.
	closing       context.Context
	cancelClosing context.CancelFunc
	checker       sync.WaitGroup
	sinkMu        sync.RWMutex
	sink          func(intentd.Event)
}

var (
	_ intentd.Store      = (*Store)(nil)
	_ intentd.EventPacer = (*Store)(nil)
)

// Open connects to NATS, creates the stream or checks the one there, loads the indexes
// and starts following the stream. It fails at once, naming the URLs, when no server
// answers.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if len(opts.URLs) == 0 {
		return nil, errors.New("nats store: no server URL")
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "intentd"
	}
	if !validPrefix(prefix) {
		return nil, fmt.Errorf("nats store: prefix %q is not a subject of plain tokens", prefix)
	}
	if opts.FollowWindow < 0 || opts.FollowWindow > MaxFollowWindow {
		return nil, fmt.Errorf("nats store: a follow window of %v: want 0 to %v", opts.FollowWindow, MaxFollowWindow)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	urls := strings.Join(opts.URLs, ",")
	s := &Store{
		name:         strings.ToUpper(strings.ReplaceAll(prefix, ".", "_")),
		prefix:       prefix,
		log:          log,
		timeout:      opts.Timeout,
		followWindow: opts.FollowWindow,
		repairAfter:  opts.repairAfter,
		indexLinger:  opts.indexLinger,
		eventsLinger: opts.eventsLinger,
		intents:      make(map[string]*entry),
		indexing:     true,
		lastNeed:     time.Now(),
		policies:     make(map[string]policyState),
		tombstones:   make(map[string]tombstone),
		advanced:     make(chan struct{}),
		batches:      make(chan struct{}, maxBatches),
	}
	s.down, s.markedDown = context.WithCancel(context.Background())
	s.awaited.Store(true)
	s.eventsWanted.Store(true)
	s.keep.Store(true)
	s.eventsHurry = make(chan struct{}, 1)
	s.closing, s.cancelClosing = context.WithCancel(context.Background())
	nopts := []nats.Option{
		nats.Name("intentd"),
		// Once connected, keep trying for ever: a NATS restart must not end the service.
		nats.MaxReconnects(-1),
		// A server that stops answering without closing the connection (its machine
		// gone, a network dropping packets) is found out by pings: by NATS's default,
		// two missed pings two minutes apart, and the service would wait that long on
		// a dead server while others are alive. Two missed two seconds apart move the
		// connection to another server within about six seconds; shorter, a server
		// slowed by load (a PONG late by a second or two) would be left for nothing,
		// with the writes and followers in flight. A follower's missed heartbeats probe
		// the server sooner (probe.go).
		nats.PingInterval(2 * time.Second),
		nats.MaxPingsOutstanding(2),
		// No buffering while reconnecting: a write fails at once with a 503 to retry,
		// instead of being sent minutes later, after its caller was told it failed.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("nats disconnected", "error", err)
			s.setDown(true)
			s.followersInterrupted(time.Now())
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("nats reconnected", "url", c.ConnectedUrlRedacted())
			s.setDown(false)
		}),
	}
	auth, err := authOptions(opts)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(urls, append(nopts, auth...)...)
	if err != nil {
		// A URL may carry a user and password, or a token, before its host.
		return nil, fmt.Errorf("nats store: connect to %s: %w", redact.URLs(urls), err)
	}
	s.nc = nc
	if s.timeout == 0 {
		s.timeout = 10 * time.Second
	}
	if err := s.start(ctx, opts.Replicas); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) start(ctx context.Context, replicas int) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(s.timeout, startTimeout))
		defer cancel()
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return err
	}
	s.js = js
	if replicas == 0 {
		replicas = 1
		if len(s.nc.Servers()) >= 3 {
			replicas = 3
		}
	}
	want := s.streamConfig(replicas)
	stream, err := s.awaitStream(ctx)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if stream, err = s.makeStream(ctx, want); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("nats store: read stream %s: %w", s.name, err)
	default:
		got := stream.CachedInfo().Config
		if !got.AllowMsgTTL {
			// Streams made by earlier versions had no per-record time to live; turning it
			// on changes no record. Direct gets are left as found: the store's reads go
			// to the leader either way (leaderget.go).
			got.AllowMsgTTL = true
			stream, err = retryTries(ctx, func(try context.Context) (jetstream.Stream, error) { return js.UpdateStream(try, got) })
			if err != nil {
				return fmt.Errorf("nats store: update stream %s to this version's layout (per-record TTLs): %w", s.name, err)
			}
			got = stream.CachedInfo().Config
		}
		if diff := layoutDiff(got, want); diff != "" {
			return fmt.Errorf("nats store: stream %s exists with another layout: %s", s.name, diff)
		}
	}
	s.stream = stream
	info, err := retryTries(ctx, func(try context.Context) (*jetstream.StreamInfo, error) { return notYet(stream.Info(try)) })
	if err != nil {
		return fmt.Errorf("nats store: read stream %s after it was found or made: %w", s.name, err)
	}
	if err := s.mark(ctx, markStream, info.Created, info.Config.Replicas); err != nil {
		return err
	}
	if err := s.checkFormat(ctx, info.State.Msgs > 0, info.Config.Replicas); err != nil {
		return err
	}
	s.health.add(watched{stream: s.name, what: "stream " + s.name, created: info.Created, replicas: info.Config.Replicas,
		diff: func(got jetstream.StreamConfig) string { return layoutDiff(got, want) }})
	if err := s.follow(ctx); err != nil {
		return err
	}
	if err := s.followEvents(ctx, info.State.LastSeq); err != nil {
		return fmt.Errorf("nats store: follow the events: %w", err)
	}
	s.checker.Go(s.checkFollowers)
	return nil
}

// checkFollowers checks the streams the store needs, then the followers, then the
// tombstones a delete cut off between its steps may have left (repairStranded), every
// checkEvery until the store closes.
func (s *Store) checkFollowers() {
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for {
		select {
		case <-s.closing.Done():
			return
		case now := <-t.C:
			s.checkHealth()
			// Each follower is checked on its own, and one whose check (or replacement,
			// which may wait seconds on a stream just elected) is still under way is
			// left to it: neither holds back the other's, nor the next ticks.
			s.scopeEvents(now)
			for _, f := range s.followers() {
				if f == s.eventFollower() && s.eventsHalted.Load() {
					continue // halted while nobody reads the events (eventscope.go)
				}
				if !f.checking.CompareAndSwap(false, true) {
					continue
				}
				ctx, cancel, err := s.begin(s.closing)
				if err != nil {
					f.checking.Store(false)
					continue // closed, or not connected: nothing to compare with
				}
				s.checker.Go(func() {
					defer f.checking.Store(false)
					defer cancel()
					f.check(ctx, now)
				})
			}
			if ctx, cancel, err := s.begin(s.closing); err == nil {
				s.repairStranded(ctx, now)
				cancel()
			}
			// A widening loads the index, which may take longer than a tick: it runs
			// beside the checks, one at a time.
			if s.scoping.CompareAndSwap(false, true) {
				s.checker.Go(func() {
					defer s.scoping.Store(false)
					ctx, cancel := s.loadBound(s.closing)
					defer cancel()
					s.scope(ctx, now)
				})
			}
		}
	}
}

// checkEvery is how often the followers are checked: a request to the stream's leader
// for each, each time.
const checkEvery = time.Second

// startTimeout bounds Open when its context has no deadline: long enough for a cluster
// started at the same moment to elect its leaders.
const startTimeout = 30 * time.Second

// Close stops following the stream and closes the connection, then waits for the
// periodic checks to end: what they had in flight fails at once on the closed
// connection. Calls after it fail with intentd.ErrStoreClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancelClosing()
	if s.watch != nil {
		s.watch.stop()
	}
	// A WantEvents that began before the close may be starting the events' follower:
	// it is let finish, and its run stopped with the rest.
	s.eventsMu.Lock()
	if s.events != nil {
		s.events.stop()
	}
	s.eventsMu.Unlock()
	s.nc.Close()
	s.checker.Wait()
	return nil
}

// begin starts a call: what ready says, else the bounded context, which ends at once
// when the connection drops.
func (s *Store) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	down, err := s.ready()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancelTimeout := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		// A request to a server that is gone would otherwise wait for ever.
		ctx, cancelTimeout = context.WithTimeout(ctx, s.timeout)
	}
	stop := context.AfterFunc(down, func() { cancelCause(errDisconnected) })
	return ctx, func() { stop(); cancelTimeout(); cancelCause(nil) }, nil
}

// ready says why a call cannot start: ErrStoreClosed after Close; the finding while a
// stream the store needs is missing or changed; at once the unavailable error while the
// connection is down, rather than a wait for the whole time-out. Else it returns the
// connection's down context of the moment.
func (s *Store) ready() (context.Context, error) {
	s.mu.Lock()
	closed, down := s.closed, s.down
	s.mu.Unlock()
	if closed {
		return nil, intentd.ErrStoreClosed
	}
	if err := s.health.finding(); err != nil {
		return nil, err
	}
	if st := s.nc.Status(); st != nats.CONNECTED {
		return nil, unavailable(fmt.Errorf("nats connection is %v", st))
	}
	if down.Err() != nil {
		// Reconnected, but the handler that says so has not run: a call started now
		// would be cut off by the drop already past, after its write was sent.
		return nil, unavailable(errors.New("nats connection is reconnecting"))
	}
	return down, nil
}

var errDisconnected = errors.New("the connection to nats dropped")

// setDown records that the connection dropped or is back.
func (s *Store) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case down:
		s.markedDown()
	case s.down.Err() != nil:
		s.down, s.markedDown = context.WithCancel(context.Background())
	}
}

// JetStream is the store's JetStream context, for what shares its connection: cluster
// mode keeps its members in a bucket beside the stream.
func (s *Store) JetStream() jetstream.JetStream { return s.js }

// Replicas is the stream's replica count, which what is kept beside it should match.
func (s *Store) Replicas() int {
	if info := s.stream.CachedInfo(); info != nil {
		return info.Config.Replicas
	}
	return 1
}

// Writable reports why the store cannot take writes now, or nil: for a readiness check,
// which should say why. A stream the store needs is missing or changed (health.go); the
// connection to the NATS servers is down; or the last write was refused for want of
// space less than fullFor ago, and none has succeeded since.
func (s *Store) Writable() error {
	if err := s.health.finding(); err != nil {
		return err
	}
	if st := s.nc.Status(); st != nats.CONNECTED {
		return unavailable(fmt.Errorf("nats connection is %v", st))
	}
	if at := s.fullAt.Load(); at != 0 && time.Since(time.Unix(0, at)) < fullFor {
		return fmt.Errorf("%w: JetStream refused the last write for want of space", intentd.ErrStorageFull)
	}
	return nil
}

// fullFor is how long a refusal for want of space makes the store report itself full.
// Space comes back without a write to say so (a purge, a bigger limit), so the report
// ends on its own rather than keep a readiness check failing with no traffic to clear it.
const fullFor = 10 * time.Second
