package http

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/syncbuf"
)

// TestLogWriter: info lines wait for the delay, a warning takes them out at once and
// in order, and Flush empties what is held.
func TestLogWriter(t *testing.T) {
	out := &syncbuf.Buffer{}
	lw := NewLogWriter(out, time.Hour)
	log := slog.New(lw.Handler(slog.NewTextHandler(lw, nil))).With("component", "http")
	log.Info("request", "status", 200)
	if out.String() != "" {
		t.Fatalf("an info line was written at once: %q", out.String())
	}
	log.Warn("trouble")
	got := out.String()
	if i, j := strings.Index(got, "msg=request"), strings.Index(got, "msg=trouble"); i < 0 || j < i || !strings.Contains(got, "component=http") {
		t.Fatalf("after a warning: %q", got)
	}
	log.Info("request", "status", 201)
	if err := lw.Flush(); err != nil || !strings.Contains(out.String(), "status=201") {
		t.Fatalf("after Flush (%v): %q", err, out.String())
	}

	quick := NewLogWriter(out, 5*time.Millisecond)
	slog.New(quick.Handler(slog.NewTextHandler(quick, nil))).Info("late")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "msg=late") {
		if time.Now().After(deadline) {
			t.Fatal("a held line was never written")
		}
		time.Sleep(time.Millisecond)
	}
}
