package natsstore

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/intentd/intentd"
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
}

// Headers the store writes beside a record. The snapshot's headers carry what the
// indexes need, so that a node builds them from headers alone.
const (
	hdrPhase   = "Intentd-Phase"   // open, processing or done, on an intent snapshot
	hdrPolicy  = "Intentd-Policy"  // the policy id an intent names
	hdrExpires = "Intentd-Expires" // an intent's deadline, Unix nanoseconds
	hdrOp      = "Intentd-Op"      // opDelete on a policy tombstone, opWithdrawn on an intent
	hdrFloor   = "Intentd-Floor"   // on the floor record: events below it are pruned
	hdrPruned  = "Intentd-Pruned"  // on the floor record: the newest pruned event's id
	// hdrCreated is the sequence of an intent's open snapshot, on its later ones: a
	// policy delete looks for intents created before its tombstone (see DeletePolicy).
	hdrCreated = "Intentd-Created"
	// hdrWrite names one write of a fenced record, so that a write whose answer was
	// lost can be told apart from another writer's when it is looked for.
	hdrWrite = "Intentd-Write"

	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
	hdrRollup      = "Nats-Rollup"
)

// Operations a record may carry in hdrOp.
const (
	opDelete    = "del"       // a policy's tombstone
	opWithdrawn = "withdrawn" // an intent created against a policy deleted first: as if never stored
)

const (
	phaseOpen       = "open"
	phaseProcessing = "processing"
	phaseDone       = "done"
)

// Store is the JetStream-backed store. Its methods are safe for concurrent use.
type Store struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string
	prefix  string
	log     *slog.Logger
	timeout time.Duration

	mu       sync.Mutex
	closed   bool
	intents  map[string]*entry
	policies map[string]policyState
	floor    uint64 // events with lower ids are pruned
	pruned   uint64 // the id of the newest pruned event
	applied  uint64 // the last sequence the watcher applied
	advanced chan struct{}
	// down is closed when the connection drops, and replaced when it is back: calls
	// waiting on the servers then end at once instead of at their time-out.
	down chan struct{}
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

	watch  *follower // of the indexes' subjects
	events *follower // of the events, for the sink
	quit   chan struct{}
	sinkMu sync.RWMutex
	sink   func(intentd.Event)
}

// entry is what the store knows of an intent: the sequence of its last snapshot, which
// a writer must name to write the next one, and what the indexes need.
type entry struct {
	seq     uint64
	created uint64 // the sequence of the open snapshot
	phase   string
	policy  string
	expires time.Time
}

type policyState struct {
	seq  uint64 // of the last record on the policy's subject, 0 for none
	live bool
}

var _ intentd.Store = (*Store)(nil)

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
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	urls := strings.Join(opts.URLs, ",")
	s := &Store{
		name:     strings.ToUpper(strings.ReplaceAll(prefix, ".", "_")),
		prefix:   prefix,
		log:      log,
		timeout:  opts.Timeout,
		intents:  make(map[string]*entry),
		policies: make(map[string]policyState),
		advanced: make(chan struct{}),
		quit:     make(chan struct{}),
		down:     make(chan struct{}),
		batches:  make(chan struct{}, maxBatches),
	}
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
		// with the writes and followers in flight.
		nats.PingInterval(2 * time.Second),
		nats.MaxPingsOutstanding(2),
		// No buffering while reconnecting: a write fails at once with a 503 to retry,
		// instead of being sent minutes later, after its caller was told it failed.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("nats disconnected", "error", err)
			s.setDown(true)
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
		if got.AllowDirect {
			// Streams made by earlier versions allowed direct gets; turning them off
			// changes no record.
			got.AllowDirect = false
			stream, err = retryTries(ctx, func(try context.Context) (jetstream.Stream, error) { return js.UpdateStream(try, got) })
			if err != nil {
				return fmt.Errorf("nats store: turn off direct gets on stream %s: %w", s.name, err)
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
	s.health.add(watched{stream: s.name, what: "stream " + s.name, created: info.Created, replicas: info.Config.Replicas,
		diff: func(got jetstream.StreamConfig) string { return layoutDiff(got, want) }})
	if err := s.follow(ctx); err != nil {
		return err
	}
	if err := s.followEvents(ctx, info.State.LastSeq); err != nil {
		return fmt.Errorf("nats store: follow the events: %w", err)
	}
	go s.checkFollowers()
	return nil
}

// checkFollowers checks the streams the store needs, then the followers, every
// checkEvery until the store closes.
func (s *Store) checkFollowers() {
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case now := <-t.C:
			s.checkHealth()
			for _, f := range []*follower{s.watch, s.events} {
				ctx, cancel, err := s.begin(context.Background())
				if err != nil {
					continue // closed, or not connected: nothing to compare with
				}
				f.check(ctx, now)
				cancel()
			}
		}
	}
}

// checkEvery is how often the followers are checked: a few requests to the stream's
// leader each time.
const checkEvery = 2 * time.Second

// startTimeout bounds Open when its context has no deadline: long enough for a cluster
// started at the same moment to elect its leaders.
const startTimeout = 30 * time.Second

// awaitStream looks the stream up, waiting while JetStream cannot answer yet: servers
// started together take a few seconds to elect the leader of their cluster, and a node
// started beside them should wait for it rather than fail.
func (s *Store) awaitStream(ctx context.Context) (jetstream.Stream, error) {
	start := time.Now()
	stream, err := retryTries(ctx, func(try context.Context) (jetstream.Stream, error) {
		stream, err := s.js.Stream(try, s.name)
		if err != nil && (unreachable(err) || jetStreamNotReady(err)) && time.Since(start) > 2*time.Second {
			s.log.Info("waiting for JetStream to answer", "error", err)
		}
		return stream, err
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("nats store: JetStream did not answer in %v (a cluster still electing its leader, or JetStream not enabled): %w",
			time.Since(start).Round(time.Second), err)
	}
	return stream, err
}

// jetStreamNotReady reports the answer of a server whose JetStream is not ready to
// serve its API: it has no cluster leader yet.
func jetStreamNotReady(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10008 || // JetStream system temporarily unavailable
		errors.Is(err, errStreamNotYet)
}

// errStreamNotYet is a stream not found just after it was found or made: in a cluster,
// the server asked may not have taken the stream's assignment yet, and asks again.
var errStreamNotYet = errors.New("the stream is not yet known to the server asked")

// notYet makes a stream not found errStreamNotYet, for the calls that follow the
// stream's creation.
func notYet[T any](v T, err error) (T, error) {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return v, fmt.Errorf("%w: %w", errStreamNotYet, err)
	}
	return v, err
}

// streamConfig is the one stream's layout. Rollups keep one snapshot per intent; atomic
// publish makes a terminal snapshot and its event one write.
func (s *Store) streamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:               s.name,
		Description:        "intentd: intent snapshots, policies and the event log",
		Subjects:           []string{s.prefix + ".>"},
		Storage:            jetstream.FileStorage,
		Retention:          jetstream.LimitsPolicy,
		Replicas:           replicas,
		AllowAtomicPublish: true,
		AllowRollup:        true,
		// Direct gets are answered by any replica, a follower that has not applied the
		// latest writes included: a policy just stored through one node could be missing
		// when another reads it. Gets go to the stream's leader instead, which has applied
		// every acknowledged write.
		AllowDirect:       false,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxAge:            0,
		MaxMsgsPerSubject: -1,
		Discard:           jetstream.DiscardNew,
	}
}

// layoutDiff names what differs between a stream found and the layout the store needs,
// or is empty. Replicas are not compared: an operator may change them.
func layoutDiff(got, want jetstream.StreamConfig) string {
	var d []string
	if strings.Join(got.Subjects, ",") != strings.Join(want.Subjects, ",") {
		d = append(d, fmt.Sprintf("subjects %v, want %v", got.Subjects, want.Subjects))
	}
	if got.Storage != want.Storage {
		d = append(d, fmt.Sprintf("storage %v, want %v", got.Storage, want.Storage))
	}
	if got.Retention != want.Retention {
		d = append(d, fmt.Sprintf("retention %v, want %v", got.Retention, want.Retention))
	}
	for _, f := range []struct {
		name      string
		got, want bool
	}{
		{"allow_atomic", got.AllowAtomicPublish, want.AllowAtomicPublish},
		{"allow_rollup_hdrs", got.AllowRollup, want.AllowRollup},
		{"allow_direct", got.AllowDirect, want.AllowDirect},
		{"deny_purge", got.DenyPurge, false},
		{"deny_delete", got.DenyDelete, false},
	} {
		if f.got != f.want {
			d = append(d, fmt.Sprintf("%s %v, want %v", f.name, f.got, f.want))
		}
	}
	if got.MaxMsgs > 0 || got.MaxBytes > 0 || got.MaxAge > 0 || got.MaxMsgsPerSubject > 0 {
		d = append(d, "limits that drop records (max_msgs, max_bytes, max_age or max_msgs_per_subject)")
	}
	return strings.Join(d, "; ")
}

// Close stops following the stream and closes the connection. Calls after it fail with
// intentd.ErrStoreClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.quit)
	if s.watch != nil {
		s.watch.stop()
	}
	if s.events != nil {
		s.events.stop()
	}
	s.nc.Close()
	return nil
}

// bound gives a call the store's time-out when its context has no deadline: a request
// to a server that is gone would otherwise wait for ever.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.timeout)
}

// begin starts a call: ErrStoreClosed after Close; the finding while a stream the store
// needs is missing or changed; at once the unavailable error while the connection is
// down, rather than a wait for the whole time-out; else the bounded context.
func (s *Store) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, nil, intentd.ErrStoreClosed
	}
	if err := s.health.finding(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if st := s.nc.Status(); st != nats.CONNECTED {
		return nil, nil, unavailable(fmt.Errorf("nats connection is %v", st))
	}
	select {
	case <-down:
		// Reconnected, but the handler that says so has not run: a call started now
		// would be cut off by the drop already past, after its write was sent.
		return nil, nil, unavailable(errors.New("nats connection is reconnecting"))
	default:
	}
	ctx, cancelCause := context.WithCancelCause(ctx)
	ctx, cancelTimeout := s.bound(ctx)
	go func() {
		select {
		case <-down:
			cancelCause(errDisconnected)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancelTimeout(); cancelCause(nil) }, nil
}

var errDisconnected = errors.New("the connection to nats dropped")

// setDown records that the connection dropped or is back.
func (s *Store) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.down:
		if !down {
			s.down = make(chan struct{})
		}
	default:
		if down {
			close(s.down)
		}
	}
}

// fail translates an error of the NATS client: after Close, ErrStoreClosed; when a
// stream the store needs is gone or changed, the finding; when the servers did not
// answer, an *intentd.Error of kind busy that the caller sees as a 503 to retry;
// anything else as it is.
func (s *Store) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if lost := s.lost(ctx, err); lost != nil {
		return lost
	}
	if errors.Is(context.Cause(ctx), errDisconnected) {
		return unavailable(err)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || errors.Is(err, nats.ErrConnectionClosed) {
		return intentd.ErrStoreClosed
	}
	if outOfSpace(err) {
		s.fullAt.Store(time.Now().UnixNano())
		return fmt.Errorf("%w: %w", intentd.ErrStorageFull, err)
	}
	if unreachable(err) {
		return unavailable(err)
	}
	return err
}

// outOfSpace reports a write refused for want of storage: JetStream's limit for the
// account or the server is reached, or the server's disk is full. Nothing of the write
// was stored.
func outOfSpace(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case 10002, 10023, 10047: // account resources exceeded, insufficient resources, storage resources exceeded
		return true
	case 10077: // the store failed to save the message
		return strings.Contains(apiErr.Description, "no space")
	}
	return false
}

// unreachable reports whether err says that no server answered, rather than that one
// refused: the connection is down or reconnecting, the request timed out, or the stream
// has no leader.
func unreachable(err error) bool {
	for _, e := range []error{nats.ErrConnectionReconnecting, nats.ErrReconnectBufExceeded, nats.ErrDisconnected,
		nats.ErrNoResponders, nats.ErrTimeout, jetstream.ErrNoStreamResponse, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503
}

func unavailable(err error) error {
	return &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStoreUnavailable,
		Message: "the store is unreachable; retry later", Err: err}
}

// Subjects. An id that is not a plain subject token (ids are UUIDs and policy hashes,
// so this is for tests and the unexpected) is written base64url after a '='.
func (s *Store) subject(kind, id string) string { return s.prefix + "." + kind + "." + token(id) }
func (s *Store) eventSubject() string           { return s.prefix + ".event" }
func (s *Store) floorSubject() string           { return s.prefix + ".meta.floor" }

func token(id string) string {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "=" + base64.RawURLEncoding.EncodeToString([]byte(id))
		}
	}
	if id == "" {
		return "="
	}
	return id
}

func untoken(t string) string {
	if strings.HasPrefix(t, "=") {
		b, err := base64.RawURLEncoding.DecodeString(t[1:])
		if err == nil {
			return string(b)
		}
	}
	return t
}

func validPrefix(p string) bool {
	for _, t := range strings.Split(p, ".") {
		if t == "" || token(t) != t {
			return false
		}
	}
	return true
}

func isWrongSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// isCheckBusy reports a refusal of a replicated stream that says nothing of the record:
// another write checking the same subject is still being replicated, and the leader
// lets only one such check be in flight per subject. The write is to be tried again.
func isCheckBusy(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// retryBusy waits a little before a write refused by isCheckBusy is tried again; the
// wait grows with the attempts and is jittered, so that the writers queued on one
// subject do not all come back at once.
func retryBusy(ctx context.Context, attempt int) error {
	d := time.Duration(100+rand.IntN(400)) * time.Microsecond << min(attempt, 6)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// publish writes one message and returns its sequence once the stream has it (synced on
// a server with sync_interval always; on a quorum of replicas for R3).
func (s *Store) publish(ctx context.Context, m *nats.Msg) (uint64, error) {
	return s.tries(ctx, m, 0, func(try context.Context) (uint64, error) { return s.sendOne(try, m) })
}

// writeTry bounds one try of a write. A try that goes unanswered, because the stream's
// leader died and its replicas are electing another (4 to 9 s in NATS's Raft) or because
// the acknowledgement was lost, is looked for and sent again, instead of holding the
// write, and the intent behind it, until the call's whole time-out: the first try after
// the election goes through.
const writeTry = 2 * time.Second

// tries sends a write until it is answered or ctx ends. fenced is the write's record
// that states the sequence it expects on its subject, if any; its sequence plus offset
// is the write's. A fenced write that went unanswered is looked for on its subject
// before it is sent again, and is found by its hdrWrite; sent again, the fence refuses
// a second copy, so a write lands once. A write without a fence is one whose copies are
// alike (a rollup of the same content), and is sent again as it is.
func (s *Store) tries(ctx context.Context, fenced *nats.Msg, offset uint64, send func(context.Context) (uint64, error)) (uint64, error) {
	var id string
	if fenced.Header.Get(jetstream.ExpectedLastSubjSeqHeader) != "" {
		id = nuid.Next()
		fenced.Header.Set(hdrWrite, id)
	}
	per := s.tryTimeout
	if per == 0 {
		per = writeTry
	}
	again := false // a try before went unanswered
	for {
		try, cancel := context.WithTimeout(ctx, per)
		started := time.Now()
		seq, err := send(try)
		cancel()
		if err == nil || ctx.Err() != nil {
			return seq, err
		}
		unanswered := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse)
		if !unanswered && !(again && isWrongSeq(err)) {
			return seq, err
		}
		if lost := s.lost(ctx, err); lost != nil {
			return 0, lost // no stream takes the write, and none will
		}
		again = true
		s.triedAgain.Add(1)
		if id != "" {
			look, cancel := context.WithTimeout(ctx, per)
			m, lerr := s.last(look, fenced.Subject)
			cancel()
			switch {
			case lerr == nil && m.Header.Get(hdrWrite) == id:
				return m.Sequence + offset, nil
			case lerr == nil && isWrongSeq(err):
				return 0, err // another writer's record is there
			}
		}
		// An answer that came at once (no responders while the stream has no leader)
		// is not tried again at once.
		if d := 100*time.Millisecond - time.Since(started); d > 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(d):
			}
		}
	}
}

// sendOne sends one message once, trying again only while the leader refuses its check
// as busy.
func (s *Store) sendOne(ctx context.Context, m *nats.Msg) (uint64, error) {
	for attempt := 0; ; attempt++ {
		ack, err := s.js.PublishMsg(ctx, m)
		if isCheckBusy(err) {
			if err := retryBusy(ctx, attempt); err != nil {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		s.fullAt.Store(0)
		return ack.Sequence, nil
	}
}

// publishBatch writes messages as one atomic batch: all are stored, with consecutive
// sequences, or none. It returns the last one's sequence. The messages before the commit
// go without a reply: one connection keeps their order, and a lost one makes the commit
// fail as an incomplete batch.
func (s *Store) publishBatch(ctx context.Context, msgs ...*nats.Msg) (uint64, error) {
	select {
	case s.batches <- struct{}{}:
		defer func() { <-s.batches }()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.tries(ctx, msgs[0], uint64(len(msgs)-1), func(try context.Context) (uint64, error) {
		for attempt := 0; ; attempt++ {
			seq, err := s.publishBatchOnce(try, msgs)
			if !isCheckBusy(err) && !isBatchRefused(err) {
				return seq, err
			}
			if err := retryBusy(try, attempt); err != nil {
				return 0, err
			}
		}
	})
}

// maxBatches bounds this store's atomic batches in flight. A server takes 50 per stream
// and drops the first message of one more, which then fails as incomplete; other nodes'
// batches count too, so a refused batch is also tried again.
const maxBatches = 32

// isBatchRefused reports an atomic batch that the server refused whole, nothing of it
// stored: too many were in flight, or its first message was dropped for that reason.
func isBatchRefused(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == 10176 || apiErr.ErrorCode == 10210)
}

func (s *Store) publishBatchOnce(ctx context.Context, msgs []*nats.Msg) (uint64, error) {
	id := nuid.Next()
	for i, m := range msgs {
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		m.Header.Set(hdrBatchID, id)
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			if err := s.nc.PublishMsg(m); err != nil {
				return 0, err
			}
			continue
		}
		m.Header.Set(hdrBatchCommit, "1")
	}
	return s.sendOne(ctx, msgs[len(msgs)-1])
}

func (s *Store) last(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	m, err := s.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, intentd.ErrNotFound
	}
	return m, err
}

// snapshotMsg is an intent's snapshot record; created is 0 for the open snapshot, whose
// own sequence it is.
func snapshotMsg(subject, phase, policy string, created uint64, expires time.Time, snapshot []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = snapshot
	m.Header.Set(hdrPhase, phase)
	if created != 0 {
		m.Header.Set(hdrCreated, strconv.FormatUint(created, 10))
	}
	m.Header.Set(hdrPolicy, policy)
	m.Header.Set(hdrExpires, strconv.FormatInt(expires.UnixNano(), 10))
	return m
}

// PutPolicy stores a compiled policy. The bytecode goes first, on a subject of its own
// that deletes never touch, so that a stored policy always has its bytecode; the record
// is then written against the sequence read, so that of two racing writers one stores it
// and the other finds it stored.
func (s *Store) PutPolicy(ctx context.Context, id string, bytecode, source []byte) (bool, error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return false, err
	}
	defer cancel()
	for range 5 {
		ps, err := s.policyState(ctx, id, false)
		if err != nil {
			return false, s.fail(ctx, err)
		}
		if ps.live {
			return false, nil
		}
		bm := nats.NewMsg(s.subject("bytecode", id))
		bm.Data = bytecode
		bm.Header.Set(hdrRollup, "sub")
		if _, err := s.publish(ctx, bm); err != nil {
			return false, s.fail(ctx, err)
		}
		seq, err := s.publish(ctx, policyMsg(s.subject("policy", id), ps.seq, bytecode, source))
		if isWrongSeq(err) {
			if _, err := s.policyState(ctx, id, true); err != nil {
				return false, s.fail(ctx, err)
			}
			continue
		}
		if err != nil {
			return false, s.fail(ctx, err)
		}
		s.setPolicy(id, policyState{seq: seq, live: true})
		return true, nil
	}
	return false, fmt.Errorf("put policy %s: too many concurrent writers", id)
}

func policyMsg(subject string, after uint64, bytecode, source []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	rec := binary.AppendUvarint(nil, uint64(len(bytecode)))
	rec = append(rec, bytecode...)
	m.Data = append(rec, source...)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(after, 10))
	m.Header.Set(hdrRollup, "sub")
	return m
}

// policyState reports a policy's last record, from memory unless asked to read it.
func (s *Store) policyState(ctx context.Context, id string, fresh bool) (policyState, error) {
	if !fresh {
		s.mu.Lock()
		ps, ok := s.policies[id]
		s.mu.Unlock()
		if ok {
			return ps, nil
		}
	}
	m, err := s.last(ctx, s.subject("policy", id))
	if errors.Is(err, intentd.ErrNotFound) {
		return policyState{}, nil
	}
	if err != nil {
		return policyState{}, err
	}
	ps := policyState{seq: m.Sequence, live: m.Header.Get(hdrOp) != opDelete}
	s.setPolicy(id, ps)
	return ps, nil
}

// setPolicy records a policy's state unless a newer one is known.
func (s *Store) setPolicy(id string, ps policyState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.policies[id]; ok && cur.seq >= ps.seq {
		return
	}
	s.policies[id] = ps
}

// Policy returns a stored policy's bytecode and source.
func (s *Store) Policy(ctx context.Context, id string) (bytecode, source []byte, err error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	m, err := s.last(ctx, s.subject("policy", id))
	if err != nil {
		return nil, nil, s.fail(ctx, err)
	}
	if m.Header.Get(hdrOp) == opDelete {
		return nil, nil, intentd.ErrNotFound
	}
	return decodePolicy(id, m.Data)
}

func decodePolicy(id string, rec []byte) (bytecode, source []byte, err error) {
	n, w := binary.Uvarint(rec)
	if w <= 0 || n > uint64(len(rec)-w) {
		return nil, nil, fmt.Errorf("policy record %s is corrupt", id)
	}
	return rec[w : w+int(n)], rec[w+int(n):], nil
}

// PolicyBytecode returns the bytecode of a policy that is or once was stored; deletes
// leave it, for the proofs of the intents that named the policy.
func (s *Store) PolicyBytecode(ctx context.Context, id string) ([]byte, error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	m, err := s.last(ctx, s.subject("bytecode", id))
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return m.Data, nil
}

// DeletePolicy removes a policy unless an open or processing intent names it.
//
// Creates and deletes meet in the stream's one order. The delete writes a tombstone on
// the policy's subject, waits until this store has followed the stream up to it, so that
// every intent written before it is in the index, and then looks for references. If it
// finds one, it writes the policy back and reports ErrPolicyInUse. A create that comes
// after the tombstone in the stream finds it when it checks (see CreateIntent) and
// withdraws its intent, so no intent is ever kept against a deleted policy.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	for range 5 {
		m, err := s.last(ctx, s.subject("policy", id))
		if err != nil {
			return s.fail(ctx, err)
		}
		if m.Header.Get(hdrOp) == opDelete {
			return intentd.ErrNotFound
		}
		if s.inUse(id, math.MaxUint64) {
			// The index may lag the stream: a write of this store is applied to it just
			// after it is acknowledged, and a reader may have seen the write in between.
			// Caught up with the stream, the index is asked again.
			if err := s.catchUp(ctx); err != nil {
				return s.fail(ctx, err)
			}
			if s.inUse(id, math.MaxUint64) {
				// Known in use: refused without a write, so that a refused delete
				// leaves the stream as it was.
				return intentd.ErrPolicyInUse
			}
		}
		if testHookDelete != nil {
			testHookDelete("before the tombstone")
		}
		tomb := nats.NewMsg(s.subject("policy", id))
		tomb.Header.Set(hdrOp, opDelete)
		tomb.Header.Set(hdrRollup, "sub")
		tomb.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(m.Sequence, 10))
		seq, err := s.publish(ctx, tomb)
		if isWrongSeq(err) {
			continue
		}
		if err != nil {
			return s.fail(ctx, err)
		}
		s.setPolicy(id, policyState{seq: seq})
		if testHookDelete != nil {
			testHookDelete("after the tombstone")
		}
		// The tombstone is written: whatever becomes of the caller, the policy is put
		// back if an intent created before it names it.
		return s.secondStep(ctx, func(ctx context.Context) error { return s.restoreIfInUse(ctx, id, seq, m.Data) })
	}
	return fmt.Errorf("delete policy %s: too many concurrent writers", id)
}

// inUse reports whether an open or processing intent created before the tombstone at
// seq names the policy. One created after it is the create's to withdraw.
func (s *Store) inUse(policy string, tombstone uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.intents {
		if e.policy == policy && e.phase != phaseDone && e.created < tombstone {
			return true
		}
	}
	return false
}

// CreateIntent stores a new open intent. Its snapshot is written expecting no record on
// its subject (or only the record of a withdrawn create), so of racing creates of one
// id, on any node, one wins.
//
// The policy is checked twice: live before the write, and after it, once this store has
// followed the stream past the intent, that no tombstone came before the intent in the
// stream. A delete whose tombstone comes after the intent sees the intent and refuses;
// a create whose intent comes after the tombstone withdraws it here and reports
// ErrPolicyNotFound. Nothing in this serialises the creates naming one policy: each
// writes only its own subject.
func (s *Store) CreateIntent(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) error {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	ps, err := s.policyState(ctx, policyID, false)
	if err == nil && !ps.live {
		// The policy may have been stored by another node since this one looked.
		ps, err = s.policyState(ctx, policyID, true)
	}
	if err != nil {
		return s.fail(ctx, err)
	}
	if !ps.live {
		return intentd.ErrPolicyNotFound
	}
	if testHookBeforeCreate != nil {
		testHookBeforeCreate()
	}
	var after uint64 // the sequence of a withdrawn create's record, if any
	for range 5 {
		snap := snapshotMsg(s.subject("intent", id), phaseOpen, policyID, 0, expiresAt, snapshot)
		snap.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(after, 10))
		if after != 0 {
			snap.Header.Set(hdrRollup, "sub") // the withdrawn record goes
		}
		seq, err := s.publish(ctx, snap)
		if isWrongSeq(err) {
			m, err := s.last(ctx, s.subject("intent", id))
			switch {
			case err == nil && m.Header.Get(hdrOp) != opWithdrawn:
				return intentd.ErrExists
			case err == nil:
				after = m.Sequence
			case !errors.Is(err, intentd.ErrNotFound):
				return s.fail(ctx, err)
			}
			continue
		}
		if err != nil {
			return s.fail(ctx, err)
		}
		s.apply(id, &entry{seq: seq, created: seq, phase: phaseOpen, policy: policyID, expires: expiresAt})
		if testHookAfterCreate != nil {
			testHookAfterCreate()
		}
		// The intent is written: whatever becomes of the caller, it is withdrawn if a
		// delete of its policy came first.
		return s.secondStep(ctx, func(ctx context.Context) error { return s.checkPolicyAfter(ctx, id, policyID, seq) })
	}
	return fmt.Errorf("create intent %s: its subject keeps changing", id)
}

// testHookBeforeCreate, when set by a test, runs between a create's first look at its
// policy and its write: the window a racing delete falls into.
var testHookBeforeCreate func()

// checkPolicyAfter is a create's second look at its policy, once the intent is written
// at seq: when the policy's last record is a tombstone older than the intent, the delete
// did not see the intent, so the intent is withdrawn. A tombstone newer than the intent
// belongs to a delete that sees it and puts the policy back.
func (s *Store) checkPolicyAfter(ctx context.Context, id, policyID string, seq uint64) error {
	if err := s.waitApplied(ctx, seq); err != nil {
		return s.fail(ctx, err)
	}
	s.mu.Lock()
	ps := s.policies[policyID]
	s.mu.Unlock()
	if ps.live || ps.seq > seq {
		return nil
	}
	w := nats.NewMsg(s.subject("intent", id))
	w.Header.Set(hdrOp, opWithdrawn)
	w.Header.Set(hdrRollup, "sub")
	w.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(seq, 10))
	wseq, err := s.publish(ctx, w)
	if isWrongSeq(err) {
		// A try of this step before, whose answer was lost, may have withdrawn it.
		if m, lerr := s.last(ctx, s.subject("intent", id)); lerr == nil && m.Header.Get(hdrOp) == opWithdrawn {
			wseq, err = m.Sequence, nil
		}
	}
	if err != nil {
		return s.fail(ctx, fmt.Errorf("withdraw intent %s, created against a deleted policy: %w", id, err))
	}
	s.mu.Lock()
	if cur, ok := s.intents[id]; ok && cur.seq < wseq {
		delete(s.intents, id)
	}
	s.mu.Unlock()
	return intentd.ErrPolicyNotFound
}

// Intent returns an intent's snapshot.
func (s *Store) Intent(ctx context.Context, id string) ([]byte, error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	m, err := s.last(ctx, s.subject("intent", id))
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	if m.Header.Get(hdrOp) == opWithdrawn {
		return nil, intentd.ErrNotFound
	}
	return m.Data, nil
}

// current returns what is known of an intent, reading its last snapshot's headers when
// this store has not seen it.
func (s *Store) current(ctx context.Context, id string) (entry, error) {
	s.mu.Lock()
	e, ok := s.intents[id]
	s.mu.Unlock()
	if ok {
		return *e, nil
	}
	m, err := s.last(ctx, s.subject("intent", id))
	if errors.Is(err, intentd.ErrNotFound) {
		return entry{}, nil
	}
	if err != nil {
		return entry{}, err
	}
	return entryOf(m.Sequence, m.Header), nil
}

func entryOf(seq uint64, h nats.Header) entry {
	e := entry{seq: seq, created: seq, phase: h.Get(hdrPhase), policy: h.Get(hdrPolicy)}
	if ns, err := strconv.ParseInt(h.Get(hdrExpires), 10, 64); err == nil {
		e.expires = time.Unix(0, ns)
	}
	if c, err := strconv.ParseUint(h.Get(hdrCreated), 10, 64); err == nil {
		e.created = c
	}
	return e
}

// errStale is the error of a write refused because the intent was written since this
// store last saw it, or has moved past the state the write starts from: another writer
// holds the intent.
var errStale = intentd.ErrStale

// The interface carries no revision from the engine, so the fence is the intent's last
// known record: a transition is written only from the phase it starts from (processing
// from open; an expiry from open; an outcome from processing), against that record's
// sequence. Of two writers, on any nodes, one terminal write succeeds, and nothing
// follows it.

// BeginProcessing writes an intent's processing snapshot against the sequence of its
// last one, so that a stale writer is refused. The policy the intent names is the one
// its record holds already, so policyID is not read.
func (s *Store) BeginProcessing(ctx context.Context, id, _ string, snapshot []byte, expiresAt time.Time) error {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	cur, err := s.current(ctx, id)
	if err != nil {
		return s.fail(ctx, err)
	}
	if cur.phase != phaseOpen {
		return fmt.Errorf("begin processing %s, which is %q: %w", id, cur.phase, errStale)
	}
	m := snapshotMsg(s.subject("intent", id), phaseProcessing, cur.policy, cur.created, expiresAt, snapshot)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(cur.seq, 10))
	m.Header.Set(hdrRollup, "sub")
	seq, err := s.publish(ctx, m)
	if isWrongSeq(err) {
		s.refresh(ctx, id)
		return fmt.Errorf("begin processing %s: %w", id, errStale)
	}
	if err != nil {
		return s.fail(ctx, err)
	}
	s.apply(id, &entry{seq: seq, created: cur.created, phase: phaseProcessing, policy: cur.policy, expires: expiresAt})
	return nil
}

// Finish writes the terminal snapshot and its event in one atomic batch, the snapshot
// against the sequence of the intent's last one. The event's id is its stream sequence:
// ids increase in the one order every node reads, and skip the numbers of the other
// records. The sink hears of the event from the stream, like every other node's.
func (s *Store) Finish(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time, ev intentd.Event) (uint64, error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	// An expiry replaces an open record only, an outcome a processing one only.
	// BeginProcessing moves an intent from open to processing once, and nothing writes
	// a processing record again, so an outcome over processing is an outcome of the one
	// proposal that record holds; over open there is no proposal for it to end.
	from := phaseProcessing
	if ev.Type == intentd.StateExpired {
		from = phaseOpen
	}
	cur, err := s.current(ctx, id)
	if err == nil && cur.phase != from {
		// The index may lag the stream (another node began processing): the intent's
		// last record decides.
		cur, err = s.reread(ctx, id)
	}
	if err != nil {
		return 0, s.fail(ctx, err)
	}
	if cur.phase != from {
		// An expiry decided from a cached open snapshot while another member accepted
		// the proposal: the proposal stands. An outcome of a proposal the intent does
		// not hold: another writer finished it, or it never began processing. The
		// fence below catches the same when the intent changes meanwhile.
		return 0, fmt.Errorf("finish %s (%s), which is %q: %w", id, ev.Type, cur.phase, errStale)
	}
	m := snapshotMsg(s.subject("intent", id), phaseDone, policyID, cur.created, expiresAt, snapshot)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(cur.seq, 10))
	m.Header.Set(hdrRollup, "sub")
	em := nats.NewMsg(s.eventSubject())
	em.Data = ev.Data
	seq, err := s.publishBatch(ctx, m, em)
	if isWrongSeq(err) {
		s.refresh(ctx, id)
		return 0, fmt.Errorf("finish %s: %w", id, errStale)
	}
	if err != nil {
		return 0, s.fail(ctx, err)
	}
	s.apply(id, &entry{seq: seq - 1, created: cur.created, phase: phaseDone, policy: policyID, expires: expiresAt})
	return seq, nil
}

// refresh reads an intent's last record after a write was refused as stale, so that the
// caller's next try does not meet the same stale entry while the watcher catches up.
func (s *Store) refresh(ctx context.Context, id string) {
	s.reread(ctx, id)
}

// reread reads an intent's last record into the index and returns what it says: an
// entry of no phase when the intent is not stored or was withdrawn.
func (s *Store) reread(ctx context.Context, id string) (entry, error) {
	m, err := s.last(ctx, s.subject("intent", id))
	if errors.Is(err, intentd.ErrNotFound) {
		return entry{}, nil
	}
	if err != nil {
		return entry{}, err
	}
	e := entryOf(m.Sequence, m.Header)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.intents[id]; ok && cur.seq >= e.seq {
		return e, nil
	}
	if e.phase != phaseOpen && e.phase != phaseProcessing {
		delete(s.intents, id)
		return e, nil
	}
	s.intents[id] = &e
	return e, nil
}

// apply records this store's own write in the index, unless the watcher is already past
// it (it then applied the write itself, or a newer one).
func (s *Store) apply(id string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.seq <= s.applied {
		return
	}
	if cur, ok := s.intents[id]; ok && cur.seq >= e.seq {
		return
	}
	s.intents[id] = e
}

// Processing lists the intents that are processing.
func (s *Store) Processing(ctx context.Context) ([]string, error) {
	if _, cancel, err := s.begin(ctx); err != nil {
		return nil, err
	} else {
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, e := range s.intents {
		if e.phase == phaseProcessing {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// DueExpiries lists up to limit open intents whose deadline is at or before now,
// earliest first. The index is in memory, built from the snapshots' headers; a scan of
// it is a pass over the open intents.
func (s *Store) DueExpiries(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if _, cancel, err := s.begin(ctx); err != nil {
		return nil, err
	} else {
		cancel()
	}
	type due struct {
		id string
		at time.Time
	}
	var list []due
	s.mu.Lock()
	for id, e := range s.intents {
		if e.phase == phaseOpen && !e.expires.After(now) {
			list = append(list, due{id, e.expires})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b due) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	if len(list) > limit {
		list = list[:limit]
	}
	ids := make([]string, len(list))
	for i, d := range list {
		ids[i] = d.id
	}
	return ids, nil
}

// NextExpiry reports the earliest deadline of an open intent.
func (s *Store) NextExpiry(ctx context.Context) (time.Time, bool, error) {
	if _, cancel, err := s.begin(ctx); err != nil {
		return time.Time{}, false, err
	} else {
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var at time.Time
	found := false
	for _, e := range s.intents {
		if e.phase == phaseOpen && (!found || e.expires.Before(at)) {
			at, found = e.expires, true
		}
	}
	return at, found, nil
}

// SetEventSink names the function that hears of every event once it is durable, in id
// order, from the goroutine that follows the event subject.
func (s *Store) SetEventSink(fn func(intentd.Event)) {
	s.sinkMu.Lock()
	s.sink = fn
	s.sinkMu.Unlock()
}

// Events calls fn for up to limit events with ids greater than after, in id order.
func (s *Store) Events(ctx context.Context, after uint64, limit int, fn func(intentd.Event) error) error {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	s.mu.Lock()
	floor := s.floor
	s.mu.Unlock()
	next := max(after+1, floor)
	n := 0
	if limit >= pageByConsumer {
		// The consumer may be served by a replica that is behind the leader (one
		// just restarted and catching up): it says nothing is pending while the
		// stream has more. What it handed over counts; the leader tells the rest.
		got, last, err := s.eventsByConsumer(ctx, next, limit, fn)
		if err != nil {
			return err
		}
		n = got
		if got > 0 {
			next = last + 1
		}
	}
	for ; n < limit; n++ {
		m, err := s.stream.GetMsg(ctx, next, jetstream.WithGetMsgSubject(s.eventSubject()))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return s.fail(ctx, err)
		}
		ev, err := intentd.DecodeEvent(m.Sequence, m.Time, m.Data)
		if err != nil {
			return err
		}
		if err := fn(ev); err != nil {
			return err
		}
		next = m.Sequence + 1
	}
	return nil
}

// pageByConsumer is the page size from which Events reads through a consumer, which
// streams the page after one round trip to create it, rather than one direct get per
// event. On loopback a page of 256 took 2.9 ms through the consumer and 18 ms by direct
// gets (BenchmarkEventsPage); a page of a few is quicker by direct gets.
const pageByConsumer = 32

// eventsByConsumer hands fn up to limit events from next on, read through a consumer,
// and says how many it handed over and the last one's id.
func (s *Store) eventsByConsumer(ctx context.Context, next uint64, limit int, fn func(intentd.Event) error) (got int, last uint64, err error) {
	cons, err := s.js.OrderedConsumer(ctx, s.name, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.eventSubject()},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    next,
	})
	if err != nil {
		return 0, 0, s.fail(ctx, err)
	}
	// A fetch that does not wait answers with what the server has ready at once, which
	// for a consumer just made can be part of what there is, or nothing. Fetches go on
	// until the page is full or the consumer says nothing more is pending.
	for got < limit {
		batch, err := cons.FetchNoWait(limit - got)
		if err != nil {
			return got, last, s.fail(ctx, err)
		}
		n, pending := 0, uint64(1)
		for m := range batch.Messages() {
			meta, err := m.Metadata()
			if err != nil {
				return got, last, err
			}
			ev, err := intentd.DecodeEvent(meta.Sequence.Stream, meta.Timestamp, m.Data())
			if err != nil {
				return got, last, err
			}
			if err := fn(ev); err != nil {
				return got, last, err
			}
			n, got, pending, last = n+1, got+1, meta.NumPending, meta.Sequence.Stream
		}
		if err := batch.Error(); err != nil {
			return got, last, s.fail(ctx, err)
		}
		if n > 0 && pending == 0 {
			return got, last, nil
		}
		if n == 0 {
			info, err := cons.Info(ctx)
			if err != nil {
				return got, last, s.fail(ctx, err)
			}
			if info.NumPending == 0 {
				return got, last, nil
			}
			select { // the server has more but did not hand it over yet
			case <-ctx.Done():
				return got, last, s.fail(ctx, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return got, last, nil
}

// EventBounds reports the oldest retained event id (0 for none) and the last assigned.
// The newest event is never deleted, only hidden below the floor, so that the last id
// survives a prune of everything.
func (s *Store) EventBounds(ctx context.Context) (first, last uint64, err error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer cancel()
	m, err := s.last(ctx, s.eventSubject())
	if errors.Is(err, intentd.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, s.fail(ctx, err)
	}
	last = m.Sequence
	s.mu.Lock()
	floor := s.floor
	s.mu.Unlock()
	fm, err := s.stream.GetMsg(ctx, max(floor, 1), jetstream.WithGetMsgSubject(s.eventSubject()))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, last, nil
	}
	if err != nil {
		return 0, 0, s.fail(ctx, err)
	}
	return fm.Sequence, last, nil
}

// PruneEvents keeps the newest keep events and none older than olderThan. The events
// are purged from the stream, all but the newest, which is hidden by raising the floor
// when it is pruned too. Its cost does not grow with the events kept: the count comes
// from the stream's state, the purge by count is the server's, and the walk by age reads
// only the events it prunes.
func (s *Store) PruneEvents(ctx context.Context, keep uint64, olderThan time.Time) (int, error) {
	first, last, err := s.EventBounds(ctx)
	if err != nil || first == 0 {
		return 0, err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	before, err := s.eventCount(ctx)
	if err != nil {
		return 0, s.fail(ctx, err)
	}
	cut := first      // events below cut are pruned
	var pruned uint64 // the newest event below cut
	switch {
	case keep == 0:
		cut, pruned = last+1, last
	case before > keep:
		// The server keeps the newest keep and one more, the newest of those to go,
		// whose id is what a reader must have seen to have missed nothing.
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.eventSubject()), jetstream.WithPurgeKeep(keep+1)); err != nil {
			return 0, s.fail(ctx, err)
		}
		if pruned, err = s.firstEventFrom(ctx, first); err != nil {
			return 0, s.fail(ctx, err)
		}
		cut = pruned + 1
	}
	// Events are written in time order, so the old ones are a prefix of the log.
	for cut <= last {
		m, err := s.stream.GetMsg(ctx, cut, jetstream.WithGetMsgSubject(s.eventSubject()))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			cut = last + 1
			break
		}
		if err != nil {
			return 0, s.fail(ctx, err)
		}
		if !m.Time.Before(olderThan) {
			cut = m.Sequence
			break
		}
		cut, pruned = m.Sequence+1, m.Sequence
	}
	if cut > first {
		fm := nats.NewMsg(s.floorSubject())
		fm.Header.Set(hdrFloor, strconv.FormatUint(cut, 10))
		fm.Header.Set(hdrPruned, strconv.FormatUint(pruned, 10))
		fm.Header.Set(hdrRollup, "sub")
		if _, err := s.publish(ctx, fm); err != nil {
			return 0, s.fail(ctx, err)
		}
		s.setFloor(cut, pruned)
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.eventSubject()), jetstream.WithPurgeSequence(min(cut, last))); err != nil {
			return 0, s.fail(ctx, err)
		}
	}
	after, err := s.eventCount(ctx)
	if err != nil {
		return 0, s.fail(ctx, err)
	}
	return int(before - min(after, before)), nil
}

// eventCount is the number of retained events: those stored, less the one kept below
// the floor only for its id, if any.
func (s *Store) eventCount(ctx context.Context) (uint64, error) {
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(s.eventSubject()))
	if err != nil {
		return 0, err
	}
	n := info.State.Subjects[s.eventSubject()]
	if n == 0 {
		return 0, nil
	}
	s.mu.Lock()
	floor := s.floor
	s.mu.Unlock()
	if floor > 0 {
		// At most one event is below the floor, and it is the oldest stored.
		m, err := s.stream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(s.eventSubject()))
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, err
		}
		if err == nil && m.Sequence < floor {
			n--
		}
	}
	return n, nil
}

// firstEventFrom is the id of the first event at or after seq, or one past the last.
func (s *Store) firstEventFrom(ctx context.Context, seq uint64) (uint64, error) {
	m, err := s.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(s.eventSubject()))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return seq, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

func (s *Store) setFloor(f, pruned uint64) {
	s.mu.Lock()
	if f > s.floor {
		s.floor, s.pruned = f, pruned
	}
	s.mu.Unlock()
}

// PrunedThrough reports the id of the newest event pruned, 0 when none was. Ids skip
// the sequences of other records, so the oldest retained id does not tell whether a
// reader who saw event N missed any: one did only when N is older than this.
func (s *Store) PrunedThrough(ctx context.Context) (uint64, error) {
	if _, cancel, err := s.begin(ctx); err != nil {
		return 0, err
	} else {
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pruned, nil
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
