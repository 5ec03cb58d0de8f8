package actors

import (
	"sync"
	"time"
)

// warmDispatcher runs intent actors' mailboxes, and the creates written without an
// actor (registry.createIdle), on goroutines that outlive one run. The default
// dispatcher starts a goroutine for every run, and an intent's create grows that
// goroutine's stack in the store's write path: copying stacks cost 3 to 4 % of
// intake's CPU. A worker here keeps its grown stack from one run to
// the next (the collector may shrink it while the worker waits, not while it is busy)
// and takes the next mailbox to run; it ends after workerIdle without one, so the
// workers number what the load needs.
type warmDispatcher struct {
	throughput int
	idle       chan func() // unbuffered: a send succeeds only if a worker is waiting
	stop       chan struct{}
	stopOnce   sync.Once
}

// workerIdle is how long a worker waits for another mailbox before it ends.
const workerIdle = time.Second

func newWarmDispatcher(throughput int) *warmDispatcher {
	return &warmDispatcher{throughput: throughput, idle: make(chan func()), stop: make(chan struct{})}
}

// Schedule hands fn to a waiting worker or starts one.
func (d *warmDispatcher) Schedule(fn func()) {
	select {
	case d.idle <- fn:
	default:
		go d.work(fn)
	}
}

// Throughput is how many messages a mailbox handles before it yields its worker.
func (d *warmDispatcher) Throughput() int { return d.throughput }

func (d *warmDispatcher) work(fn func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		fn()
		t.Reset(workerIdle)
		select {
		case fn = <-d.idle:
		case <-t.C:
			return
		case <-d.stop:
			return
		}
	}
}

// close ends the waiting workers; a mailbox scheduled afterwards still runs, on a
// goroutine of its own.
func (d *warmDispatcher) close() { d.stopOnce.Do(func() { close(d.stop) }) }
