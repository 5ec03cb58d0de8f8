package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHostileEvidence serves evidence that other JSON readers would quietly mend: a
// repeated name (the last would win) and a string that is not UTF-8 (it would become
// U+FFFD). Evidence is never coerced, so each proposal fails in extraction with a reason
// that names the fault, and no receipt is made of evidence the service did not read as
// sent.
func TestHostileEvidence(t *testing.T) {
	const valid = `"category":"t-shirt","size":"M","color":"navy","brand":"Northwind","shipping_cents":499,"in_stock":true`
	tests := []struct {
		name, body, reason string
	}{
		{"repeated name", `{` + valid + `,"price_cents":1999,"price_cents":1}`, `duplicate object member name "price_cents"`},
		{"not UTF-8", "{\"category\":\"t-shirt\",\"size\":\"M\",\"color\":\"na\xffvy\",\"brand\":\"Northwind\",\"price_cents\":1999,\"shipping_cents\":499,\"in_stock\":true}", `invalid UTF-8 within "/color"`},
		{"lone surrogate", `{` + valid + `,"price_cents":1999,"note":"\ud800"}`, `invalid surrogate pair`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tt.body)
			}))
			defer es.Close()
			s := startServer(t, []string{"--extractor-url", es.URL})
			id := s.submit()
			if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
				t.Fatalf("proposal: %s", r)
			}
			st := s.waitStatus(id, "failure")
			reason, _ := st["reason"].(string)
			if st["failure_kind"] != "extraction" || !strings.Contains(reason, tt.reason) {
				t.Fatalf("status %v, want a failure in extraction whose reason says %q", st, tt.reason)
			}
			if r := s.do("GET", "/intents/"+id+"/proof", "", nil); r.status != http.StatusNotFound {
				t.Fatalf("proof of an extraction failure: %s, want 404 no_proof", r)
			}
		})
	}
}
