package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
)

// TestErrors checks every error status of spec part 7 and decisions.md "Errors" (but
// 500, which the http package's tests cause, and 503, in TestCapacity): status, code,
// the message naming what is wrong, and the headers that go with some statuses.
func TestErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--max-body", "8192", "--max-solution", "4096"})

	open := s.submit()
	proposed := s.submit()
	if r := s.propose(proposed, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal: %s", r)
	}
	s.waitStatus(proposed, "success")

	tests := slices.Concat(intentErrors(t, s, open), endpointErrors(t, s, open, proposed))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do(tt.method, tt.path, tt.contentType, tt.body, tt.header...)
			code, msg := r.errorBody(t)
			if r.status != tt.status || code != tt.code {
				t.Fatalf("%s %s: %s, want %d %s", tt.method, tt.path, r, tt.status, tt.code)
			}
			if !strings.Contains(msg, tt.inMessage) {
				t.Fatalf("message %q does not say %q", msg, tt.inMessage)
			}
			if r.status == http.StatusMethodNotAllowed && !strings.Contains(r.header.Get("Allow"), "GET") && !strings.Contains(r.header.Get("Allow"), "POST") {
				t.Fatalf("405 without a useful Allow header: %q", r.header.Get("Allow"))
			}
		})
	}

	t.Run("405 Allow lists the served methods", func(t *testing.T) {
		r := s.do("PATCH", "/policies/"+s.policy, "", nil)
		allow := r.header.Get("Allow")
		if r.status != 405 || !strings.Contains(allow, "GET") || !strings.Contains(allow, "DELETE") || strings.Contains(allow, "POST") {
			t.Fatalf("PATCH /policies/{id}: %s, Allow %q; want 405 allowing GET and DELETE", r, allow)
		}
	})
	t.Run("refusals change nothing", func(t *testing.T) {
		if st := s.status(open); st["status"] != "open" {
			t.Fatalf("the open intent is %v after refused proposals", st)
		}
	})
}

// errorCase is a request TestErrors makes and the error it must get: status, code and
// a part of the message that says what is wrong.
type errorCase struct {
	name        string
	method      string
	path        string
	contentType string
	body        []byte
	header      []string
	status      int
	code        string
	inMessage   string
}

// unknownPolicyID is a well-formed policy id that names no policy.
const unknownPolicyID = "11111111111111111111111111111111"

// signedIntentBody is an authored intent of s's policy with a new id, changed by mutate
// (when not nil) and then signed.
func signedIntentBody(t *testing.T, s *testServer, mutate func(intent string) string) []byte {
	intent := string(s.intentJSON(uuid.NewString()))
	if mutate != nil {
		intent = mutate(intent)
	}
	a, err := crypto.SignEd25519(s.key, []byte(intent))
	if err != nil {
		t.Fatal(err)
	}
	return authored(t, []byte(intent), a)
}

// intentErrors are the refusals of POST /intents; open is an open intent's id.
func intentErrors(t *testing.T, s *testServer, open string) []errorCase {
	signed := func(mutate func(intent string) string) []byte { return signedIntentBody(t, s, mutate) }
	valid := signed(nil)
	sig := string(valid[strings.Index(string(valid), `"authorship":`)+len(`"authorship":`) : len(valid)-1])
	withAuth := func(auth string) []byte {
		return fmt.Appendf(nil, `{"intent":%s,"authorship":%s}`, s.intentJSON(uuid.NewString()), auth)
	}
	existing := func() []byte {
		intent := s.intentJSON(open)
		return authored(t, intent, s.signEd25519(intent))
	}
	otherPolicy := s.putPolicy("name other\nrequires { evidence.size == \"M\"; }\n")
	const json = "application/json"
	return []errorCase{
		{"intent: not JSON", "POST", "/intents", json, []byte(`{"intent":`), nil, 400, "invalid_json", "not valid JSON"},
		{"intent: wrong content type", "POST", "/intents", "text/plain", valid, nil, 400, "unsupported_content_type", "application/json"},
		{"intent: no content type", "POST", "/intents", "", valid, nil, 400, "unsupported_content_type", "missing"},
		{"intent: other charset", "POST", "/intents", "application/json; charset=latin1", valid, nil, 400, "unsupported_content_type", "latin1"},
		{"intent: bad signature", "POST", "/intents", json, withAuth(sig), nil, 400, "authorship_invalid", "authorship"},
		{"intent: unsigned not permitted", "POST", "/intents", json, withAuth(`"Unsigned"`), nil, 400, "unsigned_not_permitted", "unsigned"},
		{"intent: unknown policy", "POST", "/intents", json, signed(func(in string) string {
			return strings.Replace(in, s.policy, unknownPolicyID, 1)
		}), nil, 400, "policy_not_found", "intent.policy_id"},
		{"intent: id exists", "POST", "/intents", json, existing(), nil, 409, "intent_exists", open},
		{"intent: body is an array", "POST", "/intents", json, []byte(`[]`), nil, 422, "invalid_intent", "must be a JSON object"},
		{"intent: missing intent", "POST", "/intents", json, []byte(`{"authorship":"Unsigned"}`), nil, 422, "invalid_intent", "intent: missing"},
		{"intent: missing authorship", "POST", "/intents", json, fmt.Appendf(nil, `{"intent":%s}`, s.intentJSON(uuid.NewString())), nil, 422, "malformed_authorship", "authorship: missing"},
		{"intent: unknown field", "POST", "/intents", json, []byte(`{"intent":{},"authorship":"Unsigned","extra":1}`), nil, 422, "invalid_intent", "extra: unknown field"},
		{"intent: duplicate key", "POST", "/intents", json, []byte(`{"intent":{},"intent":{},"authorship":"Unsigned"}`), nil, 422, "invalid_intent", "intent: duplicate key"},
		{"intent: intent not an object", "POST", "/intents", json, []byte(`{"intent":"x","authorship":"Unsigned"}`), nil, 422, "invalid_intent", "intent: must be a JSON object"},
		{"intent: unknown intent field", "POST", "/intents", json, signed(func(in string) string {
			return strings.Replace(in, `"id"`, `"colour":"red","id"`, 1)
		}), nil, 422, "invalid_intent", "intent.colour"},
		{"intent: id not a UUID", "POST", "/intents", json, signed(func(in string) string {
			return in[:7] + "not-a-uuid" + in[7+36:]
		}), nil, 422, "invalid_intent", "intent.id"},
		{"intent: attrs null", "POST", "/intents", json, signed(func(in string) string {
			return in[:strings.Index(in, `"attrs"`)] + `"attrs":null}`
		}), nil, 422, "invalid_intent", "intent.attrs"},
		{"intent: attrs do not match the policy", "POST", "/intents", json, signed(func(in string) string {
			return strings.Replace(in, `{"Int":3000}`, `{"String":"3000"}`, 1)
		}), nil, 422, "attrs_mismatch", "max_price_cents"},
		{"intent: attrs for another policy", "POST", "/intents", json, signed(func(in string) string {
			return strings.Replace(in, s.policy, otherPolicy, 1)
		}), nil, 422, "attrs_mismatch", "intent.attrs"},
		{"intent: bad Base58 key", "POST", "/intents", json, withAuth(`{"Signed":{"Ed25519":{"pub_key":"0OIl","signature":"1"}}}`), nil, 422, "malformed_authorship", "authorship.Signed.Ed25519.pub_key"},
		{"intent: unknown signature scheme", "POST", "/intents", json, withAuth(`{"Signed":{"Rsa":{}}}`), nil, 422, "malformed_authorship", "authorship.Signed.Rsa"},
		{"intent: superseded signature beside intent", "POST", "/intents", json,
			fmt.Appendf(nil, `{"intent":%s,"signature":%s}`, s.intentJSON(uuid.NewString()), strings.TrimSuffix(strings.TrimPrefix(sig, `{"Signed":`), "}")),
			nil, 422, "superseded_shape", "before 0.9.4"},
		{"intent: superseded payload", "POST", "/intents", json,
			[]byte(`{"payload":{"id":"` + uuid.NewString() + `","template_id":"x"},"signature":{}}`), nil, 422, "superseded_shape", "template"},
		{"intent: superseded template_id", "POST", "/intents", json, signed(func(in string) string {
			return strings.Replace(in, `"policy_id"`, `"template_id"`, 1)
		}), nil, 422, "superseded_shape", "intent.template_id"},
		{"intent: over the body limit", "POST", "/intents", json, []byte(`{"intent":"` + strings.Repeat("x", 9000) + `"}`), nil, 413, "body_too_large", "8192"},
	}
}

// endpointErrors are the refusals of the other endpoints, and of routing; open is an
// open intent's id, proposed a decided one's.
func endpointErrors(t *testing.T, s *testServer, open, proposed string) []errorCase {
	valid := signedIntentBody(t, s, nil)
	const json = "application/json"
	return []errorCase{
		// GET /intents/{id} and its status
		{"get intent: unknown", "GET", "/intents/" + uuid.NewString(), "", nil, nil, 404, "intent_not_found", "not found"},
		{"get intent: malformed id", "GET", "/intents/nope", "", nil, nil, 404, "intent_not_found", "nope"},
		{"status: unknown", "GET", "/intents/" + uuid.NewString() + "/status", "", nil, nil, 404, "intent_not_found", "not found"},
		{"status: malformed id", "GET", "/intents/nope/status", "", nil, nil, 404, "intent_not_found", "nope"},

		// POST /intents/{id}/proposal
		{"proposal: malformed id", "POST", "/intents/nope/proposal", json, []byte(`{"solution":"x"}`), nil, 400, "invalid_id", "nope"},
		{"proposal: not JSON", "POST", "/intents/" + open + "/proposal", json, []byte(`solution=x`), nil, 400, "invalid_json", "not valid JSON"},
		{"proposal: wrong content type", "POST", "/intents/" + open + "/proposal", "application/x-www-form-urlencoded", []byte(`solution=x`), nil, 400, "unsupported_content_type", "application/json"},
		{"proposal: unknown intent", "POST", "/intents/" + uuid.NewString() + "/proposal", json, []byte(`{"solution":"x"}`), nil, 404, "intent_not_found", "not found"},
		{"proposal: second proposal", "POST", "/intents/" + proposed + "/proposal", json, []byte(`{"solution":"x"}`), nil, 409, "proposal_exists", ""},
		{"proposal: missing solution", "POST", "/intents/" + open + "/proposal", json, []byte(`{}`), nil, 422, "invalid_proposal", "solution: missing"},
		{"proposal: null solution", "POST", "/intents/" + open + "/proposal", json, []byte(`{"solution":null}`), nil, 422, "invalid_proposal", "solution: must be a string"},
		{"proposal: empty solution", "POST", "/intents/" + open + "/proposal", json, []byte(`{"solution":""}`), nil, 422, "invalid_proposal", "solution"},
		{"proposal: solution over --max-solution", "POST", "/intents/" + open + "/proposal", json, []byte(`{"solution":"` + strings.Repeat("x", 4097) + `"}`), nil, 422, "invalid_proposal", "4096"},
		{"proposal: unknown field", "POST", "/intents/" + open + "/proposal", json, []byte(`{"solution":"x","price":1}`), nil, 422, "invalid_proposal", "price: unknown field"},
		{"proposal: superseded metadata", "POST", "/intents/" + open + "/proposal", json, []byte(`{"solution":"x","metadata":{}}`), nil, 422, "superseded_shape", "metadata"},
		{"proposal: over the body limit", "POST", "/intents/" + open + "/proposal", json, []byte(`{"solution":"` + strings.Repeat("x", 9000) + `"}`), nil, 413, "body_too_large", ""},

		// Policies
		{"policy: compile error", "POST", "/policies", "text/plain", []byte("name x\nrequires {\n  evidence.a == ;\n}\n"), nil, 400, "policy_invalid", "3:"},
		{"policy: wrong content type", "POST", "/policies", json, []byte(`"name x"`), nil, 400, "unsupported_content_type", "text/plain"},
		{"get policy: unknown", "GET", "/policies/" + unknownPolicyID, "", nil, nil, 404, "policy_not_found", unknownPolicyID},
		{"get policy: malformed id", "GET", "/policies/not-base58!", "", nil, nil, 404, "policy_not_found", "not-base58!"},
		{"delete policy: unknown", "DELETE", "/policies/" + unknownPolicyID, "", nil, nil, 404, "policy_not_found", unknownPolicyID},
		{"delete policy: in use", "DELETE", "/policies/" + s.policy, "", nil, nil, 409, "policy_in_use", s.policy},

		// Events
		{"events: negative last-event-id", "GET", "/events", "", nil, []string{"Last-Event-ID", "-1"}, 400, "invalid_last_event_id", "-1"},
		{"events: non-integer last-event-id", "GET", "/events", "", nil, []string{"Last-Event-ID", "1.5"}, 400, "invalid_last_event_id", "1.5"},
		{"events: last-event-id over int64", "GET", "/events?last-event-id=9223372036854775808", "", nil, nil, 400, "invalid_last_event_id", "range"},
		{"events: last-event-id query not a number", "GET", "/events?last-event-id=abc", "", nil, nil, 400, "invalid_last_event_id", "abc"},
		{"events: unknown type", "GET", "/events?type=success,opened", "", nil, nil, 400, "invalid_filter", "opened"},
		{"events: bad intent id", "GET", "/events?intent_id=42", "", nil, nil, 400, "invalid_filter", "42"},

		// Routing
		{"unknown route", "GET", "/nowhere", "", nil, nil, 404, "not_found", "/nowhere"},
		{"trailing slash", "GET", "/intents/" + open + "/", "", nil, nil, 404, "not_found", ""},
		{"method not allowed", "PUT", "/intents", json, valid, nil, 405, "method_not_allowed", "PUT"},
		{"method not allowed on events", "POST", "/events", json, []byte(`{}`), nil, 405, "method_not_allowed", "POST"},
	}
}

// TestPolicies covers the policy endpoints' successes: the id as a JSON string, the
// same id for the same source, the pretty form that compiles to the same id, and a
// delete once no open intent names the policy.
func TestPolicies(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	if again := s.putPolicy(demoPolicy); again != s.policy {
		t.Fatalf("the same source gave %s then %s", s.policy, again)
	}
	r := s.do("GET", "/policies/"+s.policy, "", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("GET /policies/{id}: %s (%s)", r, r.header.Get("Content-Type"))
	}
	pretty := string(r.body)
	if !strings.Contains(pretty, "name tshirt_purchase_v1") || strings.Contains(pretty, "#") {
		t.Fatalf("pretty form:\n%s", pretty)
	}
	if id := s.putPolicy(pretty); id != s.policy {
		t.Fatalf("the pretty form compiles to %s, want %s", id, s.policy)
	}

	id := s.submit()
	if r := s.do("DELETE", "/policies/"+s.policy, "", nil); r.status != 409 {
		t.Fatalf("DELETE while an intent is open: %s", r)
	}
	s.propose(id, solutionPasses)
	s.waitStatus(id, "success")
	if r := s.do("DELETE", "/policies/"+s.policy, "", nil); r.status != 200 || len(r.body) != 0 {
		t.Fatalf("DELETE: %s, want 200 with no body", r)
	}
	if r := s.do("GET", "/policies/"+s.policy, "", nil); r.status != 404 {
		t.Fatalf("GET after DELETE: %s", r)
	}
	if r := s.do("GET", "/intents/"+id, "", nil); r.status != 200 {
		t.Fatalf("the intent is unreadable after its policy was deleted: %s", r)
	}
	if again := s.putPolicy(demoPolicy); again != s.policy {
		t.Fatalf("re-posting after delete gave %s, want %s", again, s.policy)
	}
}
