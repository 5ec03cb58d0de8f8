//go:build !race

// Several cluster members in one process: built without the race detector, as the
// other cluster tests are (cluster_test.go).

package actors

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/golden"
	"github.com/intentd/intentd/internal/spantree"
)

// memberAttr is the resource attribute that tells which member made a span.
const memberAttr = "test.member"

// tracedBy is a tracer provider whose spans go to exp, marked as made by member.
func tracedBy(t *testing.T, exp *tracetest.InMemoryExporter, member string) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String(memberAttr, member))))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp
}

// memberOf is the member that made a span.
func memberOf(s tracetest.SpanStub) string {
	v, _ := s.Resource.Set().Value(memberAttr)
	return v.AsString()
}

// TestClusterTraces proposes, under a caller's span, through a member that does not own
// the intent, and compares the trace with its golden tree: the entry member's span of
// the command is the caller's child, the owner's span of it is a child of the entry's,
// carried in the command's trace_context, and the owner's steps (the actor's, proving's,
// the store's writes) hang under it, all in the caller's one trace.
func TestClusterTraces(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	members := []string{"entry", "owner"}
	n := 0 // clusterOf tweaks the members' configurations one after the other
	hs := clusterOf(t, 2, func(c *Config) {
		c.TracerProvider = tracedBy(t, exp, members[n])
		c.Prover = ReceiptProver{Key: key}
		c.Cluster.ownerDecides = true // a proposal crosses, as an expiry or a resume does
		n++
	})
	caller := tracedBy(t, exp, "caller").Tracer("test")
	entry := hs[0]
	// Which member owns an intent is the cluster's choice: intents are tried until one
	// is owned by the other member.
	for range 32 {
		id := entry.submit("M", 2500)
		if entry.e.member.Load().ownsHere(id) {
			continue // the entry member owns this one: its commands do not cross
		}
		ctx, root := caller.Start(context.Background(), "caller")
		err := proposeWith(ctx, entry, id)
		root.End()
		if err != nil {
			t.Fatalf("proposal: %v", err)
		}
		entry.waitState(id, intentd.StateSuccess)
		spans := waitTrace(t, exp, root.SpanContext().TraceID(), 11)
		recv, ok := spantree.Find(spans, "cluster.receive Propose")
		if !ok {
			t.Fatalf("no owner's span of the command:\n%s", spantree.Render(spans, spantree.Options{Label: memberOf}))
		}
		if memberOf(recv) == "entry" {
			t.Fatalf("the entry member received a command for an intent it does not own:\n%s", spantree.Render(spans, spantree.Options{Label: memberOf}))
		}
		send, _ := spantree.Find(spans, "cluster.send Propose")
		if recv.Parent.SpanID() != send.SpanContext.SpanID() || !recv.Parent.IsRemote() || memberOf(send) != "entry" {
			t.Fatalf("the owner's span %s has parent %s (remote %v); want the entry's %s", recv.SpanContext.SpanID(),
				recv.Parent.SpanID(), recv.Parent.IsRemote(), send.SpanContext.SpanID())
		}
		got := spantree.Render(spans, spantree.Options{Label: memberOf,
			Attrs: []string{"intent.id", "intent.state", "cluster.command", "error.code"}, Replace: map[string]string{id: "<intent>"}})
		golden.Check(t, filepath.Join("testdata", "traces", "cluster_propose.golden"), got)
		return
	}
	t.Fatal("the entry member owned every intent tried")
}

// proposeWith proposes a solution that passes, under the span ctx carries.
func proposeWith(ctx context.Context, h *harness, id string) error {
	return h.e.Propose(ctx, id, intentd.Proposal{Solution: "M-cheap"}, nil)
}

// waitTrace waits until trace id has n spans, and returns them: the proof's spans end
// after the outcome is written.
func waitTrace(t *testing.T, exp *tracetest.InMemoryExporter, id trace.TraceID, n int) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans := spantree.Of(exp.GetSpans(), id)
		if len(spans) >= n || time.Now().After(deadline) {
			if len(spans) != n {
				t.Fatalf("trace %s has %d spans, want %d:\n%s", id, len(spans), n, spantree.Render(spans, spantree.Options{Label: memberOf}))
			}
			return spans
		}
		time.Sleep(10 * time.Millisecond)
	}
}
