package mcpserver_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intentd/intentd"
)

// TestGetRequirements checks what get_requirements tells an agent of an intent of the
// t-shirt policy (size M, navy or blue, 3000 with shipping, no brands): each
// constraint's residual or state, and the evidence's schema, alike in process, over the
// HTTP API (as intentctl mcp serves it) and at /mcp with a token that may only read;
// and the refusals of an unknown intent and of an id that is none.
func TestGetRequirements(t *testing.T) {
	f := newFixture(t, nil)
	id := f.submit(t)
	want := mustCall(t, f.inProcess(t), "get_requirements", map[string]any{"intent_id": id})
	if want["intent_id"] != id || want["policy_id"] != f.policy {
		t.Fatalf("get_requirements = %v", want)
	}
	cons, _ := want["constraints"].([]any)
	if len(cons) != 8 {
		t.Fatalf("get_requirements has %d constraints, want 8: %v", len(cons), want)
	}
	for _, tc := range []struct {
		index                 int
		state, residual, says string
		inSchema              bool
	}{
		{1, "open", `evidence.size == "M"`, "", true},
		{2, "open", `evidence.color in {"blue", "navy"}`, "", true},
		{4, "open", "evidence.price_cents + evidence.shipping_cents <= 3000", "", false},
		{6, "holds", "", "parameters.brands is absent from the intent: an optional: constraint holds without it", true},
	} {
		c := cons[tc.index].(map[string]any)
		residual, _ := c["residual"].(string)
		reason, _ := c["reason"].(string)
		if c["state"] != tc.state || residual != tc.residual || reason != tc.says || c["in_schema"] != tc.inSchema {
			t.Errorf("constraint %d = %v, want %s %q %q in_schema %v", tc.index, c, tc.state, tc.residual, tc.says, tc.inSchema)
		}
	}
	schema, _ := want["schema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if size, _ := props["size"].(map[string]any); schema["$schema"] != "https://json-schema.org/draft/2020-12/schema" || size["const"] != "M" {
		t.Fatalf("get_requirements' schema = %v", schema)
	}

	for _, way := range []struct {
		name    string
		connect func(*testing.T) *mcp.ClientSession
	}{
		{"remote", f.remote},
		{"http", func(t *testing.T) *mcp.ClientSession { return f.overHTTP(t, readerToken) }},
	} {
		t.Run(way.name, func(t *testing.T) {
			cs := way.connect(t)
			if got := mustCall(t, cs, "get_requirements", map[string]any{"intent_id": id}); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("get_requirements = %v\nin process %v", got, want)
			}
			wantRefusal(t, cs, "get_requirements", map[string]any{"intent_id": uuid.NewString()}, intentd.CodeIntentNotFound)
			wantRefusal(t, cs, "get_requirements", map[string]any{"intent_id": "not-an-id"}, intentd.CodeIntentNotFound)
		})
	}
}
