package http

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
)

// noTimes is an engine that keeps no times: the embedded interface hides the real
// engine's Timeline method.
type noTimes struct{ intentd.Engine }

// postTestIntent stores the signed test intent under a policy that always passes,
// through srv with the token auth ("" for none).
func postTestIntent(t *testing.T, e intentd.Engine, srv http.Handler, auth string) {
	t.Helper()
	policyID, err := e.PutPolicy(t.Context(), "name x\nrequires { true; }\n")
	if err != nil {
		t.Fatal(err)
	}
	intent := `{"id":"` + testIntentID + `","policy_id":"` + policyID + `"}`
	_, key, _ := ed25519.GenerateKey(nil)
	a, err := crypto.SignEd25519(key, []byte(intent))
	if err != nil {
		t.Fatal(err)
	}
	aj, _ := json.Marshal(a)
	req := httptest.NewRequest("POST", "/intents", strings.NewReader(`{"intent":`+intent+`,"authorship":`+string(aj)+`}`))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST /intents: %d %s", rec.Code, rec.Body)
	}
}

// TestTimelineRoute checks GET /intents/{id}/timeline: the times of a stored intent by
// the server's clock, 404 intent_not_found for an unknown or malformed id, 404
// not_found from an engine that keeps no times, and the read role with tokens.
func TestTimelineRoute(t *testing.T) {
	e := openEngine(t)
	<-e.Ready()
	srv := NewServer(e, Options{Tokens: allTokens(t)})

	before := time.Now()
	postTestIntent(t, e, srv, "Bearer all")
	after := time.Now()

	path := "/intents/" + testIntentID + "/timeline"
	tests := []struct {
		name, path, auth string
		engine           intentd.Engine
		status           int
		code             string
	}{
		{"found", path, "Bearer read", e, http.StatusOK, ""},
		{"found with every role", path, "Bearer all", e, http.StatusOK, ""},
		{"unknown intent", "/intents/0b6c6f3e-2a6d-4d8e-9d7a-3f0c2b1a9e88/timeline", "Bearer read", e, http.StatusNotFound, intentd.CodeIntentNotFound},
		{"not a uuid", "/intents/not-an-id/timeline", "Bearer read", e, http.StatusNotFound, intentd.CodeIntentNotFound},
		{"engine without times", path, "Bearer read", noTimes{e}, http.StatusNotFound, CodeNotFound},
		{"no token", path, "", e, http.StatusUnauthorized, CodeUnauthorized},
		{"unknown token", path, "Bearer nobody", e, http.StatusUnauthorized, CodeUnauthorized},
		{"submit role", path, "Bearer submit", e, http.StatusForbidden, CodeForbidden},
		{"propose role", path, "Bearer propose", e, http.StatusForbidden, CodeForbidden},
		{"metrics role", path, "Bearer metrics", e, http.StatusForbidden, CodeForbidden},
		{"post", path, "Bearer all", e, http.StatusMethodNotAllowed, CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := srv
			if tt.engine != intentd.Engine(e) {
				s = NewServer(tt.engine, Options{Tokens: allTokens(t)})
			}
			method := "GET"
			if tt.name == "post" {
				method = "POST"
			}
			rec := serve(s, method, tt.path, tt.auth)
			if rec.Code != tt.status {
				t.Fatalf("%s %s: %d %s, want %d", method, tt.path, rec.Code, rec.Body, tt.status)
			}
			if tt.code != "" {
				var body struct{ Code string }
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Code != tt.code {
					t.Fatalf("%s: body %s, want code %s", tt.path, rec.Body, tt.code)
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			// An open intent has been created and has a deadline, and nothing else yet.
			if _, ok := got["proposed_at"]; ok || got["finished_at"] != nil || len(got) != 2 {
				t.Fatalf("the timeline of an open intent is %s, want created_at and expires_at only", rec.Body)
			}
			var tl intentd.Timeline
			if err := json.Unmarshal(rec.Body.Bytes(), &tl); err != nil {
				t.Fatal(err)
			}
			if tl.CreatedAt.Before(before.Add(-time.Second)) || tl.CreatedAt.After(after.Add(time.Second)) {
				t.Errorf("created_at %s, want between %s and %s", tl.CreatedAt, before, after)
			}
			if ttl := tl.ExpiresAt.Sub(tl.CreatedAt); ttl != 24*time.Hour {
				t.Errorf("expires_at is %s after created_at, want the engine's TTL of 24h", ttl)
			}
		})
	}
}

// TestTimelineRouteAfterOutcome checks that a decided intent's timeline has its
// proposal's and its end's times, in order.
func TestTimelineRouteAfterOutcome(t *testing.T) {
	e := openEngine(t)
	<-e.Ready()
	srv := NewServer(e, Options{})
	ctx := t.Context()
	postTestIntent(t, e, srv, "")
	if err := e.Propose(ctx, testIntentID, intentd.Proposal{Solution: "https://shop.example/products/tshirt-navy-m"}, nil); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		st, err := e.Status(waitCtx, testIntentID)
		if err != nil {
			t.Fatal(err)
		}
		if st.State.Terminal() {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	rec := serve(srv, "GET", "/intents/"+testIntentID+"/timeline", "")
	var tl intentd.Timeline
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &tl) != nil {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if tl.ProposedAt.Before(tl.CreatedAt) || tl.FinishedAt.Before(tl.ProposedAt) || tl.ProposedAt.IsZero() || tl.FinishedAt.IsZero() {
		t.Fatalf("timeline %+v: want created <= proposed <= finished, all set", tl)
	}
}
