package spantree

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func spanContext(tid byte, sid byte, remote bool) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{tid}, SpanID: trace.SpanID{sid}, TraceFlags: trace.FlagsSampled, Remote: remote,
	})
}

func TestRender(t *testing.T) {
	t0 := time.Unix(0, 0)
	root := tracetest.SpanStub{Name: "POST /x/:id", SpanKind: trace.SpanKindServer, SpanContext: spanContext(1, 1, false),
		Parent: spanContext(1, 9, true), StartTime: t0,
		Attributes: []attribute.KeyValue{attribute.String("id", "abc"), attribute.Int("status", 200)}}
	late := tracetest.SpanStub{Name: "b", SpanKind: trace.SpanKindInternal, SpanContext: spanContext(1, 3, false),
		Parent: spanContext(1, 1, false), StartTime: t0.Add(2 * time.Millisecond),
		Status: sdktrace.Status{Code: codes.Error, Description: "busy"}}
	early := tracetest.SpanStub{Name: "a", SpanKind: trace.SpanKindInternal, SpanContext: spanContext(1, 2, false),
		Parent: spanContext(1, 1, false), StartTime: t0.Add(time.Millisecond)}
	other := tracetest.SpanStub{Name: "elsewhere", SpanKind: trace.SpanKindClient, SpanContext: spanContext(2, 4, false), StartTime: t0}
	all := tracetest.SpanStubs{late, root, early, other}

	tests := []struct {
		name  string
		spans tracetest.SpanStubs
		opts  Options
		want  string
	}{
		{"tree in start order", Of(all, trace.TraceID{1}), Options{Attrs: []string{"status", "id"}, Replace: map[string]string{"abc": "<id>"}},
			"POST /x/:id kind=server status=200 id=<id> (remote parent)\n  a kind=internal\n  b kind=internal status=error:busy\n"},
		{"label", Of(all, trace.TraceID{2}), Options{Label: func(tracetest.SpanStub) string { return "node" }},
			"elsewhere [node] kind=client\n"},
		{"no spans", nil, Options{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Render(tt.spans, tt.opts); got != tt.want {
				t.Fatalf("Render:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
	if s, ok := Find(all, "a"); !ok || s.SpanContext.SpanID() != (trace.SpanID{2}) {
		t.Fatalf("Find(a) = %v, %v", s.Name, ok)
	}
	if _, ok := Find(all, "none"); ok {
		t.Fatal("Find found a span that is not there")
	}
}
