//go:build !race

// These tests run real protoactor cluster members in this process. They are left out of
// -race builds because protoactor-go, at the version in go.mod, races with itself when
// several members share a process and when the topology changes: remote.Start replaces
// grpc's process-wide logger while the other members' connections log through it, and
// disthash swaps its partition table on a topology change without a lock while requests
// read it. The provider's own code is checked under -race by the package's other tests,
// with real NATS and a stand-in for protoactor's member list, or with none (the judge's
// scripts); `make test` runs these without.

package natsprovider

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/cluster/actorlog"
	"github.com/intentd/intentd/cluster/clusterpb"
)

// member is one protoactor cluster member in this process, on loopback, with the
// topology protoactor itself published (not the provider's own record of it).
type member struct {
	sys      *actor.ActorSystem
	cl       *cluster.Cluster
	prov     *Provider
	fencedBy chan error

	mu   sync.Mutex
	view []string // member ids of the last ClusterTopology, sorted
	stop sync.Once
}

// echoKind is a grain that answers with the address of the member it runs on, so that a
// test can tell requests were placed across the members.
func echoKind() *cluster.Kind {
	return cluster.NewKind("echo", actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*clusterpb.GetStatus); ok {
			ctx.Respond(&clusterpb.Done{RequestId: m.GetRequestId() + "@" + ctx.Self().Address})
		}
	}))
}

func startMember(t *testing.T, js jetstream.JetStream, port int) *member {
	t.Helper()
	m := &member{fencedBy: make(chan error, 1)}
	prov, err := New(Config{JetStream: js, TTL: *testTTL, Logger: logger(), OnFenced: func(err error) { m.fencedBy <- err }})
	if err != nil {
		t.Fatal(err)
	}
	m.prov = prov
	m.sys = actor.NewActorSystem(actor.WithLoggerFactory(actorlog.Factory(logger())))
	m.sys.EventStream.Subscribe(func(evt any) {
		// Called with the member list's lock held: read only the event.
		if top, ok := evt.(*cluster.ClusterTopology); ok {
			ids := make([]string, 0, len(top.Members))
			for _, mm := range top.Members {
				ids = append(ids, mm.Id)
			}
			slices.Sort(ids)
			m.mu.Lock()
			m.view = ids
			m.mu.Unlock()
		}
	})
	cfg := cluster.Configure("test", prov, disthash.New(), remote.Configure("127.0.0.1", port),
		cluster.WithKinds(echoKind()), cluster.WithRequestTimeout(3*time.Second))
	m.cl = cluster.New(m.sys, cfg)
	m.cl.StartMember()
	t.Cleanup(m.shutdown)
	return m
}

// shutdown leaves without protoactor's graceful wait of two seconds: the key is deleted
// first, so the others see the member leave at once.
func (m *member) shutdown() {
	m.stop.Do(func() {
		_ = m.prov.Shutdown(true)
		m.cl.Shutdown(false)
	})
}

func (m *member) sees() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.view)
}

func ids(ms ...*member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.prov.ID()
	}
	slices.Sort(out)
	return out
}

// waitViews waits until every member in ms sees exactly want, and returns how long it
// took.
func waitViews(t *testing.T, within time.Duration, want []string, ms ...*member) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok := true
		for _, m := range ms {
			if !slices.Equal(m.sees(), want) || len(m.prov.Members()) != len(want) {
				ok = false
			}
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > within {
			for i, m := range ms {
				t.Errorf("member %d (%s) sees %v", i, m.prov.ID(), m.sees())
			}
			t.Fatalf("the members did not all see %v within %v", want, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startThree starts three members one after the other: protoactor's remote.Start sets
// grpc's process-wide logger, so members started at once in one process race on it.
func startThree(t *testing.T, js jetstream.JetStream) []*member {
	t.Helper()
	ms := make([]*member, 3)
	for i := range ms {
		ms[i] = startMember(t, js, 0)
	}
	waitViews(t, 5*time.Second, ids(ms...), ms...)
	return ms
}

func TestThreeMembersJoinAndServeGrains(t *testing.T) {
	js := embed(t)
	ms := startThree(t, js)

	// Grains are placed across the members and reached from any of them.
	hosts := map[string]bool{}
	for i := range 30 {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		res, err := ms[i%3].cl.Request(id, "echo", &clusterpb.GetStatus{RequestId: id, IntentId: id})
		if err != nil {
			t.Fatalf("request %s: %v", id, err)
		}
		done, ok := res.(*clusterpb.Done)
		if !ok {
			t.Fatalf("request %s: answered %T", id, res)
		}
		_, host, _ := cutAt(done.GetRequestId())
		hosts[host] = true
	}
	if len(hosts) < 2 {
		t.Errorf("30 grains all ran on %v", hosts)
	}
}

func cutAt(s string) (before, after string, ok bool) {
	for i := range len(s) {
		if s[i] == '@' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// TestMemberShutdownLeavesAtOnce: a member shut down deletes its key, and the others see it
// leave within a moment, not after its TTL.
func TestMemberShutdownLeavesAtOnce(t *testing.T) {
	js := embed(t)
	ms := startThree(t, js)
	start := time.Now()
	ms[2].shutdown()
	waitViews(t, 5*time.Second, ids(ms[0], ms[1]), ms[0], ms[1])
	d := time.Since(start)
	t.Logf("a member shut down left every other view %v after its shutdown began (TTL %v)", d, *testTTL)
	if d > *testTTL {
		t.Errorf("leaving took %v, longer than the TTL %v: the key was not deleted", d, *testTTL)
	}
}

// TestStoppedMemberLeavesFencesAndRejoins freezes a member as SIGSTOP would (no
// renewals, no watch), measures how long the others take to drop it, then resumes it:
// it must fence itself at once, and a member restarted on its address must rejoin.
func TestStoppedMemberLeavesFencesAndRejoins(t *testing.T) {
	js := embed(t)
	ms := startThree(t, js)
	frozen := ms[2]
	_, port, err := frozen.sys.GetHostPort()
	if err != nil {
		t.Fatal(err)
	}

	frozen.prov.pause.Lock()
	start := time.Now()
	d := waitViews(t, *testTTL+5*time.Second, ids(ms[0], ms[1]), ms[0], ms[1])
	t.Logf("a frozen member left every other view %v after it stopped renewing (TTL %v)", d, *testTTL)
	if d > *testTTL+3*time.Second {
		t.Errorf("detection took %v, want at most TTL + 3s", d)
	}
	select {
	case <-frozen.prov.Fenced():
		t.Fatal("fenced while frozen")
	default:
	}

	frozen.prov.pause.Unlock()
	select {
	case err := <-frozen.fencedBy:
		t.Logf("the resumed member fenced itself %v after it was frozen: %v", time.Since(start), err)
		if !errors.Is(err, ErrFenced) || !errors.Is(frozen.prov.FenceCause(), ErrFenced) {
			t.Errorf("fence cause %v", err)
		}
	case <-time.After(*testTTL + 2*time.Second):
		t.Fatal("the resumed member did not fence itself")
	}
	if v := frozen.prov.Members(); len(v) != 3 {
		t.Logf("the fenced member's last view: %d members", len(v))
	}

	// The node's answer to a fence: stop the member and start a new one, which joins
	// under a new id, here on the same address so that it gets its identities back.
	frozen.shutdown()
	back := startMember(t, js, port)
	if back.prov.ID() == frozen.prov.ID() {
		t.Fatal("the restarted member has the fenced member's id")
	}
	d = waitViews(t, 5*time.Second, ids(ms[0], ms[1], back), ms[0], ms[1], back)
	t.Logf("the restarted member was in every view %v after it started", d)
	if _, err := ms[0].cl.Request("x", "echo", &clusterpb.GetStatus{RequestId: "x"}); err != nil {
		t.Errorf("request after the rejoin: %v", err)
	}
}
