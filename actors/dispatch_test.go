package actors

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestWarmDispatcher checks that every scheduled run happens exactly once, from many
// schedulers at once, that waiting workers are reused, and that runs scheduled after
// close still happen.
func TestWarmDispatcher(t *testing.T) {
	d := newWarmDispatcher(300)
	const n = 2000
	var ran [n]atomic.Int32
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		go d.Schedule(func() {
			ran[i].Add(1)
			wg.Done()
		})
	}
	wg.Wait()
	for i := range ran {
		if got := ran[i].Load(); got != 1 {
			t.Fatalf("run %d happened %d times, want once", i, got)
		}
	}

	// After its run a worker waits for the next one: a send that only a waiting
	// worker can take must be taken, run after run.
	for range 100 {
		done := make(chan struct{})
		d.idle <- func() { close(done) }
		<-done
	}

	d.close()
	done := make(chan struct{})
	d.Schedule(func() { close(done) })
	<-done
	if got := d.Throughput(); got != 300 {
		t.Errorf("Throughput = %d, want 300", got)
	}
}
