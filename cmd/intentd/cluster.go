package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/cluster/clustertls"
	"github.com/intentd/intentd/cluster/natsprovider"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterBucket names a key-value bucket of the cluster: after the store's prefix as well
// as the cluster's name, so that services on one NATS with different prefixes never
// form one cluster of members that do not share a stream.
func clusterBucket(c Config, what string) string {
	return strings.ReplaceAll(c.Nats.Prefix, ".", "_") + "_" + what + "_" + c.Cluster.Name
}

// clusterName is what a cluster's name may be: it names a key-value bucket.
var clusterName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// clusterAddr splits --cluster-bind: other members dial it, so it needs a host and a
// port.
func clusterAddr(s string) (string, int, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("%q: want HOST:PORT with a port from 1 to 65535", s)
	}
	return host, port, nil
}

// clusterFlags registers the flags of cluster mode.
func (c *Config) clusterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Cluster.Bind, "cluster-bind", "", "HOST:PORT the other members of a cluster reach this node's actors at (it listens there); set, it turns cluster mode on (needs a NATS store)")
	fs.StringVar(&c.Cluster.Advertise, "cluster-advertise", "", "HOST:PORT the other members reach this node at when it is not --cluster-bind's: a name its certificate carries (a pod's DNS name) while --cluster-bind is an address that changes or 0.0.0.0; empty: --cluster-bind")
	fs.StringVar(&c.Cluster.Name, "cluster-name", "intentd", "name of the cluster, so that clusters on one NATS stay apart")
	fs.StringVar(&c.Cluster.TLS.Cert, "cluster-tls-cert", "", "PEM file of this member's certificate for the members' mutual TLS, signed by --cluster-tls-ca and naming the host of --cluster-bind (intentctl certs makes one); read again on SIGHUP and when it changes")
	fs.StringVar(&c.Cluster.TLS.Key, "cluster-tls-key", "", "PEM file of the key of --cluster-tls-cert (mode 0600)")
	fs.StringVar(&c.Cluster.TLS.CA, "cluster-tls-ca", "", "PEM file of the CA that signs every member's certificate; a peer whose certificate does not chain to it is refused at the handshake")
	fs.IntVar(&c.Cluster.MaxGrains, "cluster-max-grains", actors.DefaultMaxGrains, "most intents a member holds for commands at once (their actors, which stop when the intent is decided or 10 s after their last command); a command for one more is answered 503 capacity_exceeded; 0: no bound")
	fs.BoolVar(&c.Cluster.ExitOnFence, "cluster-exit-on-fence", false, "stop (exit status 1) when the others dropped this member from the cluster, for a supervisor to start it again; without it the member rejoins under a new id by itself, once NATS answers")
	fs.BoolVar(&c.Cluster.Insecure, "cluster-insecure", false, "let the members speak plaintext on a --cluster-bind beyond loopback: anyone who reaches that port acts as a member (docs/cluster.md, \"Security\"); warned at every start")
}

// validateCluster checks the cluster's flags: a member beyond loopback speaks mutual
// TLS, or says with --cluster-insecure that it means not to.
func (c *Config) validateCluster() error {
	tls := c.Cluster.TLS
	given := tls.Cert != "" || tls.Key != "" || tls.CA != ""
	if c.Cluster.Bind == "" {
		if given || c.Cluster.Insecure || c.Cluster.Advertise != "" {
			return errors.New("--cluster-advertise, --cluster-tls-cert, --cluster-tls-key, --cluster-tls-ca and --cluster-insecure are for a cluster member: give --cluster-bind too")
		}
		return nil
	}
	host, _, err := clusterAddr(c.Cluster.Bind)
	if err != nil {
		return fmt.Errorf("--cluster-bind: %w", err)
	}
	if err := c.validateAdvertise(host); err != nil {
		return err
	}
	reached := "--cluster-bind " + c.Cluster.Bind
	if c.Cluster.Advertise != "" {
		// The members dial the advertised host: a loopback bind advertised beyond it
		// is reached beyond loopback.
		advertised, _, _ := clusterAddr(c.Cluster.Advertise)
		if !loopbackHost(advertised) && loopbackHost(host) {
			host, reached = advertised, "--cluster-advertise "+c.Cluster.Advertise
		}
	}
	switch {
	case c.Cluster.MaxGrains < 0:
		return fmt.Errorf("--cluster-max-grains %d: want 0 (no bound) or more", c.Cluster.MaxGrains)
	case given && (tls.Cert == "" || tls.Key == "" || tls.CA == ""):
		return errors.New("cluster TLS needs all three of --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca")
	case given && c.Cluster.Insecure:
		return errors.New("--cluster-insecure and --cluster-tls-*: give one of them")
	case !given && !c.Cluster.Insecure && !loopbackHost(host):
		return fmt.Errorf("%s is beyond loopback, where anyone who reaches the port would act as a member: give --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca (intentctl certs makes them), or --cluster-insecure to run without", reached)
	}
	return nil
}

// validateAdvertise checks --cluster-advertise against the host --cluster-bind
// listens on: the other members must be able to dial what this node advertises, which
// an address of every interface (0.0.0.0, ::) is not.
func (c *Config) validateAdvertise(bindHost string) error {
	ip := net.ParseIP(bindHost)
	if c.Cluster.Advertise == "" {
		if ip != nil && ip.IsUnspecified() {
			return fmt.Errorf("--cluster-bind %s listens on every interface, an address no member can dial: give --cluster-advertise HOST:PORT, where the others reach this node", c.Cluster.Bind)
		}
		return nil
	}
	host, _, err := clusterAddr(c.Cluster.Advertise)
	if err != nil {
		return fmt.Errorf("--cluster-advertise: %w", err)
	}
	if a := net.ParseIP(host); a != nil && a.IsUnspecified() {
		return fmt.Errorf("--cluster-advertise %s: want an address or name the other members can dial, not every interface", c.Cluster.Advertise)
	}
	return nil
}

// loopbackHost reports whether host names the loopback interface only.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clusterTLS loads the members' TLS material, and reads it again whenever its files
// change, until Close; SIGHUP reads it at once (Reload).
func (m *Main) clusterTLS() (*clustertls.Config, error) {
	c := m.Config
	if c.Cluster.TLS.Cert == "" {
		host, _, _ := clusterAddr(c.Cluster.Bind)
		if c.Cluster.Insecure {
			m.logger.Warn("the members speak plaintext (--cluster-insecure): anyone who reaches the cluster port can create, propose and stop intents as a member; use --cluster-tls-* (docs/cluster.md, \"Security\")",
				"cluster_bind", c.Cluster.Bind, "loopback", loopbackHost(host))
		}
		return nil, nil
	}
	tc, err := clustertls.Load(c.Cluster.TLS)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	m.stopTLSWatch = func() { cancel(); <-done }
	go func() {
		defer close(done)
		tc.Watch(ctx, tlsWatchInterval, m.logger.With("component", "cluster"))
	}()
	m.logger.Info("the members speak mutual TLS", "cert", c.Cluster.TLS.Cert, "ca", c.Cluster.TLS.CA, "not_after", tc.NotAfter())
	return tc, nil
}

// tlsWatchInterval is how often a member looks whether its TLS files changed: a
// rotation is picked up within it without a signal.
const tlsWatchInterval = 5 * time.Second

// clusterConfig is the engine's cluster mode, membership on the store's NATS. A member
// that finds itself dropped from the cluster stops serving grains at once (Fenced), and
// rejoins as a new member (Rejoin), or stops when --cluster-exit-on-fence says so.
func (m *Main) clusterConfig() (*actors.ClusterConfig, error) {
	c := m.Config
	host, port, _ := clusterAddr(c.Cluster.Bind)
	prov, err := m.newProvider()
	if err != nil {
		return nil, err
	}
	tc, err := m.clusterTLS()
	if err != nil {
		return nil, err
	}
	cc := &actors.ClusterConfig{Name: c.Cluster.Name, Host: host, Port: port, Advertise: c.Cluster.Advertise, Provider: prov, MaxGrains: c.Cluster.MaxGrains}
	if c.Cluster.MaxGrains == 0 {
		cc.MaxGrains = -1 // the flag's 0 is no bound; the engine's is its default
	}
	if tc != nil {
		m.clusterTLSConfig, cc.Credentials = tc, tc.Credentials()
	}
	if m.tlog != nil {
		cc.Log = m.tlog.Reader() // served to the members that keep no log
	}
	return cc, nil
}

// checkClusterKey refuses to join a cluster whose members sign with another key: a
// receipt is signed by whichever member proved the intent, and a verifier pins one key.
// The first member records its key id beside the members; the others must match it.
func (m *Main) checkClusterKey(ctx context.Context, keyID string) error {
	name := m.Config.Cluster.Name
	// The store watches the bucket from now on, as it watches its stream, and refuses to
	// make it again empty once it made it: a member with another key must not find an
	// empty bucket to record its key in.
	kv, err := m.nats.Bucket(ctx, jetstream.KeyValueConfig{
		Bucket:      clusterBucket(m.Config, "cluster"),
		Description: "intentd cluster " + name + ": what every member must agree on",
		Replicas:    m.nats.Replicas(),
	})
	if err != nil {
		return fmt.Errorf("cluster %s: %w", name, err)
	}
	if _, err := kv.Create(ctx, "signing_key_id", []byte(keyID)); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("cluster %s: record the signing key: %w", name, err)
	}
	e, err := kv.Get(ctx, "signing_key_id")
	if err != nil {
		return fmt.Errorf("cluster %s: read the signing key: %w", name, err)
	}
	if got := string(e.Value()); got != keyID {
		return fmt.Errorf("cluster %s signs receipts with key %s and this node with %s: give every member the same --signing-key (docs/cluster.md)", name, got, keyID)
	}
	return nil
}

// newProvider makes the membership provider of one incarnation, with a Fenced channel
// of its own.
func (m *Main) newProvider() (cluster.ClusterProvider, error) {
	fenced := make(chan struct{})
	var once sync.Once
	prov, err := natsprovider.New(natsprovider.Config{
		JetStream: m.nats.JetStream(),
		Bucket:    clusterBucket(m.Config, "members"),
		Replicas:  m.nats.Replicas(),
		Logger:    m.logger,
		OnFenced: func(reason error) {
			m.logger.Error("this node was dropped from the cluster: it serves no intent grain until it is a member again", "err", reason)
			once.Do(func() { close(fenced) })
		},
		OnRefused: func(string, []uint32) { m.peersRefused.Add(1) },
	})
	if err != nil {
		return nil, err
	}
	m.fencedMu.Lock()
	m.fenced = fenced
	m.fencedMu.Unlock()
	return prov, nil
}

// Fenced is closed when this node was dropped from its cluster; it is nil (never ready)
// outside cluster mode. Each incarnation has its own: read it again after Rejoin.
func (m *Main) Fenced() <-chan struct{} {
	m.fencedMu.Lock()
	defer m.fencedMu.Unlock()
	return m.fenced
}

// Rejoin makes a fenced node a member again under a new id, without a restart: the
// engine drops its grains and its intents' actors and joins with a new provider, tried
// until NATS answers or ctx ends. With --cluster-exit-on-fence it returns errFenced
// instead, for the caller to stop.
func (m *Main) Rejoin(ctx context.Context) error {
	if m.Config.Cluster.ExitOnFence {
		m.logger.Error("this node was dropped from the cluster: stopping, as --cluster-exit-on-fence asks; its supervisor starts it again as a new member")
		return errFenced
	}
	m.logger.Warn("this node was dropped from the cluster: rejoining as a new member")
	return m.engine.Rejoin(ctx, m.newProvider)
}

// errFenced is Rejoin's answer when a fenced node is to stop.
var errFenced = errors.New("dropped from the cluster")
