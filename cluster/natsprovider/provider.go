// Package natsprovider is a protoactor-go cluster provider whose membership lives in a
// JetStream key-value bucket, on the NATS the nodes already share for their store: no
// seed list to keep in sync, no other service to run.
//
// Each member writes one key, its actor system's id, holding its cluster.Member
// (protobuf), and renews it every TTL/3; every member watches the whole bucket. The
// members whose keys are there, and were renewed lately, are the cluster, and the
// provider hands protoactor a new topology only when that set changes.
//
// Liveness is judged by the members, not by a TTL the server enforces: a member that
// has not renewed its key for a whole TTL, while the observer's watch was bringing the
// observer's own renewals, is dropped from the observer's view, and its key is deleted.
// The condition matters both ways. When a NATS server dies and the bucket elects a new
// leader, which can take longer than a TTL, no member can renew, and a TTL kept by the
// server would expire every key at once and stop the whole cluster; and an observer
// whose watch went silent with its server sees nobody renew, itself included, and must
// not take the others for dead.
//
// A member must also notice that it was dropped: protoactor blocks a member that left
// for good, and one that was paused past its TTL and resumed would otherwise keep
// serving grains that the others have already placed elsewhere. The provider fences
// the member when its own key is gone (a renewal refused, or the watch shows it
// deleted), and reports it (Fenced, Config.OnFenced), so that the node stops serving
// grains and rejoins under a new id.
//
// The bucket itself may be lost (kept in memory, it goes with a restart of a lone NATS
// server): every member lost its key with it and none was dropped, so each makes the
// bucket again, or finds it made again by another, and registers anew under its id.
package natsprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
)

// DefaultTTL is how long a member may go without renewing its key, while the others'
// renewals reach them, before they drop it. It bounds how long a dead member stays in
// the others' view, and so how long its grains are unreachable; it must also outlast a
// stall of a live member (a pause for garbage collection, a reconnection to another
// NATS server), or a healthy member is fenced. Three seconds keeps a member's loss
// within the few seconds the service promises while tolerating a stall of two.
const DefaultTTL = 3 * time.Second

// ErrFenced is the cause Fenced reports: this member was dropped from the cluster, or
// cannot tell whether it was, and must not serve grains any more.
var ErrFenced = errors.New("natsprovider: this member was dropped from the cluster")

// Config configures a Provider.
type Config struct {
	// JetStream is the connection to the NATS the members share. Required.
	JetStream jetstream.JetStream
	// Bucket is the key-value bucket of the members. Empty means "members-" and the
	// cluster's name, so that clusters with different names on one NATS stay apart.
	Bucket string
	// TTL is how long a member may go without renewing before the others drop it:
	// whole seconds, at least one. Zero means DefaultTTL.
	TTL time.Duration
	// Replicas is the bucket's replica count when the provider creates it; zero means 1.
	// Use 3 on a three-server JetStream cluster, so that losing a server loses no member.
	Replicas int
	// Logger receives the provider's messages; nil means slog.Default().
	Logger *slog.Logger
	// OnFenced, when set, is called once, on its own goroutine, when the member is
	// fenced, with the reason (which wraps ErrFenced).
	OnFenced func(reason error)
}

// Provider is a cluster.ClusterProvider on a JetStream key-value bucket. One Provider
// serves one cluster member (or client) once.
type Provider struct {
	cfg Config
	log *slog.Logger
	ttl time.Duration

	kv         jetstream.KeyValue
	started    bool
	update     func(cluster.Members) // hands protoactor a topology: MemberList.UpdateClusterTopology
	id         string
	member     []byte // this member's value in the bucket; nil for a client
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	fenced     chan struct{}
	fenceOnce  sync.Once
	fenceCause error

	// pause is held for reading while a loop does its work; a test takes it for writing
	// to freeze the member as a stopped process would be frozen.
	pause sync.RWMutex
	// acking, when a test sets it before the member starts, runs between a renewal's
	// acknowledgement and its record, as a heartbeat the scheduler left waiting would.
	acking func()

	mu      sync.Mutex
	members cluster.Members // the last topology handed to protoactor
	leaving bool            // Shutdown deletes the key; its deletion is no fence
	made    time.Time       // when the bucket this member registered in was made (server's clock)

	// What the bucket has taken of this member's renewals, by the heartbeat's clock:
	// the revision and send time of the last one acknowledged, and since when the
	// acknowledgements have come without a gap. The watch compares them with what it
	// brings (a renewal taken but not brought means the watch stopped following), and
	// silence of the others counts only while the run lasts.
	acks ackRun
}

// ackRun is the record of acknowledged renewals.
type ackRun struct {
	mu    sync.Mutex
	rev   uint64
	at    time.Time
	from  time.Time
	epoch int // how many times the bucket was made again: revisions before are void
}

// add records a renewal acknowledged at rev that was sent at sent; gap is the longest
// wait between two renewals of a run.
func (a *ackRun) add(rev uint64, sent time.Time, gap time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rev <= a.rev {
		return
	}
	if sent.Sub(a.at) > gap {
		a.from = sent
	}
	a.rev, a.at = rev, sent
}

// restart records the first renewal acknowledged by a members bucket made again: its
// revisions start over, and so does the run.
func (a *ackRun) restart(rev uint64, sent time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rev, a.at, a.from = rev, sent, sent
	a.epoch++
}

// last returns the last acknowledged revision, when it was sent, and since when the
// acknowledgements have come without a gap.
func (a *ackRun) last() (rev uint64, at, from time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rev, a.at, a.from
}

// made is how many times the bucket was made again.
func (a *ackRun) made() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.epoch
}

var _ cluster.ClusterProvider = (*Provider)(nil)

var bucketName = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// New makes a provider; it connects to nothing until the cluster starts it.
func New(cfg Config) (*Provider, error) {
	if cfg.JetStream == nil {
		return nil, errors.New("natsprovider: no JetStream connection")
	}
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < time.Second || ttl%time.Second != 0 {
		return nil, fmt.Errorf("natsprovider: TTL %v: the server counts key TTLs in whole seconds, at least one", ttl)
	}
	if cfg.Bucket != "" && !bucketName.MatchString(cfg.Bucket) {
		return nil, fmt.Errorf("natsprovider: bucket name %q: only letters, digits, - and _", cfg.Bucket)
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Provider{cfg: cfg, ttl: ttl, log: log.With("component", "cluster-membership"), fenced: make(chan struct{})}, nil
}

// StartMember registers this member in the bucket, starts renewing its key and
// watching the others, and returns once protoactor has the first topology.
func (p *Provider) StartMember(c *cluster.Cluster) error {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return fmt.Errorf("natsprovider: member address: %w", err)
	}
	m := &cluster.Member{Host: host, Port: int32(port), Id: c.ActorSystem.ID, Kinds: c.GetClusterKinds()}
	return p.startMember(c.Config.Name, m, c.MemberList.UpdateClusterTopology)
}

// startMember is StartMember for a member and a topology receiver of the caller's, so
// that the provider's own logic can be tested apart from protoactor.
func (p *Provider) startMember(clusterName string, m *cluster.Member, update func(cluster.Members)) error {
	value, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("natsprovider: encode member: %w", err)
	}
	if err := p.open(clusterName, m.Id, update); err != nil {
		return err
	}
	p.member = value
	ctx, cancel := context.WithTimeout(p.ctx, startTimeout)
	defer cancel()
	var sent time.Time
	rev, err := retry(ctx, func(try context.Context) (uint64, error) {
		sent = time.Now()
		return p.register(try)
	})
	if err != nil {
		p.cancel()
		return fmt.Errorf("natsprovider: register member %s: %w", p.id, err)
	}
	p.acks.add(rev, sent, renewalGap(p.ttl))
	if made, err := p.bucketMade(ctx); err == nil {
		p.setMade(made)
	}
	p.log.Info("cluster member registered", "member", p.id, "address", m.Address(), "bucket", p.cfg.Bucket, "ttl", p.ttl)
	if err := p.watch(); err != nil {
		p.cancel()
		_ = p.kv.Delete(context.Background(), p.id)
		return err
	}
	p.wg.Add(1)
	go p.heartbeat(rev, sent)
	return nil
}

// register creates this member's key, expecting none.
func (p *Provider) register(ctx context.Context) (uint64, error) {
	rev, err := p.kv.Create(ctx, p.id, p.member)
	if errors.Is(err, jetstream.ErrKeyExists) {
		// A try before was written and its answer lost: the id is this process's.
		if e, gerr := p.kv.Get(ctx, p.id); gerr == nil && string(e.Value()) == string(p.member) {
			return e.Revision(), nil
		}
	}
	return rev, err
}

// StartClient watches the members without joining them: a client places no grains.
func (p *Provider) StartClient(c *cluster.Cluster) error {
	if err := p.open(c.Config.Name, c.ActorSystem.ID, c.MemberList.UpdateClusterTopology); err != nil {
		return err
	}
	return p.watch()
}

// open binds the provider to its cluster and creates the bucket if it is missing.
func (p *Provider) open(clusterName, id string, update func(cluster.Members)) error {
	if p.started {
		return errors.New("natsprovider: a provider serves one member, once")
	}
	p.started, p.id, p.update = true, id, update
	if p.cfg.Bucket == "" {
		p.cfg.Bucket = "members-" + regexp.MustCompile(`[^a-zA-Z0-9_-]`).ReplaceAllString(clusterName, "_")
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	ctx, cancel := context.WithTimeout(p.ctx, startTimeout)
	defer cancel()
	// Membership is rebuilt by the renewals within a TTL, so memory storage loses
	// nothing a restart of NATS would not lose anyway. Keys carry no TTL of the
	// server's (see the package comment); the limit marker stays for buckets made
	// when they did.
	kv, err := retry(ctx, p.bucket)
	if err != nil {
		p.cancel()
		return fmt.Errorf("natsprovider: members bucket %s: %w", p.cfg.Bucket, err)
	}
	p.kv = kv
	return nil
}

// bucketMade says when the members bucket there now was made, by the server's clock: a
// bucket made again after it was lost has another time than the one a member joined.
func (p *Provider) bucketMade(ctx context.Context) (time.Time, error) {
	st, err := p.kv.Status(ctx)
	if err != nil {
		return time.Time{}, err
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		return time.Time{}, errors.New("natsprovider: the bucket's status has no stream information")
	}
	return bs.StreamInfo().Created, nil
}

func (p *Provider) setMade(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.made = t
}

func (p *Provider) madeAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.made
}

// bucket creates the members bucket, or updates the one there.
func (p *Provider) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	return p.cfg.JetStream.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         p.cfg.Bucket,
		Description:    "intentd cluster members: one key per member, with a TTL its renewals keep alive",
		History:        1,
		LimitMarkerTTL: p.ttl,
		Storage:        jetstream.MemoryStorage,
		Replicas:       p.cfg.Replicas,
	})
}

// renewalGap is the longest wait between two renewals of a member that misses none:
// one is due every TTL/3, and each may take up to TTL/3 to be taken.
func renewalGap(ttl time.Duration) time.Duration { return 2 * ttl / 3 }

// startTimeout bounds a member's start: long enough for NATS servers started at the
// same moment, or one just restarted beside the node, to elect their leaders.
const startTimeout = 30 * time.Second

// retry calls fn with a time-out of a few seconds until it succeeds or ctx ends: while
// the servers elect a leader, a request goes unanswered, and one try that waited for
// ctx would leave no time for the next, answered one. The error is the last try's.
func retry[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	for {
		try, cancel := context.WithTimeout(ctx, 3*time.Second)
		v, err := fn(try)
		cancel()
		if err == nil || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// heartbeat renews the member's key every TTL/3. Each renewal states the revision it
// last wrote, so that a key the others deleted is refused rather than written again: a
// member the others dropped must not come back under the id they blocked.
func (p *Provider) heartbeat(rev uint64, lastOK time.Time) {
	defer p.wg.Done()
	subject := "$KV." + p.cfg.Bucket + "." + p.id
	tick := time.NewTicker(p.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
		p.pause.RLock()
		rev, lastOK = p.renew(subject, rev, lastOK)
		p.pause.RUnlock()
	}
}

// renew sends one renewal and returns the revision and send time of the last one that
// was acknowledged.
func (p *Provider) renew(subject string, rev uint64, lastOK time.Time) (uint64, time.Time) {
	if p.ctx.Err() != nil {
		return rev, lastOK
	}
	// A member that cannot renew does not fence itself: it cannot reach the NATS that
	// holds the store either, so its grains can write nothing, and when NATS answers
	// again the renewal finds the key deleted (below) if the others dropped it. Fencing
	// on silence alone would stop every member at once whenever the bucket's leader
	// moves. A member paused past its TTL fences the same way, on its first renewal
	// after it resumes.
	left := p.ttl - time.Since(lastOK)
	ctx, cancel := context.WithTimeout(p.ctx, p.ttl/3)
	defer cancel()
	sent := time.Now()
	ack, err := p.cfg.JetStream.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: p.member},
		jetstream.WithExpectLastSequencePerSubject(rev))
	if err == nil {
		if p.acking != nil {
			p.acking()
		}
		p.acks.add(ack.Sequence, sent, renewalGap(p.ttl))
		return ack.Sequence, sent
	}
	if p.ctx.Err() != nil {
		return rev, lastOK
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		// Unanswered: NATS is away, or electing, or the bucket itself is gone.
		look, cancel := context.WithTimeout(p.ctx, p.ttl/3)
		_, gerr := p.cfg.JetStream.KeyValue(look, p.cfg.Bucket)
		cancel()
		if errors.Is(gerr, jetstream.ErrBucketNotFound) {
			return p.registerAgain(rev, lastOK)
		}
		p.log.Warn("cluster membership renewal failed; retrying", "member", p.id, "error", err, "lease_left", left.Round(time.Millisecond))
		return rev, lastOK
	}
	// The key is not at the revision last written: either a renewal was written but
	// its acknowledgement lost (the key is ours, at a later revision), or another
	// member dropped this one and deleted the key.
	e, err := p.kv.Get(ctx, p.id)
	switch {
	case err == nil && e.Operation() == jetstream.KeyValuePut && string(e.Value()) == string(p.member):
		return e.Revision(), lastOK
	case err == nil:
		p.fence(fmt.Errorf("%w: its membership key %s holds another member's record", ErrFenced, p.id))
	case errors.Is(err, jetstream.ErrKeyDeleted):
		p.fence(fmt.Errorf("%w: its membership key %s was deleted", ErrFenced, p.id))
	case errors.Is(err, jetstream.ErrKeyNotFound):
		// Gone, or never in this bucket: one made again after the one this member
		// joined was lost, by another member that found it gone first.
		made, merr := p.bucketMade(ctx)
		switch {
		case merr != nil:
			p.log.Warn("cluster membership key missing and the bucket cannot be read; retrying", "member", p.id, "error", merr)
		case !made.Equal(p.madeAt()):
			return p.registerAgain(rev, lastOK)
		default:
			p.fence(fmt.Errorf("%w: its membership key %s is missing from the bucket it joined", ErrFenced, p.id))
		}
	default:
		p.log.Warn("cluster membership renewal refused and the key could not be read; retrying", "member", p.id, "error", err)
	}
	return rev, lastOK
}

// registerAgain makes the members bucket again if it is missing and registers this
// member in it anew. The bucket was lost, not just this member's key: a NATS server
// that kept it in memory was restarted, or someone deleted it. Every member lost its
// key with it, so none of them was dropped by the others, and each comes back under
// the id it had; a member the others did drop finds its key missing in the bucket it
// joined, and fences itself. The watch, silent since the bucket went, starts anew on
// the new one.
func (p *Provider) registerAgain(rev uint64, lastOK time.Time) (uint64, time.Time) {
	ctx, cancel := context.WithTimeout(p.ctx, p.ttl)
	defer cancel()
	if _, err := p.bucket(ctx); err != nil {
		p.log.Warn("cluster members bucket is gone and cannot be made again; retrying", "member", p.id, "bucket", p.cfg.Bucket, "error", err)
		return rev, lastOK
	}
	made, err := p.bucketMade(ctx)
	if err != nil {
		p.log.Warn("cluster members bucket made again, but cannot be read; retrying", "member", p.id, "error", err)
		return rev, lastOK
	}
	sent := time.Now()
	nrev, err := p.register(ctx)
	if err != nil {
		p.log.Warn("cluster members bucket made again, but this member's key could not be written; retrying", "member", p.id, "error", err)
		return rev, lastOK
	}
	p.log.Warn("cluster members bucket was lost: this member registered anew", "member", p.id, "bucket", p.cfg.Bucket)
	p.setMade(made)
	p.acks.restart(nrev, sent)
	return nrev, sent
}

// watch starts watching the bucket and waits for its first snapshot, so that protoactor
// has a topology when StartMember returns.
func (p *Provider) watch() error {
	ctx, cancel := context.WithTimeout(p.ctx, startTimeout)
	defer cancel()
	w, err := retry(ctx, func(context.Context) (jetstream.KeyWatcher, error) { return p.kv.WatchAll(p.ctx) })
	if err != nil {
		p.cancel()
		return fmt.Errorf("natsprovider: watch members: %w", err)
	}
	ready := make(chan struct{})
	p.wg.Add(1)
	go p.follow(w, ready)
	select {
	case <-ready:
		return nil
	case <-time.After(10 * time.Second):
		p.cancel()
		return errors.New("natsprovider: the members bucket sent no snapshot in 10s")
	}
}

// follow keeps the set of members as the bucket has it and hands protoactor a topology
// when the set changes, not on every renewal. Every TTL/6 it drops the members that
// have been silent for a TTL while the bucket took this member's own renewals (see
// dropSilent), and deletes their keys, stating the revision it saw, so that a renewal
// that came meanwhile wins.
//
// A watch can stop following while the connection goes on: its server went away and
// its consumer did not come back. The heartbeat says so first: a renewal the bucket
// acknowledged and the watch did not bring within TTL/3 means the watch is behind, and
// a new watch takes its place; its snapshot replaces the set. A watch that brings
// nothing for a whole TTL is replaced too, whatever the heartbeat says.
//
// A member's silence is counted from its last renewal as the bucket stamped it, so a
// new watch knows at once how long a member has been silent and does not count a TTL
// afresh: the stamps are the server's clock, turned into this one's by the offset seen
// on this member's own renewals as they arrived.
func (p *Provider) follow(w jetstream.KeyWatcher, ready chan struct{}) {
	defer p.wg.Done()
	defer func() { _ = w.Stop() }()
	live := map[string]*cluster.Member{}
	var next map[string]*cluster.Member // the set a new watch is rebuilding, or nil
	seen := map[string]time.Time{}      // when each key was last written, by this clock
	revs := map[string]uint64{}         // and its revision then
	// offset turns the server's stamps into this clock: arrival less stamp of this
	// member's last renewal that arrived while the watch was following.
	var offset time.Duration
	var haveOffset bool
	initial := true
	updates := w.Updates()
	last := time.Now()
	check := time.NewTicker(p.ttl)
	defer check.Stop()
	// Judging is a look at a few times: often, so that a dead member leaves close to
	// its TTL.
	judge := time.NewTicker(p.ttl / 6)
	defer judge.Stop()

	epoch := p.acks.made()
	rewatch := func(why string) {
		if e := p.acks.made(); e != epoch {
			// The bucket was made again: its revisions start over.
			epoch, revs = e, map[string]uint64{}
		}
		nw, err := p.kv.WatchAll(p.ctx)
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			p.log.Warn("cluster membership watch is behind and cannot be renewed; retrying", "member", p.id, "why", why, "error", err)
			return
		}
		p.log.Info("cluster membership watch is behind; watching anew", "member", p.id, "why", why)
		_ = w.Stop()
		w, updates, next, last = nw, nw.Updates(), map[string]*cluster.Member{}, time.Now()
	}

	// handle applies one entry of the watch; p.pause is held.
	handle := func(e jetstream.KeyValueEntry) {
		last = time.Now()
		if e != nil {
			key := e.Key()
			switch {
			case e.Operation() != jetstream.KeyValuePut:
				delete(seen, key)
				delete(revs, key)
			case e.Revision() == revs[key]:
				// A new watch's snapshot brings again what the old one brought.
			case next != nil && haveOffset:
				// Written while the old watch was behind: when, the stamp says.
				at := e.Created().Add(offset)
				if at.After(last) {
					at = last
				}
				seen[key], revs[key] = at, e.Revision()
			default:
				seen[key], revs[key] = last, e.Revision()
				if key == p.id && next == nil && !initial {
					offset, haveOffset = last.Sub(e.Created()), true
				}
			}
		}
		if next != nil {
			p.apply(next, e)
			if e == nil { // the new watch's snapshot is complete
				changed := !sameMembers(live, next)
				live, next = next, nil
				if changed && p.ctx.Err() == nil {
					p.push(live)
				}
			}
			return
		}
		changed := p.apply(live, e)
		if e == nil && initial {
			// A nil entry ends the snapshot of the keys that were there.
			initial, changed = false, true
			close(ready)
		}
		if changed && !initial && p.ctx.Err() == nil {
			p.push(live)
		}
	}
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-check.C:
			if initial || time.Since(last) <= p.ttl {
				continue
			}
			rewatch("silent for a TTL")
		case <-judge.C:
			p.pause.RLock()
			// What the watch already brought counts before anyone is judged silent.
		drain:
			for updates != nil {
				select {
				case e, ok := <-updates:
					if !ok {
						updates = nil
						break drain
					}
					handle(e)
				default:
					break drain
				}
			}
			if !initial && next == nil && p.member != nil {
				rev, at, from := p.acks.last()
				switch {
				case rev > revs[p.id] && time.Since(at) > p.ttl/3:
					rewatch("a renewal the bucket took did not come")
				case rev < revs[p.id]:
					// The watch brought a renewal whose acknowledgement the heartbeat
					// has not recorded yet. The run of acknowledgements it starts is
					// not known: judged by the run before, the others would seem
					// silent for as long as the bucket took no renewals. The next
					// look judges.
				default:
					p.dropSilent(live, seen, revs, from)
				}
			}
			p.pause.RUnlock()
		case e, ok := <-updates:
			if !ok {
				updates = nil // until the check above renews the watch
				continue
			}
			p.pause.RLock()
			handle(e)
			p.pause.RUnlock()
		}
	}
}

// dropSilent drops from live the members silent for a TTL, hands protoactor the new
// set, and deletes their keys. Silence counts only from since, since when the bucket
// has taken this member's own renewals without a gap; and nobody is judged while the
// watch does not bring them. In the other cases (the bucket is not taking renewals,
// the watch is not following, this member was paused) it does not know what the
// others did: while a bucket elects a new leader nobody can renew.
func (p *Provider) dropSilent(live map[string]*cluster.Member, seen map[string]time.Time, revs map[string]uint64, since time.Time) {
	now := time.Now()
	if now.Sub(seen[p.id]) > renewalGap(p.ttl) || since.IsZero() {
		return
	}
	var gone []string
	for key := range live {
		if key == p.id {
			continue
		}
		at := seen[key]
		if since.After(at) {
			at = since
		}
		if now.Sub(at) > p.ttl {
			gone = append(gone, key)
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, key := range gone {
		p.log.Info("cluster member silent for a TTL: dropped", "member", p.id, "dropped", key, "last_renewal", seen[key])
		delete(live, key)
		rev := revs[key]
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			ctx, cancel := context.WithTimeout(p.ctx, p.ttl)
			defer cancel()
			// Refused when the member renewed meanwhile, or another member deleted the
			// key first: either way there is nothing to do.
			_ = p.kv.Delete(ctx, key, jetstream.LastRevision(rev))
		}()
	}
	if p.ctx.Err() == nil {
		p.push(live)
	}
}

func sameMembers(a, b map[string]*cluster.Member) bool {
	if len(a) != len(b) {
		return false
	}
	for k, m := range a {
		if o, ok := b[k]; !ok || !proto.Equal(m, o) {
			return false
		}
	}
	return true
}

// apply records one entry of the watch, and reports whether the set of members changed.
func (p *Provider) apply(live map[string]*cluster.Member, e jetstream.KeyValueEntry) bool {
	if e == nil {
		return false
	}
	key := e.Key()
	if e.Operation() != jetstream.KeyValuePut {
		if key == p.id && p.member != nil && !p.isLeaving() {
			p.fence(fmt.Errorf("%w: the watch shows its membership key %s deleted", ErrFenced, p.id))
		}
		_, was := live[key]
		delete(live, key)
		return was
	}
	var m cluster.Member
	if err := proto.Unmarshal(e.Value(), &m); err != nil || m.Id != key {
		p.log.Warn("ignoring a member key that does not hold its member", "key", key, "error", err)
		return false
	}
	if old, was := live[key]; was && proto.Equal(old, &m) {
		return false
	}
	live[key] = &m
	return true
}

// push hands protoactor the members, sorted by id so that every member sees one order.
func (p *Provider) push(live map[string]*cluster.Member) {
	members := make(cluster.Members, 0, len(live))
	for _, m := range live {
		members = append(members, m)
	}
	slices.SortFunc(members, func(a, b *cluster.Member) int {
		switch {
		case a.Id < b.Id:
			return -1
		case a.Id > b.Id:
			return 1
		}
		return 0
	})
	p.mu.Lock()
	p.members = members
	p.mu.Unlock()
	p.log.Debug("cluster topology changed", "member", p.id, "members", len(members))
	p.update(members)
}

// Members is the set of members last handed to protoactor, sorted by id: what this
// member sees of the cluster.
func (p *Provider) Members() []*cluster.Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*cluster.Member, len(p.members))
	for i, m := range p.members {
		out[i] = proto.Clone(m).(*cluster.Member)
	}
	return out
}

// ID is the member's id (its actor system's), or "" before the cluster starts.
func (p *Provider) ID() string { return p.id }

// Fenced is closed when the member has been fenced: from then on it must not serve
// grains; the node shuts its cluster member down and starts a new one, which joins
// under a new id. FenceCause says why.
func (p *Provider) Fenced() <-chan struct{} { return p.fenced }

// FenceCause is why the member was fenced, or nil while it is not.
func (p *Provider) FenceCause() error {
	select {
	case <-p.fenced:
		return p.fenceCause
	default:
		return nil
	}
}

// fence stops renewing and watching, once, and reports it.
func (p *Provider) fence(reason error) {
	p.fenceOnce.Do(func() {
		p.fenceCause = reason
		p.log.Error("cluster member fenced: it must stop serving grains and rejoin", "member", p.id, "reason", reason)
		p.cancel()
		close(p.fenced)
		if p.cfg.OnFenced != nil {
			go p.cfg.OnFenced(reason)
		}
	})
}

func (p *Provider) isLeaving() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaving
}

// Shutdown stops renewing and watching and deletes the member's key, so that the
// others see it leave at once rather than after its TTL. protoactor calls it on a
// graceful shutdown; a node that is killed leaves by its TTL instead.
func (p *Provider) Shutdown(graceful bool) error {
	if !p.started {
		return nil
	}
	p.mu.Lock()
	p.leaving = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	if p.member == nil || p.FenceCause() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.ttl)
	defer cancel()
	if err := p.kv.Delete(ctx, p.id); err != nil {
		return fmt.Errorf("natsprovider: deregister member %s: %w", p.id, err)
	}
	p.log.Info("cluster member deregistered", "member", p.id, "graceful", graceful)
	return nil
}
