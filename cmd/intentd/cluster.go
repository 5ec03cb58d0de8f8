package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/cluster/natsprovider"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterBucket names a key-value bucket of the cluster: after the store's prefix as well
// as the cluster's name, so that services on one NATS with different prefixes never
// form one cluster of members that do not share a stream.
func clusterBucket(c Config, what string) string {
	return strings.ReplaceAll(c.NatsPrefix, ".", "_") + "_" + what + "_" + c.ClusterName
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

// clusterConfig is the engine's cluster mode, membership on the store's NATS. A member
// that finds itself dropped from the cluster stops: its supervisor starts it again and
// it rejoins as a new member, rather than serve intents the others now own.
func (m *Main) clusterConfig() (*actors.ClusterConfig, error) {
	c := m.Config
	host, port, _ := clusterAddr(c.ClusterBind)
	m.fenced = make(chan struct{})
	var once sync.Once
	prov, err := natsprovider.New(natsprovider.Config{
		JetStream: m.nats.JetStream(),
		Bucket:    clusterBucket(c, "members"),
		Replicas:  m.nats.Replicas(),
		Logger:    m.logger,
		OnFenced: func(reason error) {
			m.logger.Error("this node was dropped from the cluster: stopping, to rejoin as a new member", "err", reason)
			once.Do(func() { close(m.fenced) })
		},
	})
	if err != nil {
		return nil, err
	}
	return &actors.ClusterConfig{Name: c.ClusterName, Host: host, Port: port, Provider: prov}, nil
}

// checkClusterKey refuses to join a cluster whose members sign with another key: a
// receipt is signed by whichever member proved the intent, and a verifier pins one key.
// The first member records its key id beside the members; the others must match it.
func (m *Main) checkClusterKey(ctx context.Context, keyID string) error {
	name := m.Config.ClusterName
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

// Fenced is closed when this node was dropped from its cluster and must stop; it is nil
// (never ready) outside cluster mode.
func (m *Main) Fenced() <-chan struct{} { return m.fenced }
