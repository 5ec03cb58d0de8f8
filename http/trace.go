package http

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the request spans.
const tracerName = "github.com/intentd/intentd/http"

// The attributes of a request's span, named as OpenTelemetry's HTTP conventions name
// them, and the code of an error answer as the API's body gives it.
const (
	attrMethod    = attribute.Key("http.request.method")
	attrRoute     = attribute.Key("http.route")
	attrStatus    = attribute.Key("http.response.status_code")
	attrErrorCode = attribute.Key("error.code")
)

// serverKind is the option of every request span, made once: an option slice passed
// as it is costs the no-op tracer no allocation.
var serverKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// requestTracing is how the chain traces requests: the tracer, nil when traces are
// off, and the propagator that reads a caller's traceparent.
type requestTracing struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// noSpan is the span of every request when traces are off: OpenTelemetry's no-op span,
// made once.
var noSpan = trace.SpanFromContext(context.Background())

// newRequestTracing takes the provider and propagator of opts. Without a provider no
// tracer is called at all: even a no-op one would cost each request a span value and
// a context. Without a propagator a caller's traceparent is not read.
func newRequestTracing(opts Options) requestTracing {
	if opts.TracerProvider == nil {
		return requestTracing{}
	}
	prop := opts.Propagator
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator()
	}
	return requestTracing{tracer: opts.TracerProvider.Tracer(tracerName), propagator: prop}
}

// spanName is the name of the spans of a route: its method and pattern, never the
// path, so that the ids in paths do not make a name per intent. A request no route
// serves is named by its method alone.
func spanName(rt *route) string {
	if rt == nil {
		return ""
	}
	return rt.method + " " + rt.pattern
}

// start begins the span of a request, a child of the caller's span when the request
// carries a traceparent the propagator reads. name is spanName's, "" for a request no
// route serves; pattern is the route label.
func (t requestTracing) start(r *http.Request, name, pattern string) (context.Context, trace.Span) {
	if t.tracer == nil {
		return r.Context(), noSpan
	}
	ctx := t.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	method := methodLabel(r.Method)
	if name == "" {
		name = method
	}
	ctx, span := t.tracer.Start(ctx, name, serverKind...)
	if span.IsRecording() {
		span.SetAttributes(attrMethod.String(method), attrRoute.String(pattern))
	}
	return ctx, span
}

// end records the answer on a request's span and ends it. A 5xx answer is the
// server's failure and marks the span failed; a 4xx is the caller's, and only its
// code is kept, as OpenTelemetry's conventions for servers have it. idKey and id are
// the route's id and its log key (intent_id...), kept as intent.id and its kin.
func (t requestTracing) end(span trace.Span, status int, code, idKey, id string) {
	if span.IsRecording() {
		span.SetAttributes(attrStatus.Int(status))
		if idKey != "" && id != "" {
			span.SetAttributes(attribute.String(strings.Replace(idKey, "_", ".", 1), clip(id)))
		}
		if code != "" {
			span.SetAttributes(attrErrorCode.String(code))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	}
	span.End()
}
