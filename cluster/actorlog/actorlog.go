// Package actorlog routes protoactor-go's logging into the service's slog logger, at
// levels that suit an operator rather than a library's author.
//
// protoactor logs to its own stderr handler by default and is chatty where a service is
// quiet: a cluster member writes a hundred INFO lines while it starts, a gossip WARN
// every 300 ms while a peer is dead, and an ERROR for each connection retry. Handed to
// actor.WithLoggerFactory, Factory sends those lines to the service's logger one level
// lower (INFO to DEBUG, WARN to INFO, ERROR to WARN: a peer that went away is an event
// the cluster recovers from, not a fault of this node), and says a line that repeats
// within Quiet only once, at its level, and the repeats at DEBUG.
package actorlog

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Quiet is how long a line with the same message and level is said once at its level;
// its repeats in that time go at DEBUG.
const Quiet = 30 * time.Second

// maxRemembered bounds the messages remembered for Quiet, so that messages with
// varying text cannot grow the map without end; past it the memory starts over.
const maxRemembered = 1024

// Factory is an actor.WithLoggerFactory argument: each actor system logs through l,
// with component=protoactor and the system's id.
func Factory(l *slog.Logger) func(*actor.ActorSystem) *slog.Logger {
	return func(sys *actor.ActorSystem) *slog.Logger {
		return New(l).With("system", sys.ID)
	}
}

// New is a logger for protoactor that writes through l, with its levels lowered and
// its repeats quieted.
func New(l *slog.Logger) *slog.Logger {
	h := &handler{next: l.Handler(), seen: &seen{last: map[key]time.Time{}}, now: time.Now}
	return slog.New(h).With("component", "protoactor")
}

type key struct {
	level slog.Level
	msg   string
}

type seen struct {
	mu   sync.Mutex
	last map[key]time.Time
}

type handler struct {
	next slog.Handler
	seen *seen
	now  func() time.Time
}

// lower is the level a protoactor record is logged at.
func lower(l slog.Level) slog.Level {
	switch {
	case l >= slog.LevelError:
		return slog.LevelWarn
	case l >= slog.LevelWarn:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	// A repeat goes at DEBUG, so whether a record is written is known only once its
	// message is; ask for the lowered level and decide in Handle.
	return h.next.Enabled(ctx, lower(l)) || h.next.Enabled(ctx, slog.LevelDebug)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	level := lower(r.Level)
	if level > slog.LevelDebug && h.repeated(key{level, r.Message}, r.Time) {
		level = slog.LevelDebug
	}
	if !h.next.Enabled(ctx, level) {
		return nil
	}
	out := slog.NewRecord(r.Time, level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.next.Handle(ctx, out)
}

// repeated reports whether the same line was said at its level within Quiet, and
// remembers it if not.
func (h *handler) repeated(k key, t time.Time) bool {
	if t.IsZero() {
		t = h.now()
	}
	h.seen.mu.Lock()
	defer h.seen.mu.Unlock()
	if last, ok := h.seen.last[k]; ok && t.Sub(last) < Quiet {
		return true
	}
	if len(h.seen.last) >= maxRemembered {
		clear(h.seen.last)
	}
	h.seen.last[k] = t
	return false
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{next: h.next.WithAttrs(as), seen: h.seen, now: h.now}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), seen: h.seen, now: h.now}
}
