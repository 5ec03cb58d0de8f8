package http

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

// TestProofRoute checks the answers of GET /intents/{id}/proof that need no decided
// intent: a missing or malformed intent is a 404 intent_not_found.
func TestProofRoute(t *testing.T) {
	e := openEngine(t)
	tests := []struct {
		name   string
		engine intentd.Engine
		method string
		path   string
		status int
		body   string
	}{
		{"no such intent", e, "GET", "/intents/6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10/proof", 404, `"code":"intent_not_found"`},
		{"malformed id", e, "GET", "/intents/x/proof", 404, `"code":"intent_not_found"`},
		{"wrong method", e, "POST", "/intents/6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10/proof", 405, `"code":"method_not_allowed"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(NewServer(tt.engine, Options{}))
			defer ts.Close()
			req, _ := http.NewRequest(tt.method, ts.URL+tt.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.body) {
				t.Fatalf("%s %s: %d %s, want %d with %s", tt.method, tt.path, resp.StatusCode, b, tt.status, tt.body)
			}
		})
	}
}
