package actors

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/cluster/clusterpb"
	"github.com/intentd/intentd/evidence"
)

// tracerName is the instrumentation scope of the engine's spans.
const tracerName = "github.com/intentd/intentd/actors"

// The attributes of the engine's spans (docs/operating.md, "Traces").
const (
	attrIntentID  = attribute.Key("intent.id")
	attrState     = attribute.Key("intent.state")
	attrFailure   = attribute.Key("intent.failure_kind")
	attrErrorCode = attribute.Key("error.code")
	attrCommand   = attribute.Key("cluster.command")
)

// Span names. They name a step, never an id, so that a tracing backend groups every
// intent's step under one name.
const (
	spanCreate          = "intent.create"
	spanPropose         = "intent.propose"
	spanExpire          = "intent.expire"
	spanResume          = "intent.resume"
	spanFinish          = "intent.finish"
	spanProve           = "intent.prove"
	spanExtract         = "evidence.extract"
	spanEvaluate        = "policy.evaluate"
	spanSign            = "receipt.sign"
	spanStoreCreate     = "store.create_intent"
	spanStoreProcessing = "store.begin_processing"
	spanStoreFinish     = "store.finish"
)

// traceContext is the one propagation format of the commands between members: the W3C
// traceparent header's value travels in each command's trace_context field.
var traceContext propagation.TraceContext

// traceparent is the W3C header that carries a span's context.
const traceparent = "traceparent"

// noSpan is the span of every step when traces are off: OpenTelemetry's no-op span,
// made once.
var noSpan = trace.SpanFromContext(context.Background())

// newTracer is the engine's tracer of the provider given; nil without one: traces are
// off. A no-op provider (otel's global one while none is installed) would still cost
// each step a span value and a context, about 27 allocations and 2.4 KB a decided
// proposal (docs/benchmarks.md, "Traces"), so without a provider no tracer is called.
func newTracer(p trace.TracerProvider) trace.Tracer {
	if p == nil {
		return nil
	}
	return p.Tracer(tracerName)
}

// span starts a span of one step of intent id's life under the span ctx carries.
// Attributes are set only on a span that records. Without a tracer it returns ctx and
// the no-op span: a step costs a nil check.
func (e *Engine) span(ctx context.Context, name, id string) (context.Context, trace.Span) {
	if e.tracer == nil {
		return ctx, noSpan
	}
	ctx, s := e.tracer.Start(ctx, name)
	if s.IsRecording() {
		s.SetAttributes(attrIntentID.String(id))
	}
	return ctx, s
}

// endSpan ends s, with err's code when err is not nil. The span says only the code, as
// an error's answer does: the cause of an internal error may name what only the log
// should, and stays there. Only the service's own failures (internal, busy) mark the
// span failed; a refusal of what a caller asked (a second proposal, an unknown intent)
// is the step working, as a 4xx is for OpenTelemetry's HTTP servers.
func endSpan(s trace.Span, err error) {
	if err != nil && s.IsRecording() {
		code := intentd.ErrorCode(err)
		s.SetAttributes(attrErrorCode.String(code))
		if k := intentd.ErrorKind(err); k == intentd.KindInternal || k == intentd.KindBusy {
			s.SetStatus(codes.Error, code)
		}
	}
	s.End()
}

// endExtractSpan ends the span of an extraction, marking it failed with the kind of
// the extractor's error (not_found, timeout, unreachable...), which says what failed
// as the outcome's reason does.
func endExtractSpan(s trace.Span, err error) {
	if err != nil && s.IsRecording() {
		code := string(evidence.KindFailed)
		if ee, ok := errors.AsType[*evidence.Error](err); ok {
			code = string(ee.Kind)
		}
		s.SetAttributes(attrErrorCode.String(code))
		s.SetStatus(codes.Error, code)
	}
	s.End()
}

// storeOutcomes name the store's answers that a write's span records, by the domain's
// errors the stores return; any other error is "store_error".
var storeOutcomes = []struct {
	err  error
	code string
}{
	{intentd.ErrExists, "exists"},
	{intentd.ErrStale, "stale"},
	{intentd.ErrPolicyNotFound, "policy_not_found"},
	{intentd.ErrNotFound, "not_found"},
	{intentd.ErrStorageFull, "storage_full"},
	{intentd.ErrStoreClosed, "store_closed"},
}

// endStoreSpan ends the span of a store's write, marking it failed with what the store
// answered. A store's errors are not the API's, so that endSpan would call them all
// internal; a stale write or a taken id is worth telling apart from a fault.
func endStoreSpan(s trace.Span, err error) {
	if err != nil && s.IsRecording() {
		code := "store_error"
		for _, o := range storeOutcomes {
			if errors.Is(err, o.err) {
				code = o.code
				break
			}
		}
		s.SetAttributes(attrErrorCode.String(code))
		s.SetStatus(codes.Error, code)
	}
	s.End()
}

// spanOf is the context of the span ctx carries, nil when there is none: what an
// actor's message or a proof keeps of its caller's span. A pointer rather than the
// value, so that without traces a message carries 8 bytes, not 48.
func spanOf(ctx context.Context) *trace.SpanContext {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	// A copy made here, not &sc: taking sc's address would move it to the heap on
	// every call, the untraced ones too.
	p := new(trace.SpanContext)
	*p = sc
	return p
}

// withParent is ctx under the span whose context parent is: the span of the caller
// that sent an actor its message. No parent (a caller that does not trace) leaves ctx
// as it is.
func withParent(ctx context.Context, parent *trace.SpanContext) context.Context {
	if parent == nil {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, *parent)
}

// traceparentOf is the W3C traceparent of the span ctx carries, "" when there is none
// to continue.
func traceparentOf(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c[traceparent]
}

// fromTraceparent is ctx under the remote span a command's trace context names; a
// command without one, or with one that does not parse, leaves ctx as it is.
func fromTraceparent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{traceparent: tp})
}

// commandSpans are the names of the spans of a command on the member that sends it and
// on its owner, which takes it: one pair per kind of command, written out so that
// naming a span costs nothing when tracing is off.
func commandSpans(cmd clusterpb.Command) (send, receive string) {
	switch cmd.(type) {
	case *clusterpb.CreateIntent:
		return "cluster.send CreateIntent", "cluster.receive CreateIntent"
	case *clusterpb.Propose:
		return "cluster.send Propose", "cluster.receive Propose"
	case *clusterpb.Expire:
		return "cluster.send Expire", "cluster.receive Expire"
	case *clusterpb.Resume:
		return "cluster.send Resume", "cluster.receive Resume"
	case *clusterpb.Proved:
		return "cluster.send Proved", "cluster.receive Proved"
	case *clusterpb.GetStatus:
		return "cluster.send GetStatus", "cluster.receive GetStatus"
	}
	return "cluster.send", "cluster.receive"
}

// The span kinds of a command's two ends, made once: options passed as a slice
// already made are not allocated again by each call.
var (
	clientKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	serverKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
)

// commandSpan starts the span of one end of a command (clientKind: the sender's,
// serverKind: the owner's).
func (e *Engine) commandSpan(ctx context.Context, name string, cmd clusterpb.Command, kind []trace.SpanStartOption) (context.Context, trace.Span) {
	if e.tracer == nil {
		return ctx, noSpan
	}
	ctx, s := e.tracer.Start(ctx, name, kind...)
	if s.IsRecording() {
		s.SetAttributes(attrIntentID.String(cmd.GetIntentId()), attrCommand.String(string(cmd.ProtoReflect().Descriptor().Name())))
	}
	return ctx, s
}
