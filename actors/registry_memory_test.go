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
// actors that passed through it: every actor and every future registers its name in one
// of 1,024 concurrent maps, each a Go map (process_names.go; 32 of them at cmap's
// default), and a Go map never gives back the table it grew. It spawns and stops named
// actors, as the engine does an intent's, and checks that the registry keeps little of
// them: at cmap's default the system kept 8.0 MiB more after 30,000 actors and 9.6 MiB
// after 100,000 and more. 30,000 run in every test run; `make cluster-memory`
// (INTENTD_CLUSTER_MEMORY=1) runs 300,000 and logs the figures.
func TestProcessRegistryCeiling(t *testing.T) {
	levels := []int{1_000, 10_000, 30_000}
	if os.Getenv("INTENTD_CLUSTER_MEMORY") != "" {
		levels = append(levels, 100_000, 200_000, 300_000)
	}
	start := heapInUse()
	system := actor.NewActorSystem()
	if got := len(system.ProcessRegistry.LocalPIDs.LocalPIDs[0]); got != 1 {
		t.Fatalf("each of the registry's maps is split %d ways, want 1 (process_names.go)", got)
	}
	empty := heapInUse()
	t.Logf("an empty actor system: %s", mebibytes(empty-start))
	props := actor.PropsFromProducer(func() actor.Actor { return idleActor{} })
	n, grown := 0, map[int]float64{}
	for _, upTo := range levels {
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
	if d := grown[n]; d > 2<<20 {
		t.Errorf("the registry kept %s more after %d actors: its maps hold tables of names long gone", mebibytes(d), n)
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
