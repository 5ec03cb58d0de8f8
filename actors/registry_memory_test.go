package actors

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// TestProcessRegistryCeiling measures what protoactor's process registry keeps of the
// actors that passed through it: every actor and every future registers its name in
// one of 1,024 × 32 Go maps, each of which grows a table the first time and never
// gives it back. It spawns and stops named actors, as the engine does an intent's, and
// checks that what the registry keeps reaches a ceiling rather than growing with every
// actor (docs/cluster.md, "Memory after a load"). It logs the figures; `make
// cluster-memory` runs it.
func TestProcessRegistryCeiling(t *testing.T) {
	if os.Getenv("INTENTD_CLUSTER_MEMORY") == "" {
		t.Skip("measures the heap over 300,000 actors: run it with `make cluster-memory` (INTENTD_CLUSTER_MEMORY=1)")
	}
	start := heapInUse()
	system := actor.NewActorSystem()
	empty := heapInUse()
	t.Logf("an empty actor system: %s", mebibytes(empty-start))
	props := actor.PropsFromProducer(func() actor.Actor { return idleActor{} })
	n, grown := 0, map[int]float64{}
	for _, upTo := range []int{1_000, 10_000, 30_000, 100_000, 200_000, 300_000} {
		for ; n < upTo; n++ {
			pid, err := system.Root.SpawnNamed(props, fmt.Sprintf("intent/%036d", n))
			if err != nil {
				t.Fatal(err)
			}
			if err := system.Root.StopFuture(pid).Wait(); err != nil {
				t.Fatal(err)
			}
		}
		grown[n] = heapInUse() - empty
		t.Logf("after %d actors spawned and stopped: %s more than the empty system", n, mebibytes(grown[n]))
	}
	runtime.KeepAlive(system)
	if d := grown[300_000] - grown[200_000]; d > 1<<20 {
		t.Errorf("the registry kept %s more over the last 100,000 actors: it grows with the actors, not to a ceiling", mebibytes(d))
	}
}

type idleActor struct{}

func (idleActor) Receive(actor.Context) {}

// heapInUse is the heap in use after a collection that gives the free heap back.
func heapInUse() float64 {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse)
}

func mebibytes(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
