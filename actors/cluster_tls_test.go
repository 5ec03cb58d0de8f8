//go:build !race

package actors

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/cluster/clusterpb"
	"github.com/intentd/intentd/cluster/clustertls"
)

// clusterTLS makes a CA in dir and the TLS material of a member it signs.
func clusterTLS(t *testing.T, ca *clustertls.CA, dir, name string) *clustertls.Config {
	t.Helper()
	return memberTLS(t, ca, dir, name, "127.0.0.1")
}

// memberTLS is clusterTLS for a member whose certificate names hosts.
func memberTLS(t *testing.T, ca *clustertls.CA, dir, name string, hosts ...string) *clustertls.Config {
	t.Helper()
	cert, key, err := ca.Issue(name, hosts, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f := clustertls.Files{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+".key"), CA: filepath.Join(dir, name+"-ca.pem")}
	for path, data := range map[string][]byte{f.Cert: cert, f.Key: key, f.CA: ca.CertPEM()} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := clustertls.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newTestCA(t *testing.T, name string) *clustertls.CA {
	t.Helper()
	ca, err := clustertls.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// outsider is an actor system of its own that reaches a member's remoting port the way
// anyone on the network can: it is no member, and dials with the options given.
func outsider(t *testing.T, creds credentials.TransportCredentials) *actor.ActorSystem {
	t.Helper()
	sys := actor.NewActorSystem()
	// Its own port answers with the same credentials, so that a member can answer it.
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0,
		remote.WithDialOptions(grpc.WithTransportCredentials(creds)), remote.WithServerOptions(grpc.Creds(creds))))
	r.Start()
	t.Cleanup(func() { r.Shutdown(false) })
	return sys
}

// TestClusterRefusesOutsiders starts a member whose remoting port is mutual TLS, and
// from actor systems of their own, one dialling without a certificate and one with a
// certificate of another CA, tries what an attacker of the port would: activate a
// grain, create an intent, propose, and stop the placement actor. Each try goes
// unanswered and nothing is stored; the member serves on. An actor system with a
// certificate of the member's own CA gets answers, so the refusals are TLS's: and
// there, the owner's own checks refuse the forged create.
func TestClusterRefusesOutsiders(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "cluster")
	h := clusterUnder(t, ca, 1, nil)[0]
	addr := h.e.member.Load().system.Address()
	const wait = 2 * time.Second

	// The member's own grain of an intent, to aim the outsiders' commands at. A PID
	// keeps the process it was first resolved to: each actor system gets a copy of its
	// own, or a send would reach the member's process in memory, past the port.
	good := h.submit("M", 2500)
	own := h.e.member.Load().cluster.Get(good, intentKind)
	if own == nil {
		t.Fatal("no grain for an intent of the member")
	}
	pids := func() (activator, grain *actor.PID) {
		return actor.NewPID(addr, disthash.PartitionActivatorActorName), actor.NewPID(own.Address, own.Id)
	}

	stranger := clusterTLS(t, newTestCA(t, "other"), dir, "stranger")
	for _, tt := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"no certificate", insecure.NewCredentials()},
		{"a certificate of another CA", stranger.Credentials()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sys := outsider(t, tt.creds)
			activator, ownPID := pids()
			id := uuid.NewString()
			act := &cluster.ActivationRequest{ClusterIdentity: cluster.NewClusterIdentity(id, intentKind), RequestId: uuid.NewString()}
			if res, err := sys.Root.RequestFuture(activator, act, wait).Result(); err == nil {
				t.Fatalf("an activation was answered: %v", res)
			}
			for _, msg := range []any{
				forgedCreate(t, h, good),
				&clusterpb.Propose{RequestId: uuid.NewString(), IntentId: good, Solution: "M-cheap"},
			} {
				if res, err := sys.Root.RequestFuture(ownPID, msg, wait).Result(); err == nil {
					t.Fatalf("%T was answered: %v", msg, res)
				}
			}
			sys.Root.Stop(activator)
			time.Sleep(200 * time.Millisecond)

			if _, err := h.e.Status(context.Background(), id); intentd.ErrorKind(err) != intentd.KindNotFound {
				t.Fatalf("the activated intent: %v, want not found", err)
			}
			if s := h.status(good); s.State != intentd.StateOpen {
				t.Fatalf("the member's intent is %s after the outsider's proposal, want open", s.State)
			}
			// The placement actor still places: a new intent is created and proposed to.
			id2 := h.submit("M", 2500)
			if err := proposeTo(h, id2, "M-cheap"); err != nil {
				t.Fatalf("a proposal after the outsider's stop: %v", err)
			}
			h.waitState(id2, intentd.StateSuccess)
		})
	}

	t.Run("a certificate of the member's CA", func(t *testing.T) {
		insider := clusterTLS(t, ca, dir, "insider")
		sys := outsider(t, insider.Credentials())
		activator, _ := pids()
		id := uuid.NewString()
		act := &cluster.ActivationRequest{ClusterIdentity: cluster.NewClusterIdentity(id, intentKind), RequestId: uuid.NewString()}
		res, err := sys.Root.RequestFuture(activator, act, wait).Result()
		resp, ok := res.(*cluster.ActivationResponse)
		if err != nil || !ok || resp.Pid == nil {
			t.Fatalf("activation through the member's CA: %T %v, %v", res, res, err)
		}
		// The port lets a member in; the owner's checks still refuse what no member
		// sends: a create whose signature is not the intent's.
		res, err = sys.Root.RequestFuture(resp.Pid, forgedCreate(t, h, id), wait).Result()
		if r, ok := res.(*clusterpb.ErrorReply); err != nil || !ok || r.GetCode() != intentd.CodeAuthorshipInvalid {
			t.Fatalf("a forged create: %T %v, %v; want %s", res, res, err, intentd.CodeAuthorshipInvalid)
		}
		if _, err := h.e.Status(context.Background(), id); intentd.ErrorKind(err) != intentd.KindNotFound {
			t.Fatalf("the forged intent: %v, want not found", err)
		}
	})
}

// TestClusterAdvertisedName starts a member that listens on an address and advertises
// a name, as a Kubernetes pod does (its DNS name, on the pod's address), with a
// certificate that carries the name alone. The other member sees it by the name, dials
// it there, and its TLS check of the name passes: the creates and proposals it sends
// to the intents the named member owns are answered, and every intent is decided.
func TestClusterAdvertisedName(t *testing.T) {
	ca := newTestCA(t, "cluster")
	dir := t.TempDir()
	var named string
	first := true
	hs := clusterUnder(t, ca, 2, func(c *Config) {
		if first {
			first = false
			named = net.JoinHostPort("localhost", strconv.Itoa(c.Cluster.Port))
			c.Cluster.Advertise = named
			c.Cluster.Credentials = memberTLS(t, ca, dir, "named", "localhost").Credentials()
		}
	})
	if members := hs[1].e.ClusterMembers(); !slices.Contains(members, named) {
		t.Fatalf("the other member sees %v; want %s, the advertised name", members, named)
	}
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = hs[1].submit("M", 2500)
	}
	for _, id := range ids {
		if err := proposeTo(hs[1], id, "M-cheap"); err != nil {
			t.Fatalf("proposal through the other member: %v", err)
		}
	}
	for _, id := range ids {
		hs[0].waitState(id, intentd.StateSuccess)
	}
}
