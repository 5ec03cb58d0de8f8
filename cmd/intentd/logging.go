package main

import (
	"log/slog"
	"os"
	"time"

	intenthttp "github.com/intentd/intentd/http"
)

// openLogger makes the service's logger from --log-format and --log-level, writing to
// Stderr.
func (m *Main) openLogger() error {
	c := m.Config.Log
	level, err := parseLevel(c.Level)
	if err != nil {
		return err
	}
	hopts := &slog.HandlerOptions{Level: level}
	out := m.Stderr
	if f, ok := out.(*os.File); ok {
		// A line per request written on its own costs a busy server more than the
		// request's other bookkeeping; lines wait up to 20 ms to share a write.
		m.logw = intenthttp.NewLogWriter(f, 20*time.Millisecond)
		out = m.logw
	}
	var h slog.Handler = slog.NewTextHandler(out, hopts)
	if c.Format == "json" {
		h = slog.NewJSONHandler(out, hopts)
	}
	if m.logw != nil {
		h = m.logw.Handler(h)
	}
	m.logger = slog.New(h)
	return nil
}
