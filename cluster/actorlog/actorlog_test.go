package actorlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLevelsAreLoweredAndRepeatsQuieted(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l := New(base)

	l.Info("member joined")   // INFO becomes DEBUG: not written
	l.Warn("gossip failed")   // WARN becomes INFO: written
	l.Warn("gossip failed")   // a repeat within Quiet: DEBUG, not written
	l.Error("connect failed") // ERROR becomes WARN
	l.Debug("detail")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("wrote %d lines, want 2:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "gossip failed") ||
		!strings.Contains(lines[0], "component=protoactor") {
		t.Errorf("first line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "connect failed") {
		t.Errorf("second line: %s", lines[1])
	}
}

func TestDebugShowsEverything(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Info("a")
	l.Warn("b")
	l.Warn("b")
	l.With("k", "v").Error("c")
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 4 {
		t.Fatalf("wrote %d lines, want 4:\n%s", n, out)
	}
	if !strings.Contains(out, `level=DEBUG msg=b`) || !strings.Contains(out, "k=v") {
		t.Errorf("output:\n%s", out)
	}
}
