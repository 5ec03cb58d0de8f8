package actors

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestTraceparent reads the trace context of commands: a W3C traceparent gives the
// owner's context its remote parent, and is written back as it came; anything else
// leaves the context without a span.
func TestTraceparent(t *testing.T) {
	tests := []struct {
		name, tp string
		valid    bool
	}{
		{"sampled", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", true},
		{"not sampled", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", true},
		{"none", "", false},
		{"zero trace id", "00-00000000000000000000000000000000-b7ad6b7169203331-01", false},
		{"unknown version ff", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", false},
		{"short", "00-0af7651916cd43dd-b7ad6b7169203331-01", false},
		{"not hex", "00-0af7651916cd43dd8448eb211c80319z-b7ad6b7169203331-01", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := fromTraceparent(context.Background(), tt.tp)
			sc := trace.SpanContextFromContext(ctx)
			if sc.IsValid() != tt.valid {
				t.Fatalf("span context %v valid = %v, want %v", sc, sc.IsValid(), tt.valid)
			}
			if !tt.valid {
				if got := traceparentOf(ctx); got != "" || spanOf(ctx) != nil {
					t.Fatalf("a context without a span gives traceparent %q", got)
				}
				return
			}
			if !sc.IsRemote() {
				t.Fatal("the sender's span is not remote")
			}
			if got := traceparentOf(ctx); got != tt.tp {
				t.Fatalf("traceparent written back %q, want %q", got, tt.tp)
			}
			if p := spanOf(ctx); p == nil || !p.Equal(sc) {
				t.Fatalf("spanOf = %v, want %v", p, sc)
			}
		})
	}
}

// FuzzTraceparent reads any trace context a command may carry, as a member that is not
// intentd's, or a damaged message, could send: it never panics, and one it takes is
// written back to a value that reads as the same span.
func FuzzTraceparent(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
	f.Add("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09-extra")
	f.Add("")
	f.Fuzz(func(t *testing.T, tp string) {
		sc := trace.SpanContextFromContext(fromTraceparent(context.Background(), tp))
		if !sc.IsValid() {
			return
		}
		again := trace.SpanContextFromContext(fromTraceparent(context.Background(), traceparentOf(trace.ContextWithSpanContext(context.Background(), sc))))
		if again.TraceID() != sc.TraceID() || again.SpanID() != sc.SpanID() || again.TraceFlags() != sc.TraceFlags() {
			t.Fatalf("%q read as %v, written back and read as %v", tp, sc, again)
		}
	})
}
