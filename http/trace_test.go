package http

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/intentd/intentd/internal/spantree"
	"github.com/julienschmidt/httprouter"
)

// TestRequestSpans serves requests with a tracer provider that keeps its spans: each
// request's span is named by its route's pattern (the method alone for a request no
// route serves), carries the route, the status and the path's id, continues a caller's
// traceparent, and is marked failed only for a 5xx.
func TestRequestSpans(t *testing.T) {
	const (
		id     = "6a1f0d3c-3e0b-4c53-9a5e-1f8f4f1a2b3c"
		parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	srv := NewServer(openEngine(t), Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	tests := []struct {
		name, method, path, traceparent string
		want                            string
	}{
		{"health", "GET", "/healthz", "",
			"GET /healthz kind=server http.request.method=GET http.route=/healthz http.response.status_code=200\n"},
		{"id of the path", "GET", "/intents/" + id + "/status", "",
			"GET /intents/:id/status kind=server http.request.method=GET http.route=/intents/:id/status http.response.status_code=404 intent.id=<id> error.code=intent_not_found\n"},
		{"no route", "GET", "/no/such/" + id, "",
			"GET kind=server http.request.method=GET http.route=unmatched http.response.status_code=404 error.code=not_found\n"},
		{"caller's trace", "GET", "/healthz", parent,
			"GET /healthz kind=server http.request.method=GET http.route=/healthz http.response.status_code=200 (remote parent)\n"},
	}
	attrs := []string{"http.request.method", "http.route", "http.response.status_code", "intent.id", "error.code"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp.Reset()
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.traceparent != "" {
				req.Header.Set("traceparent", tt.traceparent)
			}
			srv.ServeHTTP(httptest.NewRecorder(), req)
			spans := exp.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1: %v", len(spans), spans)
			}
			if got := spantree.Render(spans, spantree.Options{Attrs: attrs, Replace: map[string]string{id: "<id>"}}); got != tt.want {
				t.Fatalf("span:\n%s\nwant:\n%s", got, tt.want)
			}
			if tt.traceparent != "" && spans[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
				t.Fatalf("trace %s, want the caller's", spans[0].SpanContext.TraceID())
			}
		})
	}
}

// TestRequestSpansOff serves a request that carries a traceparent with no tracer
// provider: it is answered as before, and its context holds no span.
func TestRequestSpansOff(t *testing.T) {
	var seen trace.SpanContext
	srv := NewServer(openEngine(t), Options{})
	h := srv.chain(&route{method: "GET", pattern: "/x"}, false, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		seen = trace.SpanContextFromContext(r.Context())
	})
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	h(httptest.NewRecorder(), req, nil)
	if seen.IsValid() {
		t.Fatalf("the handler's context holds span %v with traces off", seen)
	}
}
