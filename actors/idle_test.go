package actors

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// idleProbe is an actor that keeps an idleness and counts the checks it finds over.
type idleProbe struct {
	idle   idleness
	linger time.Duration
	over   atomic.Int32
	checks atomic.Int32
}

type touchProbe struct{}
type restartProbe struct{ linger time.Duration }

func (p *idleProbe) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.idle.start(ctx, p.linger)
	case touchProbe:
		p.idle.touch()
	case restartProbe:
		p.idle.start(ctx, m.linger)
	case idleCheck:
		p.checks.Add(1)
		if p.idle.over(m) {
			p.over.Add(1)
		}
	case *actor.Stopped:
		p.idle.stop()
	}
}

// TestIdleness checks a grain's own idle timer: it finds the grain idle once its linger
// has passed with no message that counts, not while messages keep coming, and a new
// arming (a grain past the bound, which lingers less) replaces the one before.
func TestIdleness(t *testing.T) {
	tests := []struct {
		name   string
		linger time.Duration
		drive  func(root *actor.RootContext, pid *actor.PID)
		over   bool
	}{
		{"idle", 50 * time.Millisecond, func(*actor.RootContext, *actor.PID) {}, true},
		{"kept busy for twice its linger", 500 * time.Millisecond, func(root *actor.RootContext, pid *actor.PID) {
			for range 100 {
				root.Send(pid, touchProbe{})
				time.Sleep(10 * time.Millisecond)
			}
		}, false},
		{"armed again, shorter", time.Hour, func(root *actor.RootContext, pid *actor.PID) {
			root.Send(pid, restartProbe{linger: 20 * time.Millisecond})
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			system := actor.NewActorSystem()
			p := &idleProbe{linger: tt.linger}
			pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
			defer system.Root.Stop(pid)
			tt.drive(system.Root, pid)
			deadline := time.Now().Add(2 * time.Second)
			for tt.over && p.over.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := p.over.Load() > 0; got != tt.over {
				t.Fatalf("idle found over: %v, want %v (%d checks)", got, tt.over, p.checks.Load())
			}
		})
	}
}
