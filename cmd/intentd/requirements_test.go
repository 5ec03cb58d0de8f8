package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/intentd/intentd/internal/golden"
)

// TestRequirements reads GET /intents/{id}/requirements of an intent of the demo
// policy, on Pebble and on an embedded NATS: its body is the golden one (the intent's
// id aside), an unknown intent is a 404 as its status is, and the evidence of a
// solution that the decision then passes is valid under the schema, while the
// evidence of one that breaks a constraint the schema captures is not; a decided intent
// whose policy was deleted since is a 404 policy_not_found.
func TestRequirements(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default store", nil},
		{"embedded NATS", []string{"--nats-embed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.args != nil {
				ownStores(t)
			}
			s := startServer(t, tc.args)
			id := s.submit()
			r := s.do("GET", "/intents/"+id+"/requirements", "", nil)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
				t.Fatalf("GET requirements: %s", r)
			}
			var body struct {
				IntentID string          `json:"intent_id"`
				PolicyID string          `json:"policy_id"`
				Schema   json.RawMessage `json:"schema"`
			}
			if err := json.Unmarshal(r.body, &body); err != nil || body.IntentID != id || body.PolicyID != s.policy {
				t.Fatalf("requirements %s: %v", r.body, err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, bytes.ReplaceAll(r.body, []byte(id), []byte("INTENT-ID")), "", "  "); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "requirements.golden"), pretty.String()+"\n")

			for _, path := range []string{"/intents/6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10/requirements", "/intents/not-a-uuid/requirements"} {
				r := s.do("GET", path, "", nil)
				if code, _ := r.errorBody(t); r.status != http.StatusNotFound || code != "intent_not_found" {
					t.Errorf("GET %s: %s, want 404 intent_not_found", path, r)
				}
			}

			schema := compileSchema(t, body.Schema)
			for _, c := range []struct {
				solution, outcome string
			}{
				{solutionPasses, "success"},
				{solutionBlackL, "failure"},
			} {
				id := s.submit()
				if r := s.propose(id, c.solution); r.status != http.StatusOK {
					t.Fatalf("proposal: %s", r)
				}
				st := s.waitStatus(id, c.outcome)
				ev, err := json.Marshal(st["evidence"])
				if err != nil {
					t.Fatal(err)
				}
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(ev))
				if err != nil {
					t.Fatal(err)
				}
				if err := schema.Validate(inst); (err == nil) != (c.outcome == "success") {
					t.Errorf("evidence %s of a %s: the schema says %v", ev, c.outcome, err)
				}
			}

			// A decided intent whose policy was deleted since has no requirements to
			// tell, and says why.
			demo := s.policy
			s.policy = s.putPolicy(strings.Replace(demoPolicy, "name tshirt_purchase_v1", "name tshirt_purchase_gone", 1))
			gone := s.submit()
			if r := s.propose(gone, solutionPasses); r.status != http.StatusOK {
				t.Fatalf("proposal: %s", r)
			}
			s.waitStatus(gone, "success")
			if r := s.do("DELETE", "/policies/"+s.policy, "", nil); r.status != http.StatusOK {
				t.Fatalf("DELETE the policy: %s", r)
			}
			s.policy = demo
			r = s.do("GET", "/intents/"+gone+"/requirements", "", nil)
			if code, _ := r.errorBody(t); r.status != http.StatusNotFound || code != "policy_not_found" {
				t.Errorf("GET the requirements of an intent whose policy was deleted: %s, want 404 policy_not_found", r)
			}
		})
	}
}

func compileSchema(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("requirements.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("requirements.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v\n%s", err, schema)
	}
	if !strings.Contains(string(schema), `"$schema":"https://json-schema.org/draft/2020-12/schema"`) {
		t.Fatalf("the schema names no draft 2020-12: %s", schema)
	}
	return sch
}

// TestRequirementsRoles checks that reading the requirements needs the read role, as
// reading the status does: no token is a 401, a token of another role a 403.
func TestRequirementsRoles(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--tokens", writeTokens(t)})
	id := s.submit()
	path := "/intents/" + id + "/requirements"
	for _, tc := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"no token", "", http.StatusUnauthorized, "unauthorized"},
		{"the metrics role", metricsToken, http.StatusForbidden, "forbidden"},
		{"the read role", readToken, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := ""
			if tc.token != "" {
				auth = "Bearer " + tc.token
			}
			r := s.do("GET", path, "", nil, "Authorization", auth)
			if r.status != tc.status {
				t.Fatalf("GET %s with %s: %s, want %d", path, tc.name, r, tc.status)
			}
			if tc.code != "" {
				if code, _ := r.errorBody(t); code != tc.code {
					t.Fatalf("GET %s with %s: code %s, want %s", path, tc.name, code, tc.code)
				}
			}
		})
	}
}
