package natsstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestServerLoggerLevels: a route to a peer that cannot be dialled, which every start
// of a cluster's servers meets, is a warning; the server's other errors stay errors.
func TestServerLoggerLevels(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		args         []any
		want         string
	}{
		{"a route not up yet", "Error trying to connect to route (attempt %v): %v", []any{1, "dial tcp 127.0.0.1:6222: connect: connection refused"}, "level=WARN"},
		{"another error", "JetStream failed to store a msg on stream '%s > %s': %v", []any{"$G", "INTENTD", "disk full"}, "level=ERROR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			serverLogger{l: slog.New(slog.NewTextHandler(&buf, nil))}.Errorf(tc.format, tc.args...)
			if !strings.Contains(buf.String(), tc.want) || !strings.Contains(buf.String(), "component=nats") {
				t.Fatalf("logged %q, want %s", buf.String(), tc.want)
			}
		})
	}
}
