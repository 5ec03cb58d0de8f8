package http

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetricsFormats asks GET /metrics for each exposition format: a Prometheus
// scraper's text format by default, and OpenMetrics when the Accept header names it, as
// the API document says (content negotiation).
func TestMetricsFormats(t *testing.T) {
	srv := NewServer(openEngine(t), Options{})
	for _, tc := range []struct {
		name, accept, contentType, ends string
	}{
		{"no Accept", "", "text/plain; version=0.0.4", "\n"},
		{"OpenMetrics", "application/openmetrics-text; version=1.0.0", "application/openmetrics-text; version=1.0.0", "# EOF\n"},
		{"text, as Prometheus asks", "text/plain;version=0.0.4;q=0.3,*/*;q=0.2", "text/plain; version=0.0.4", "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/metrics", nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			body := rec.Body.String()
			if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || !strings.HasPrefix(ct, tc.contentType) || !strings.HasSuffix(body, tc.ends) {
				t.Fatalf("GET /metrics with Accept %q: %d, Content-Type %q, ending %q; want %q ending %q",
					tc.accept, rec.Code, ct, body[max(0, len(body)-20):], tc.contentType, tc.ends)
			}
			if !strings.Contains(body, "intentd_build_info") {
				t.Errorf("the %s exposition has no intentd_build_info", tc.name)
			}
		})
	}
}
