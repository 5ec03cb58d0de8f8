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
	"github.com/google/uuid"
	"github.com/intentd/intentd"
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

// TestGrainsPassivate proposes to intents through a member that does not own them, so
// that their grains are activated on their owner, waits past the passivation time, and
// finds no grain active; a command after that activates the intent's grain again, which
// answers from the store.
func TestGrainsPassivate(t *testing.T) {
	hs := clusterOf(t, 2, func(c *Config) {
		c.PassivateAfter = 300 * time.Millisecond
		c.Cluster.ownerDecides = true // proposals cross, as expiries and resumes do
	})
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = createOwnedBy(t, hs[i%2], hs[(i+1)%2])
	}
	active := func() int { return hs[0].e.ClusterActivations() + hs[1].e.ClusterActivations() }
	if n := active(); n != 0 {
		t.Fatalf("%d grains active after the creates, which do not cross, want none", n)
	}
	for i, id := range ids {
		if err := proposeTo(hs[i%2], id, "M-cheap"); err != nil {
			t.Fatalf("a proposal through the member that does not own the intent: %v", err)
		}
	}
	if n := active(); n == 0 {
		t.Fatal("no grain active right after the proposals")
	}
	for _, id := range ids {
		hs[0].waitState(id, intentd.StateSuccess)
	}
	deadline := time.Now().Add(5 * time.Second)
	for active() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d grains still active %v after the last command", active(), 5*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, id := range ids {
		if err := proposeTo(hs[i%2], id, "M-dear"); intentd.ErrorCode(err) != intentd.CodeProposalExists {
			t.Fatalf("a second proposal to a passivated grain: %v, want %s", err, intentd.CodeProposalExists)
		}
	}
}

// createOwnedBy creates an intent owned by owner through via, and returns its id.
func createOwnedBy(t *testing.T, via, owner *harness) string {
	t.Helper()
	id := idOwnedBy(owner)
	via.submitID(id, "M", 2500)
	return id
}

// idOwnedBy is a new intent id that owner owns.
func idOwnedBy(owner *harness) string {
	id := uuid.NewString()
	for !owner.e.member.Load().ownsHere(id) {
		id = uuid.NewString()
	}
	return id
}

// TestGrainsBounded gives members room for three intents: a proposal through another
// member to a fourth intent its owner holds is refused 503 capacity_exceeded and
// counted, the intent stays open with no proposal, and the owner holds the three
// intents after it; so is a proposal the owner takes itself for an intent it owns. It
// runs on partition grains, and on intents' own grains (a cluster of the releases
// before partitions), whose bound is on the grains themselves.
func TestGrainsBounded(t *testing.T) {
	for _, partitioned := range []bool{true, false} {
		name := map[bool]string{true: "partitions", false: "intents' own grains"}[partitioned]
		t.Run(name, func(t *testing.T) {
			hs := clusterOf(t, 2, func(c *Config) {
				c.Cluster.MaxGrains = 3
				c.Cluster.noPartitions = !partitioned
				c.Cluster.ownerDecides = true // proposals cross, as expiries and resumes do
				c.PassivateAfter = time.Minute
			})
			via, owner := hs[0], hs[1]
			held := map[string]bool{} // the grains of the three intents held
			for range 3 {
				// Held in their proofs, so that their actors stay: a decided intent's
				// actor stops at once.
				id := createOwnedBy(t, via, owner)
				held[grainOf(id, partitioned).Identity] = true
				if err := proposeTo(via, id, "block:M-cheap"); err != nil {
					t.Fatal(err)
				}
			}
			id := createOwnedBy(t, via, owner)
			err := proposeTo(via, id, "M-cheap")
			if intentd.ErrorCode(err) != intentd.CodeCapacityExceeded || intentd.ErrorKind(err) != intentd.KindBusy {
				t.Fatalf("a proposal to a fourth intent: %v, want 503 %s", err, intentd.CodeCapacityExceeded)
			}
			if st := via.status(id); st.State != intentd.StateOpen || st.Proposal != nil {
				t.Fatalf("the refused intent is %s with %+v, want open with no proposal", st.State, st.Proposal)
			}
			if n := owner.e.ClusterGrainsRefused(); n != 1 {
				t.Fatalf("grains refused = %d, want 1", n)
			}
			// A command the owner takes itself, for an intent it owns, meets the same bound.
			mine := createOwnedBy(t, owner, owner)
			if err := proposeTo(owner, mine, "M-cheap"); intentd.ErrorCode(err) != intentd.CodeCapacityExceeded {
				t.Fatalf("a proposal through the owner to a fourth intent: %v, want 503 %s", err, intentd.CodeCapacityExceeded)
			}
			if st := owner.status(mine); st.State != intentd.StateOpen || st.Proposal != nil {
				t.Fatalf("the intent refused on its owner is %s with %+v, want open with no proposal", st.State, st.Proposal)
			}
			if n := owner.e.ClusterGrainsRefused(); n != 2 {
				t.Fatalf("grains refused = %d, want 2", n)
			}
			if partitioned {
				// The refused intent's partition grain was activated and stays
				// (partitions are 1,024, not bounded); it holds no actor of the
				// refused intent. An intent's own grain refused stops.
				held[partitionOf(id)] = true
			}
			deadline := time.Now().Add(5 * time.Second)
			for owner.e.ClusterActivations() != len(held) || owner.e.registry.n.Load() != 3 {
				if time.Now().After(deadline) {
					t.Fatalf("%d grains and %d intents' actors held, want %d grains and the 3 intents within the bound",
						owner.e.ClusterActivations(), owner.e.registry.n.Load(), len(held))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestDecidedActorsStopInACluster: the owner of an intent stops its actor once the
// intent is decided, as one node does, rather than holding it, its snapshot, evidence
// and receipt until passivation; whether the proposal came through another member or
// the owner itself.
func TestDecidedActorsStopInACluster(t *testing.T) {
	hs := clusterOf(t, 2, func(c *Config) { c.PassivateAfter = time.Minute })
	via, owner := hs[0], hs[1]
	var ids []string
	for _, through := range []*harness{via, owner, via} {
		id := createOwnedBy(t, through, owner)
		if err := proposeTo(through, id, "M-cheap"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		owner.waitState(id, intentd.StateSuccess)
	}
	owner.waitNoActors(time.Now().Add(5*time.Second), "on the owner after every intent was decided, with passivation a minute away")
}
