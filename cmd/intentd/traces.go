package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/intentd/intentd/internal/buildinfo"
)

// TraceConfig is where the service sends its spans (docs/operating.md, "Traces").
type TraceConfig struct {
	// Endpoint is the base URL of an OpenTelemetry collector's OTLP/HTTP receiver,
	// http://HOST:PORT or https://HOST:PORT[/PATH]; /v1/traces is added to its path, as
	// for OTEL_EXPORTER_OTLP_ENDPOINT. Empty: no traces, and every span the code starts
	// is the no-op tracer's.
	Endpoint string
	// Sample is the share of the traces that start here which are recorded, 0 to 1. A
	// request that carries a traceparent is recorded as its caller decided.
	Sample float64
}

// traceShutdownTimeout bounds the sending of the last spans on shutdown: a collector
// that does not answer must not hold the stop of the service.
const traceShutdownTimeout = 5 * time.Second

// validate refuses an endpoint the exporter could not send to, at start rather than
// at the first span.
func (c TraceConfig) validate() error {
	if c.Sample < 0 || c.Sample > 1 {
		return fmt.Errorf("--trace-sample %v: want a share from 0 to 1", c.Sample)
	}
	if c.Endpoint == "" {
		return nil
	}
	_, err := tracesURL(c.Endpoint)
	return err
}

// tracesURL is the URL spans are posted to: the endpoint's path with /v1/traces added.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("--otlp-endpoint %q: %v", endpoint, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("--otlp-endpoint %q: want an http:// or https:// URL of the collector's OTLP/HTTP receiver (port 4318 by default)", endpoint)
	case u.Host == "":
		return "", fmt.Errorf("--otlp-endpoint %q: the URL names no host", endpoint)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("--otlp-endpoint %q: want scheme, host, port and path only; headers such as a key go in OTEL_EXPORTER_OTLP_HEADERS", endpoint)
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/v1/traces"
	return u.String(), nil
}

// openTracing makes the tracer provider the engine and the HTTP server take, when
// --otlp-endpoint asks for traces: spans are batched and posted to the collector off
// the requests' path, and dropped rather than waited for when it falls behind. A
// provider a test set before Run is taken as it is. Without either, the provider stays
// nil and the packages use otel's global one, which does nothing.
func (m *Main) openTracing(ctx context.Context) error {
	c := m.Config.Traces
	if m.tracerProvider != nil || c.Endpoint == "" {
		return nil
	}
	target, err := tracesURL(c.Endpoint)
	if err != nil {
		return err
	}
	// The exporter reads OTEL_EXPORTER_OTLP_HEADERS, _CERTIFICATE, _TIMEOUT and
	// _COMPRESSION (and their TRACES_ forms) itself; the URL given here wins over
	// the endpoint variables.
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(target))
	if err != nil {
		return fmt.Errorf("--otlp-endpoint: %w", err)
	}
	attrs := []attribute.KeyValue{
		attribute.String("service.name", "intentd"),
		attribute.String("service.version", buildinfo.Read().Version),
	}
	if b := m.Config.Cluster.Bind; b != "" {
		attrs = append(attrs, attribute.String("service.instance.id", b))
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES come last, so that an operator
	// may name the service or the node otherwise.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil {
		return fmt.Errorf("trace resource: %w", err)
	}
	log := m.logger.With("component", "traces")
	// The exporter's failures (a collector down) are the operator's to see, once a
	// batch, not the caller's: they never reach a request.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("traces not sent", "err", err) }))
	m.traces = sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.Sample))),
	)
	m.tracerProvider = m.traces
	log.Info("sending traces", "endpoint", target, "sample", c.Sample)
	return nil
}

// tracing is the provider and propagator the engine and the HTTP server take: nil
// for both when traces are off, so that each uses otel's global no-op.
func (m *Main) tracing() (trace.TracerProvider, propagation.TextMapPropagator) {
	if m.tracerProvider == nil {
		return nil, nil
	}
	return m.tracerProvider, propagation.TraceContext{}
}

// closeTracing sends the spans still batched and stops the exporter, within
// traceShutdownTimeout. A collector that cannot be reached then costs the last spans,
// not the stop: the failure is logged, and the stop goes on.
func (m *Main) closeTracing() {
	if m.traces == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceShutdownTimeout)
	defer cancel()
	if err := m.traces.Shutdown(ctx); err != nil && m.logger != nil {
		m.logger.Warn("the last traces were not sent", "err", err)
	}
}
