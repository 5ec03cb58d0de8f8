package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

// TestPreview checks POST /intents/{id}/preview end to end: the would-be outcome of a
// passing and a failing candidate, with the intent still open after them; the propose
// role; the per-intent limit that --max-previews sets, a 429 past it; and the refusals
// once the intent has its proposal.
func TestPreview(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--tokens", writeTokens(t), "--max-previews", "3"})
	id := s.submit()
	preview := func(id, solution, token string) response {
		t.Helper()
		return s.do("POST", "/intents/"+id+"/preview", "application/json", []byte(`{"solution":"`+solution+`"}`), "Authorization", "Bearer "+token)
	}
	type body struct {
		Outcome      string            `json:"outcome"`
		FailureKind  string            `json:"failure_kind"`
		Failures     []json.RawMessage `json:"constraint_failures"`
		Evidence     map[string]any    `json:"evidence"`
		Proof        *bool             `json:"proof"`
		Note         string            `json:"note"`
		PreviewsLeft *int              `json:"previews_left"`
	}
	read := func(r response) body {
		t.Helper()
		var b body
		if r.status != http.StatusOK {
			t.Fatalf("preview: %s", r)
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatalf("preview: %s: %v", r.body, err)
		}
		if b.Proof == nil || *b.Proof || b.Note != intentd.PreviewNote || b.PreviewsLeft == nil || len(b.Evidence) == 0 {
			t.Fatalf("a preview's body without proof: false, the note, previews_left or the evidence: %s", r.body)
		}
		return b
	}

	if b := read(preview(id, solutionPasses, proposeToken)); b.Outcome != "success" || *b.PreviewsLeft != 2 {
		t.Fatalf("preview of a passing solution: %+v", b)
	}
	if b := read(preview(id, solutionOutOfStock, proposeToken)); b.Outcome != "failure" || b.FailureKind != "constraints" || len(b.Failures) != 1 || *b.PreviewsLeft != 1 {
		t.Fatalf("preview of a failing solution: %+v", b)
	}
	if st := s.status(id); st["status"] != "open" {
		t.Fatalf("after two previews the intent is %v", st["status"])
	}

	// Without the propose role: 403, and not counted.
	if r := preview(id, solutionPasses, readToken); r.status != http.StatusForbidden {
		t.Fatalf("a preview with a read-only token: %s, want 403", r)
	}
	if b := read(preview(id, solutionPasses, proposeToken)); *b.PreviewsLeft != 0 {
		t.Fatalf("the third preview leaves %d, want 0", *b.PreviewsLeft)
	}
	r := preview(id, solutionPasses, proposeToken)
	if code, _ := r.errorBody(t); r.status != http.StatusTooManyRequests || code != intentd.CodePreviewLimit {
		t.Fatalf("a fourth preview with --max-previews 3: %s, want 429 %s", r, intentd.CodePreviewLimit)
	}

	// The proposal is still there to make; once made, a preview is of no use.
	if r := s.do("POST", "/intents/"+id+"/proposal", "application/json", []byte(`{"solution":"`+solutionPasses+`"}`)); r.status != http.StatusOK {
		t.Fatalf("the proposal after the previews: %s", r)
	}
	r = preview(id, solutionPasses, proposeToken)
	if code, _ := r.errorBody(t); r.status != http.StatusConflict || code != intentd.CodeProposalExists {
		t.Fatalf("a preview after the proposal: %s, want 409 %s", r, intentd.CodeProposalExists)
	}
	r = preview("6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10", solutionPasses, proposeToken)
	if code, _ := r.errorBody(t); r.status != http.StatusNotFound || code != intentd.CodeIntentNotFound {
		t.Fatalf("a preview of an unknown intent: %s, want 404", r)
	}
	if r := s.do("GET", "/info", "", nil); !strings.Contains(string(r.body), `"max_previews_per_intent":3`) {
		t.Fatalf("GET /info does not give the preview limit: %s", r.body)
	}
}
