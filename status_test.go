package intentd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/intentd/intentd/policy"
)

func TestClassifyFailures(t *testing.T) {
	violated := policy.Failure{Index: 0, Reason: "evidence.size = \"L\", which is not == \"M\""}
	missing := func(i int, names ...string) policy.Failure {
		return policy.Failure{Index: i, Reason: "missing", MissingEvidence: names}
	}
	tests := []struct {
		name     string
		failures []policy.Failure
		kind     FailureKind
		missing  []string
	}{
		{"none", nil, "", nil},
		{"a violation", []policy.Failure{violated}, FailureConstraints, nil},
		{"missing evidence only", []policy.Failure{missing(0, "size")}, FailureEvidence, []string{"size"}},
		{"several fields, sorted, each once", []policy.Failure{missing(0, "size"), missing(1, "price_cents"), missing(2, "size")},
			FailureEvidence, []string{"price_cents", "size"}},
		{"a violation beside missing evidence", []policy.Failure{violated, missing(1, "price_cents")}, FailureConstraints, []string{"price_cents"}},
		{"missing evidence before a violation", []policy.Failure{missing(0, "price_cents"), violated}, FailureConstraints, []string{"price_cents"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, missing := ClassifyFailures(tt.failures)
			if kind != tt.kind || !reflect.DeepEqual(missing, tt.missing) {
				t.Fatalf("got %q %q, want %q %q", kind, missing, tt.kind, tt.missing)
			}
		})
	}
}

// TestStatusEvidenceMissing pins where evidence_missing goes in a failure's JSON, in the
// status and in the event, and that it is left out when nothing is missing.
func TestStatusEvidenceMissing(t *testing.T) {
	base := Status{State: StateFailure, IntentID: "6f1c2a9e-3b7d-4c55-9a1e-2f8d0c4b7a31", Proposal: &Proposal{Solution: "s"},
		Reason: "r", Failures: []policy.Failure{{Index: 0, PrettyExpr: "evidence.size == \"M\"", Reason: "evidence.size is missing from the evidence",
			MissingEvidence: []string{"size"}}}}
	tests := []struct {
		name    string
		kind    FailureKind
		missing []string
		want    string
	}{
		{"evidence", FailureEvidence, []string{"size"}, `"failure_kind":"evidence","proposal":{"solution":"s"},` +
			`"constraint_failures":[{"index":0,"pretty_expr":"evidence.size == \"M\"","reason":"evidence.size is missing from the evidence"}],` +
			`"evidence_missing":["size"],"evidence":{}}`},
		{"constraints naming none", FailureConstraints, nil, `"failure_kind":"constraints","proposal":{"solution":"s"},` +
			`"constraint_failures":[{"index":0,"pretty_expr":"evidence.size == \"M\"","reason":"evidence.size is missing from the evidence"}],` +
			`"evidence":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			s.FailureKind, s.EvidenceMissing, s.Evidence = tt.kind, tt.missing, []byte("{}")
			data, err := MarshalJSON(s)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), `{"status":"failure",`) || !strings.HasSuffix(string(data), tt.want) {
				t.Fatalf("status %s\nwant it to end with %s", data, tt.want)
			}
			ev, err := NewEvent(s)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(ev.Data), `{"type":"failure",`) || !strings.HasSuffix(string(ev.Data), tt.want) {
				t.Fatalf("event %s\nwant it to end with %s", ev.Data, tt.want)
			}
		})
	}
}
