//go:build !race

package actors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/google/uuid"
	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

// failingProvider is a membership provider whose start fails, as natsprovider's does
// when NATS refuses the members' bucket.
type failingProvider struct{}

func (failingProvider) StartMember(*cluster.Cluster) error {
	return errors.New("the bucket is refused")
}
func (failingProvider) StartClient(*cluster.Cluster) error {
	return errors.New("the bucket is refused")
}
func (failingProvider) Shutdown(bool) error { return nil }

// TestClusterStartFails opens members that cannot join: on a port in use, and with a
// provider that fails. Open returns an error that says why, rather than protoactor's
// panic ending the process.
func TestClusterStartFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	for _, tt := range []struct {
		name string
		cc   *ClusterConfig
		want string
	}{
		{"a port in use", &ClusterConfig{Name: "test", Host: "127.0.0.1", Port: port, Provider: failingProvider{}},
			"cluster port: listen tcp " + taken.Addr().String() + ": bind: address already in use"},
		{"a provider that fails", &ClusterConfig{Name: "test", Host: "127.0.0.1", Port: freePort, Provider: failingProvider{}},
			"the bucket is refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Store = stores[0].backend(t)(t)
			cfg.Extractor = newFakeExtractor()
			cfg.Cluster = tt.cc
			e, err := Open(cfg)
			if err == nil {
				e.Close()
				t.Fatal("Open joined a cluster it cannot join")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open = %v, want an error saying %q", err, tt.want)
			}
		})
	}
	// The port of the failed start is free again, once gRPC's server, stopped before
	// it began to serve, has closed it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", freePort))
		if err == nil {
			ln.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the port of a failed start is still held: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGrainsPassivate sends intents through two members, waits past the passivation
// time, and finds no grain active on either; a proposal after that activates the
// intent's grain again and succeeds.
func TestGrainsPassivate(t *testing.T) {
	hs := clusterOf(t, 2, func(c *Config) { c.PassivateAfter = 300 * time.Millisecond })
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = hs[i%2].submit("M", 2500)
	}
	active := func() int { return hs[0].e.ClusterActivations() + hs[1].e.ClusterActivations() }
	if n := active(); n == 0 {
		t.Fatal("no grain active right after the creates")
	}
	deadline := time.Now().Add(5 * time.Second)
	for active() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d grains still active %v after the last command", active(), 5*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, id := range ids {
		if err := proposeTo(hs[(i+1)%2], id, "M-cheap"); err != nil {
			t.Fatalf("a proposal to a passivated grain: %v", err)
		}
	}
	for _, id := range ids {
		hs[0].waitState(id, intentd.StateSuccess)
	}
}

// TestGrainsBounded gives a member room for three grains: a fourth intent is refused
// 503 capacity_exceeded and counted, stores nothing, and the member holds three grains
// after it.
func TestGrainsBounded(t *testing.T) {
	h := clusterOf(t, 1, func(c *Config) { c.Cluster.MaxGrains = 3 })[0]
	for range 3 {
		h.submit("M", 2500)
	}
	id := uuid.NewString()
	raw := h.intentJSON(id, "M", 2500)
	auth, err := crypto.SignEd25519(h.key, raw)
	if err != nil {
		t.Fatal(err)
	}
	err = submitRaw(context.Background(), h.e, raw, auth)
	if intentd.ErrorCode(err) != intentd.CodeCapacityExceeded || intentd.ErrorKind(err) != intentd.KindBusy {
		t.Fatalf("a fourth intent: %v, want 503 %s", err, intentd.CodeCapacityExceeded)
	}
	if _, err := h.e.Status(context.Background(), id); intentd.ErrorKind(err) != intentd.KindNotFound {
		t.Fatalf("the refused intent: %v, want not found", err)
	}
	if n := h.e.ClusterGrainsRefused(); n != 1 {
		t.Fatalf("grains refused = %d, want 1", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.e.ClusterActivations() != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d grains active, want the 3 within the bound", h.e.ClusterActivations())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
