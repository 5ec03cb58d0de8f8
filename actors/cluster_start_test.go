//go:build !race

package actors

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
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
