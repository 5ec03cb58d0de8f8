package http

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// LogWriter holds log lines for a moment and writes them out together. Written one
// by one to standard error, each request's line is a system call of its own, which
// costs a busy server more than formatting it; gathered for a few milliseconds, many
// lines share one. Records at warn and above are written at once, with everything
// before them, by the handler Handler returns, so that a problem is never left
// waiting in memory; Flush writes the rest.
type LogWriter struct {
	w     io.Writer
	delay time.Duration

	mu      sync.Mutex
	buf     []byte
	pending bool // a flush is scheduled
	timer   *time.Timer
}

// logWriterLimit is how much a LogWriter holds before it writes without waiting.
const logWriterLimit = 32 << 10

// NewLogWriter returns a LogWriter over w that writes what it holds at most delay
// after the first line of it.
func NewLogWriter(w io.Writer, delay time.Duration) *LogWriter {
	l := &LogWriter{w: w, delay: delay}
	l.timer = time.AfterFunc(time.Hour, func() { _ = l.Flush() })
	l.timer.Stop()
	return l
}

// Write holds p (one log record) until the delay has passed or enough is held.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) >= logWriterLimit {
		return len(p), l.flushLocked()
	}
	if !l.pending {
		l.pending = true
		l.timer.Reset(l.delay)
	}
	return len(p), nil
}

// Flush writes what is held.
func (l *LogWriter) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushLocked()
}

func (l *LogWriter) flushLocked() error {
	l.pending = false
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.w.Write(l.buf)
	if cap(l.buf) > 4*logWriterLimit {
		l.buf = nil // a burst of huge lines is not kept for ever
	} else {
		l.buf = l.buf[:0]
	}
	return err
}

// Handler wraps h, which writes to l, so that records at warn and above are written
// at once.
func (l *LogWriter) Handler(h slog.Handler) slog.Handler { return &urgentHandler{Handler: h, l: l} }

type urgentHandler struct {
	slog.Handler
	l *LogWriter
}

func (u *urgentHandler) Handle(ctx context.Context, r slog.Record) error {
	err := u.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := u.l.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (u *urgentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &urgentHandler{Handler: u.Handler.WithAttrs(attrs), l: u.l}
}

func (u *urgentHandler) WithGroup(name string) slog.Handler {
	return &urgentHandler{Handler: u.Handler.WithGroup(name), l: u.l}
}
