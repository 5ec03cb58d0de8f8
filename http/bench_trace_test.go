package http

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
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
