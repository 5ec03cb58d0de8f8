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
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
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
	// fenced, with the reason (which wraps ErrFenced). Shutdown waits for it to
	// return, so it must not wait for Shutdown itself.
	OnFenced func(reason error)
	// Protocols are the versions of the cluster protocol this member says it speaks;
	// empty means Protocols, what this build speaks. Tests set others.
	Protocols []uint32
	// OnRefused, when set, is called once for each peer refused because it speaks no
	// version of the cluster protocol this member speaks (protocol.go), with the
	// versions it speaks: the node counts them in a metric.
	OnRefused func(member string, speaks []uint32)
}

// Provider is a cluster.ClusterProvider on a JetStream key-value bucket. One Provider
// serves one cluster member (or client) once.
type Provider struct {
	cfg Config
	log *slog.Logger
	ttl time.Duration

	kv      jetstream.KeyValue
	started bool
	update  func(cluster.Members) // hands protoactor a topology: MemberList.UpdateClusterTopology
	id      string
	member  []byte // this member's value in the bucket; nil for a client
	ctx     context.Context
	cancel  context.CancelFunc
	// wg counts every goroutine the provider starts (the heartbeat, the watch loop,
	// the deletions of silent members' keys, the call of OnFenced): Shutdown waits
	// for them, so that none outlives the provider.
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

	mu       sync.Mutex
	members  cluster.Members // the last topology handed to protoactor
	outcasts map[string]bool // the peers refused for their protocol versions, logged once
	leaving  bool            // Shutdown deletes the key; its deletion is no fence
	made     time.Time       // when the bucket this member registered in was made (server's clock)

	// acks is what the bucket has taken of this member's renewals: the heartbeat
	// records it, the watch's judge compares it with what the watch brings.
	acks ackRun
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
	value = withProtocols(value, p.speaks())
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

// push hands protoactor the members, sorted by id (sortedMembers), and keeps them for
// Members.
func (p *Provider) push(members cluster.Members) {
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
