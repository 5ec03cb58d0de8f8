package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

// checkpointLog is a log read from elsewhere whose checkpoint is fixed.
type checkpointLog struct {
	intentd.LogReader
	cp string
}

func (c checkpointLog) Checkpoint(context.Context) ([]byte, error) { return []byte(c.cp), nil }

// TestOriginChecked: a member that keeps no log says once, at error, that the log it
// passes on has another origin than the one its GET /info names, and passes the
// checkpoint on unchanged; a log of its origin is passed on in silence.
func TestOriginChecked(t *testing.T) {
	for _, c := range []struct {
		name, cp string
		lines    int
	}{
		{"the same origin", "log.example.com/a\n5\nhash=\n\n— sig\n", 0},
		{"another origin", "log.example.com/b\n5\nhash=\n\n— sig\n", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			o := &originChecked{LogReader: checkpointLog{cp: c.cp}, origin: "log.example.com/a", log: slog.New(slog.NewTextHandler(&out, nil))}
			for range 3 {
				cp, err := o.Checkpoint(context.Background())
				if err != nil || string(cp) != c.cp {
					t.Fatalf("checkpoint = %q, %v; want it passed on", cp, err)
				}
			}
			if n := strings.Count(out.String(), "level=ERROR"); n != c.lines {
				t.Fatalf("%d error lines, want %d:\n%s", n, c.lines, out.String())
			}
			if c.lines > 0 && !strings.Contains(out.String(), "--tlog-origin log.example.com/b") {
				t.Errorf("the line does not say which origin to start with:\n%s", out.String())
			}
		})
	}
}
