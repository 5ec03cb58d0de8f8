package main

import (
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/google/uuid"
	"github.com/intentd/intentd/internal/golden"
	"github.com/intentd/intentd/internal/spantree"
)

// traceAttrs are the attributes the golden trees show.
var traceAttrs = []string{"http.request.method", "http.route", "http.response.status_code", "intent.id",
	"intent.state", "intent.failure_kind", "error.code", "cluster.command"}

// withTraces gives the server a tracer provider that keeps its spans in memory.
func withTraces(exp *tracetest.InMemoryExporter) serverSetup {
	return func(m *Main) {
		m.tracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	}
}

// newTraceparent is a W3C traceparent of a new sampled trace, as a caller that traces
// sends it, and the trace's id.
func newTraceparent(t *testing.T) (string, trace.TraceID) {
	t.Helper()
	var tid trace.TraceID
	var sid trace.SpanID
	if _, err := rand.Read(tid[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := rand.Read(sid[:]); err != nil {
		t.Fatal(err)
	}
	return "00-" + hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(sid[:]) + "-01", tid
}

// waitSpans waits until trace id has n spans, and returns them. A span is exported
// when it ends, and the steps that follow an answer (proving) end after it.
func waitSpans(t *testing.T, exp *tracetest.InMemoryExporter, id trace.TraceID, n int) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans := spantree.Of(exp.GetSpans(), id)
		if len(spans) >= n || time.Now().After(deadline) {
			if len(spans) != n {
				t.Fatalf("trace %s has %d spans, want %d:\n%s", id, len(spans), n, spantree.Render(spans, spantree.Options{}))
			}
			return spans
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTracesOneNode decides intents on one node with a tracer provider that keeps its
// spans, each request sent with a caller's traceparent, and compares each trace with
// its golden tree: the request's span continues the caller's, the intent actor's span
// is its child, and proving (extraction, evaluation, the receipt's signature) and the
// store's writes hang under the actor's, all in the caller's one trace.
func TestTracesOneNode(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	s := startServer(t, nil, withTraces(exp))
	tests := []struct {
		name  string
		spans int
		// do sends the traced request, with header tp, for a new intent id of its own
		// or one it submits; it returns the intent's id.
		do func(t *testing.T, tp string) string
	}{
		{"submit", 3, func(t *testing.T, tp string) string {
			id := uuid.NewString()
			intent := s.intentJSON(id)
			if r := s.do("POST", "/intents", "application/json", authored(t, intent, s.signEd25519(intent)), "traceparent", tp); r.status != http.StatusOK {
				t.Fatalf("POST /intents: %s", r)
			}
			return id
		}},
		{"success", 9, func(t *testing.T, tp string) string {
			id := s.submit()
			proposeTraced(t, s, id, solutionPasses, tp, http.StatusOK)
			s.waitStatus(id, "success")
			return id
		}},
		{"extraction failure", 7, func(t *testing.T, tp string) string {
			id := s.submit()
			proposeTraced(t, s, id, solutionUnknown, tp, http.StatusOK)
			s.waitStatus(id, "failure")
			return id
		}},
		{"second proposal", 2, func(t *testing.T, tp string) string {
			id := s.submit()
			if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
				t.Fatalf("first proposal: %s", r)
			}
			proposeTraced(t, s, id, solutionBlackL, tp, http.StatusConflict)
			return id
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, tid := newTraceparent(t)
			id := tt.do(t, tp)
			spans := waitSpans(t, exp, tid, tt.spans)
			got := spantree.Render(spans, spantree.Options{Attrs: traceAttrs, Replace: map[string]string{id: "<intent>"}})
			golden.Check(t, filepath.Join("testdata", "traces", strings.ReplaceAll(tt.name, " ", "_")+".golden"), got)
		})
	}
}

// proposeTraced proposes solution for intent id with the traceparent tp, and wants
// status back.
func proposeTraced(t *testing.T, s *testServer, id, solution, tp string, status int) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"solution": solution})
	if r := s.do("POST", "/intents/"+id+"/proposal", "application/json", body, "traceparent", tp); r.status != status {
		t.Fatalf("proposal of %s: %s, want %d", solution, r, status)
	}
}

// otlpCollector is an OTLP/HTTP receiver that keeps the spans posted to it.
type otlpCollector struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
	names []string
	attrs map[string]string // the resource's string attributes
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{attrs: map[string]string{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, err := io.ReadAll(body)
		var req collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(data, &req)
		}
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("the collector got %s %s (%s): %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.paths = append(c.paths, r.URL.Path)
		for _, rs := range req.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				c.attrs[a.GetKey()] = a.GetValue().GetStringValue()
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					c.names = append(c.names, sp.GetName())
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(c.Close)
	return c
}

// TestOTLPExport runs intentd with --otlp-endpoint on a collector of the test's and
// decides an intent: on shutdown the batched spans are posted to /v1/traces under the
// endpoint's path, as OTLP protobuf, with the engine's steps and the service's name.
func TestOTLPExport(t *testing.T) {
	t.Parallel()
	c := newOTLPCollector(t)
	s := startServer(t, []string{"--otlp-endpoint", c.URL + "/otlp/"})
	id := s.submit()
	if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal: %s", r)
	}
	s.waitStatus(id, "success")
	if err := s.m.Close(); err != nil { // sends what the batch still holds
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.paths) == 0 || slices.IndexFunc(c.paths, func(p string) bool { return p != "/otlp/v1/traces" }) >= 0 {
		t.Fatalf("the collector was posted to %v, want /otlp/v1/traces", c.paths)
	}
	for _, name := range []string{"POST /intents", "POST /intents/:id/proposal", "intent.propose", "intent.prove",
		"evidence.extract", "policy.evaluate", "receipt.sign", "store.begin_processing", "store.finish"} {
		if !slices.Contains(c.names, name) {
			t.Errorf("no span %q among %v", name, c.names)
		}
	}
	if c.attrs["service.name"] != "intentd" {
		t.Errorf("resource attributes %v, want service.name intentd", c.attrs)
	}
}

// TestTraceFlags checks what --otlp-endpoint and --trace-sample take and refuse.
func TestTraceFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    TraceConfig
		wantErr string
	}{
		{"off by default", nil, nil, TraceConfig{Sample: 1}, ""},
		{"endpoint", []string{"--otlp-endpoint", "http://127.0.0.1:4318"}, nil, TraceConfig{Endpoint: "http://127.0.0.1:4318", Sample: 1}, ""},
		{"environment", nil, map[string]string{"INTENTD_OTLP_ENDPOINT": "https://otel.example", "INTENTD_TRACE_SAMPLE": "0.25"},
			TraceConfig{Endpoint: "https://otel.example", Sample: 0.25}, ""},
		{"no scheme", []string{"--otlp-endpoint", "127.0.0.1:4318"}, nil, TraceConfig{}, "--otlp-endpoint"},
		{"grpc scheme", []string{"--otlp-endpoint", "grpc://collector:4317"}, nil, TraceConfig{}, "http:// or https://"},
		{"no host", []string{"--otlp-endpoint", "http:///v1"}, nil, TraceConfig{}, "names no host"},
		{"query", []string{"--otlp-endpoint", "http://collector:4318/?key=secret"}, nil, TraceConfig{}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"sample above 1", []string{"--trace-sample", "1.5"}, nil, TraceConfig{}, "--trace-sample 1.5"},
		{"negative sample", []string{"--trace-sample", "-0.1"}, nil, TraceConfig{}, "--trace-sample -0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseFlags(tt.args, tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Config.Traces != tt.want {
				t.Fatalf("traces = %+v, want %+v", m.Config.Traces, tt.want)
			}
		})
	}
}

// TestTracesURL checks where spans are posted for an endpoint.
func TestTracesURL(t *testing.T) {
	t.Parallel()
	for endpoint, want := range map[string]string{
		"http://collector:4318":       "http://collector:4318/v1/traces",
		"http://collector:4318/":      "http://collector:4318/v1/traces",
		"https://otel.example/otlp":   "https://otel.example/otlp/v1/traces",
		"https://otel.example/otlp//": "https://otel.example/otlp/v1/traces",
	} {
		t.Run(endpoint, func(t *testing.T) {
			got, err := tracesURL(endpoint)
			if err != nil || got != want {
				t.Fatalf("tracesURL(%q) = %q, %v; want %q", endpoint, got, err, want)
			}
		})
	}
}
