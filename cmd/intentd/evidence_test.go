package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestHostileEvidence serves evidence that other JSON readers would quietly mend: a
// repeated name (the last would win) and a string that is not UTF-8 (it would become
// U+FFFD). Evidence is never coerced, so each proposal fails in extraction with a reason
// that names the fault, and no receipt is made of evidence the service did not read as
// sent.
func TestHostileEvidence(t *testing.T) {
	t.Parallel()
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

// TestMissingEvidence runs proposals past an evidence service that leaves out a field
// the policy reads, or sends one that breaks it: the first is a failure of kind
// evidence naming the field, the second one of kind constraints, and both say so in the
// status, the event and the signed receipt.
func TestMissingEvidence(t *testing.T) {
	t.Parallel()
	const rest = `"category":"t-shirt","size":"M","brand":"Northwind","shipping_cents":499,"in_stock":true`
	products := map[string]string{
		"sku:NO-PRICE":       `{"color":"navy",` + rest + `}`,
		"sku:BLACK":          `{"color":"black","price_cents":1999,` + rest + `}`,
		"sku:BLACK-NO-PRICE": `{"color":"black",` + rest + `}`,
	}
	es := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Solution   string                    `json:"solution"`
			Attributes map[string]map[string]any `json:"attributes"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Attributes["price_cents"]["type"] != "integer" {
			http.Error(w, "not the request of the demo policy", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, products[req.Solution])
	}))
	defer es.Close()
	s := startServer(t, []string{"--extractor-url", es.URL})

	tests := []struct {
		solution string
		kind     string
		missing  []string // nil: no evidence_missing is sent
		reason   string   // the reason's start
	}{
		{"sku:NO-PRICE", "evidence", []string{"price_cents"}, "the evidence lacks what the policy reads (price_cents): 2 constraints could not be checked: "},
		{"sku:BLACK", "constraints", nil, "2 constraints not satisfied: "},
		{"sku:BLACK-NO-PRICE", "constraints", []string{"price_cents"}, "4 constraints not satisfied: "},
	}
	for _, tt := range tests {
		t.Run(tt.solution, func(t *testing.T) {
			id := s.submit()
			if r := s.propose(id, tt.solution); r.status != http.StatusOK {
				t.Fatalf("proposal: %s", r)
			}
			st := s.waitStatus(id, "failure")
			reason, _ := st["reason"].(string)
			if st["failure_kind"] != tt.kind || !strings.HasPrefix(reason, tt.reason) || !reflect.DeepEqual(names(st["evidence_missing"]), tt.missing) {
				t.Fatalf("status %v, want failure_kind %s, evidence_missing %q and a reason starting %q", st, tt.kind, tt.missing, tt.reason)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stream := s.openStream(ctx, "?intent_id="+id)
			ev, err := stream.next()
			if err != nil {
				t.Fatal(err)
			}
			var data map[string]any
			if err := json.Unmarshal([]byte(ev.data), &data); err != nil {
				t.Fatal(err)
			}
			schema := apiCheck.doc.Components.Schemas["OrchestratorEvent"].Value
			if err := apiCheck.doc.ValidateSchemaJSON(schema, data, openapi3.EnableJSONSchema2020()); err != nil {
				t.Fatalf("event %s does not match the document: %v", ev.data, err)
			}
			if data["failure_kind"] != tt.kind || !reflect.DeepEqual(names(data["evidence_missing"]), tt.missing) {
				t.Fatalf("event %s, want failure_kind %s and evidence_missing %q", ev.data, tt.kind, tt.missing)
			}

			r := s.do("GET", "/intents/"+id+"/proof", "", nil)
			if r.status != http.StatusOK {
				t.Fatalf("proof: %s", r)
			}
			var bundle struct {
				Receipt struct {
					Receipt map[string]any `json:"receipt"`
				} `json:"receipt"`
			}
			if err := json.Unmarshal(r.body, &bundle); err != nil {
				t.Fatal(err)
			}
			rc := bundle.Receipt.Receipt
			if rc["version"] != 2.0 || rc["outcome"] != "failure" || rc["failure_kind"] != tt.kind || !reflect.DeepEqual(names(rc["evidence_missing"]), tt.missing) {
				t.Fatalf("receipt %v, want version 2 stating failure_kind %s and evidence_missing %q", rc, tt.kind, tt.missing)
			}
		})
	}
}

// names is a JSON array of strings as decoded into any, or nil when absent.
func names(v any) []string {
	a, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, len(a))
	for i, x := range a {
		out[i], _ = x.(string)
	}
	return out
}

// TestSolutionSize proposes solutions of the size of a real order: one at the limit is
// accepted and reaches the evidence service as it was sent, one byte more is refused
// with the limit named, by default (16 KiB) and with a raised --max-solution.
func TestSolutionSize(t *testing.T) {
	t.Parallel()
	const passes = `{"category":"t-shirt","size":"M","color":"navy","brand":"Northwind","price_cents":1999,"shipping_cents":499,"in_stock":true}`
	tests := []struct {
		name  string
		args  []string
		limit int
	}{
		{"default limit", nil, 16 << 10},
		{"raised limit", []string{"--max-solution", "100000"}, 100000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan string, 1)
			es := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					Solution string `json:"solution"`
				}
				json.NewDecoder(r.Body).Decode(&req)
				got <- req.Solution
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, passes)
			}))
			defer es.Close()
			s := startServer(t, append([]string{"--extractor-url", es.URL}, tt.args...))
			if r := s.do("GET", "/info", "", nil); !strings.Contains(string(r.body), `"max_solution_bytes":`+strconv.Itoa(tt.limit)+`,`) {
				t.Fatalf("GET /info: %s, want max_solution_bytes %d", r, tt.limit)
			}

			// An order written out in full, as an integration proposes it, padded to the
			// limit exactly.
			solution := `{"order":[` + strings.Repeat(`{"sku":"TS-NAVY-M","qty":1},`, tt.limit/40) + `{"sku":"TS-NAVY-M","qty":1}]}`
			solution += strings.Repeat(" ", tt.limit-len(solution))
			id := s.submit()
			if r := s.propose(id, solution); r.status != http.StatusOK {
				t.Fatalf("proposal of %d bytes: %s", len(solution), r)
			}
			if sent := <-got; sent != solution {
				t.Fatalf("the evidence service got a solution of %d bytes, want the %d proposed as they were", len(sent), len(solution))
			}
			st := s.waitStatus(id, "success")
			if p, _ := st["proposal"].(map[string]any); p["solution"] != solution {
				t.Fatalf("the status does not hold the solution as proposed")
			}

			over := s.submit()
			r := s.propose(over, strings.Repeat("x", tt.limit+1))
			if code, msg := r.errorBody(t); r.status != http.StatusUnprocessableEntity || code != "invalid_proposal" ||
				!strings.Contains(msg, "over the limit of "+strconv.Itoa(tt.limit)) {
				t.Fatalf("proposal one byte over the limit: %s, want 422 invalid_proposal naming %d", r, tt.limit)
			}
		})
	}
}
