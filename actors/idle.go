package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// idleness is a grain's own timer of how long it has been idle. protoactor's receive
// time-out, which grains used, is set and read by the actor's goroutine and cancelled
// by its timer's, with no lock between them: the race detector caught the two at once
// (TestGrainPassivatesAfterLongCommand). Here the timer only sends the grain a message;
// everything else is read and written by the grain's own goroutine.
type idleness struct {
	linger time.Duration // how long idle before the grain stops
	last   time.Time     // when the grain last took a message that counts
	timer  *time.Timer
	// round tells a check from the timer's current arming from one sent by an earlier
	// arming that fired before it was stopped.
	round uint64
}

// idleCheck is the timer's message: look whether the grain has been idle long enough.
type idleCheck struct{ round uint64 }

// start arms the timer for linger, sending the checks to the grain of ctx.
func (d *idleness) start(ctx actor.Context, linger time.Duration) {
	d.stop() // a new round: a check the earlier arming sent is stale
	d.linger, d.last = linger, time.Now()
	self, root, round := ctx.Self(), ctx.ActorSystem().Root, d.round
	d.timer = time.AfterFunc(linger, func() { root.Send(self, idleCheck{round}) })
}

// touch counts a message the grain took: its idleness starts again.
func (d *idleness) touch() { d.last = time.Now() }

// over reports whether the grain has been idle for its linger, when c is its timer's
// current check; otherwise it re-arms the timer for what is left of the linger, or the
// whole of it, so that a grain that stays (a command under way) is looked at again.
func (d *idleness) over(c idleCheck) bool {
	if d.timer == nil || c.round != d.round {
		return false
	}
	left := d.linger - time.Since(d.last)
	if left <= 0 {
		d.timer.Reset(d.linger)
		return true
	}
	d.timer.Reset(left)
	return false
}

// stop disarms the timer; a check it sent already is told apart by its round.
func (d *idleness) stop() {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.round++
}
