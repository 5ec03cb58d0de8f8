package http

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
)

// busyPreviews is the real engine with the previews' share of proving full.
type busyPreviews struct{ *actors.Engine }

func (busyPreviews) Preview(context.Context, string, intentd.Proposal) (intentd.Preview, error) {
	return intentd.Preview{}, intentd.Errorf(intentd.KindBusy, intentd.CodeCapacityExceeded, "proving capacity for previews is full; retry later")
}

// TestPreviewBusy checks that a preview refused for capacity is a 503 with Retry-After,
// the answer a client retries on.
func TestPreviewBusy(t *testing.T) {
	srv := NewServer(busyPreviews{openEngine(t)}, Options{})
	req := httptest.NewRequest("POST", "/intents/6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10/preview", strings.NewReader(`{"solution":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"code":"capacity_exceeded"`) {
		t.Fatalf("a preview at capacity: %d, Retry-After %q, %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}
