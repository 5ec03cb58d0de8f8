// Package spantree renders the spans of one trace as an indented tree of text, so that
// a test can compare a trace's shape (which span is whose child, with which attributes)
// with a golden file, whatever the ids and times of the run.
package spantree

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Options says what a rendered span shows beside its name and kind.
type Options struct {
	// Attrs are the attributes shown, in this order, when a span has them.
	Attrs []string
	// Replace changes attribute values that differ from run to run (an intent's id)
	// into fixed words.
	Replace map[string]string
	// Label, when set, is shown in brackets after a span's name: which node made it.
	Label func(tracetest.SpanStub) string
}

// Of returns the spans of trace id among spans.
func Of(spans tracetest.SpanStubs, id trace.TraceID) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.SpanContext.TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

// Find returns the first span named name among spans, and whether there is one.
func Find(spans tracetest.SpanStubs, name string) (tracetest.SpanStub, bool) {
	for _, s := range spans {
		if s.Name == name {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// Render is the tree of spans, one line a span, each under its parent and indented
// two spaces more, children in the order they started. A span whose parent is not
// among spans is a root: "remote parent" marks one whose parent came from elsewhere
// (a caller's traceparent).
func Render(spans tracetest.SpanStubs, o Options) string {
	byID := map[trace.SpanID]bool{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = true
	}
	children := map[trace.SpanID][]tracetest.SpanStub{}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		if p := s.Parent.SpanID(); s.Parent.IsValid() && byID[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(line(s, o))
		if depth == 0 && s.Parent.IsValid() {
			b.WriteString(" (remote parent)")
		}
		b.WriteByte('\n')
		kids := children[s.SpanContext.SpanID()]
		sortByStart(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	sortByStart(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

// line is one span: name, label, kind, the attributes asked for, and its status when
// it failed.
func line(s tracetest.SpanStub, o Options) string {
	parts := []string{s.Name}
	if o.Label != nil {
		parts = append(parts, "["+o.Label(s)+"]")
	}
	parts = append(parts, "kind="+s.SpanKind.String())
	for _, key := range o.Attrs {
		for _, a := range s.Attributes {
			if string(a.Key) != key {
				continue
			}
			v := a.Value.Emit()
			if r, ok := o.Replace[v]; ok {
				v = r
			}
			parts = append(parts, fmt.Sprintf("%s=%s", key, v))
		}
	}
	if s.Status.Code == codes.Error {
		parts = append(parts, "status=error:"+s.Status.Description)
	}
	return strings.Join(parts, " ")
}

// sortByStart orders spans by their start, then their name: steps that start within
// the clock's resolution keep one order from run to run.
func sortByStart(spans []tracetest.SpanStub) {
	slices.SortStableFunc(spans, func(a, b tracetest.SpanStub) int {
		return cmp.Or(cmpTime(a.StartTime, b.StartTime), cmp.Compare(a.Name, b.Name))
	})
}

func cmpTime(a, b time.Time) int { return a.Compare(b) }
