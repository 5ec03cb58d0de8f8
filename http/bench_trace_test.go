package http

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/evidence"
)

// discardSpans is a span processor that drops every span once ended: what the SDK
// costs a request, without an exporter's.
type discardSpans struct{}

func (discardSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discardSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discardSpans) Shutdown(context.Context) error                  { return nil }
func (discardSpans) ForceFlush(context.Context) error                { return nil }

// BenchmarkRequestChain serves GET /healthz through the request chain alone (route,
// span, CORS, metrics, log level): "off" with otel's global no-op provider, what
// every server without --otlp-endpoint runs; "on" with the SDK recording every span
// and dropping it. ns/op and allocs/op are the chain's own cost of traces.
func BenchmarkRequestChain(b *testing.B) {
	cases := []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"off", nil},
		{"on", sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discardSpans{}))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			srv := NewServer(nil, Options{TracerProvider: c.tp})
			req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("GET /healthz: %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkTracedProposal is BenchmarkAgentProposal's unsigned case at 32 callers,
// with traces off and with the SDK recording every span of the request, the engine and
// proving, and dropping it (an exporter's own cost aside): cpu-µs/op, B/op and
// allocs/op are what a proposal's nine spans cost the process.
func BenchmarkTracedProposal(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			var tp trace.TracerProvider
			if on {
				tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discardSpans{}))
			}
			e := benchTracedEngine(b, b.N, tp)
			pid, err := e.PutPolicy(context.Background(), evidence.DemoPolicy)
			if err != nil {
				b.Fatal(err)
			}
			srv := NewServer(e, Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
			reqs := openProposals(b, e, b.N, pid, "", nil)
			b.ReportAllocs()
			driveDecisions(b, e, srv, 32, reqs, nil)
		})
	}
}

// benchTracedEngine is benchAgentEngine's engine with the tracer provider tp.
func benchTracedEngine(b *testing.B, n int, tp trace.TracerProvider) *actors.Engine {
	e, _ := benchEngine(b, n, func(cfg *actors.Config) { cfg.TracerProvider = tp })
	return e
}
