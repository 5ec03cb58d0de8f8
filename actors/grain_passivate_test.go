package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/intentd/intentd/cluster/clusterpb"
)

// TestGrainPassivatesAfterLongCommand checks that a grain whose idle time ran out while
// a command was still running passivates once the command's answer came and it was
// idle again: a grain that let its linger pass without stopping looks again later.
// Under the race detector it also holds the grain's idle timer (idle.go) to its
// goroutine: protoactor's receive time-out, used before, raced here.
func TestGrainPassivatesAfterLongCommand(t *testing.T) {
	e := &Engine{cfg: Config{PassivateAfter: 50 * time.Millisecond, Cluster: &ClusterConfig{}}}
	m := &incarnation{system: actor.NewActorSystem()}
	g := &grain{e: e, member: m, running: map[string]*run{"r1": {waiting: []*actor.PID{nil}}}}
	pid := m.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return g }))
	defer m.system.Root.Stop(pid)
	// The time-out passes several times while the command runs: the grain stays.
	time.Sleep(300 * time.Millisecond)
	if n := m.activations.Load(); n != 1 {
		t.Fatalf("%d grains active while a command runs, want 1", n)
	}
	m.system.Root.Send(pid, &handled{request: "r1", reply: &clusterpb.Done{RequestId: "r1"}})
	deadline := time.Now().Add(5 * time.Second)
	for m.activations.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the grain did not passivate after its last command's answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunAnswersAfterGrainStopped checks that a command's tries are answered when the
// grain that took them stopped before the command's answer came (its partition placed
// on another member, or the member leaving): the run answers them itself.
func TestRunAnswersAfterGrainStopped(t *testing.T) {
	e := &Engine{cfg: Config{PassivateAfter: time.Minute, Cluster: &ClusterConfig{}}}
	m := &incarnation{system: actor.NewActorSystem()}
	first, retry := actor.NewFuture(m.system, 5*time.Second), actor.NewFuture(m.system, 5*time.Second)
	r := &run{waiting: []*actor.PID{first.PID(), retry.PID()}}
	g := &grain{e: e, member: m, running: map[string]*run{"r1": r}}
	pid := m.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return g }))
	if err := m.system.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	r.finish(m.system.Root, &clusterpb.Done{RequestId: "r1"})
	for i, f := range []*actor.Future{first, retry} {
		res, err := f.Result()
		if d, ok := res.(*clusterpb.Done); err != nil || !ok || d.RequestId != "r1" {
			t.Errorf("try %d: %T %v, %v; want Done", i, res, res, err)
		}
	}
}
