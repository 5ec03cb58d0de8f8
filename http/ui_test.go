package http

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/intentd/intentd"
)

// noMarks is an engine that cannot place times among its events.
type noMarks struct{ intentd.Engine }

// TestConsoleMinutes checks the Live chart's minutes: sixty marks ending with the
// current minute, outcomes decided just now placed in the last two of them (the test
// may cross a minute's turn), the read role with tokens, and 404 not_found from an
// engine that cannot place its events.
func TestConsoleMinutes(t *testing.T) {
	e := openEngine(t)
	<-e.Ready()
	srv := NewServer(e, Options{Console: true, Tokens: allTokens(t)})
	postTestIntent(t, e, srv, "Bearer all")
	if err := e.Propose(t.Context(), testIntentID, intentd.Proposal{Solution: "https://shop.example/products/tshirt-navy-m"}, nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st, err := e.Status(t.Context(), testIntentID); err != nil || st.State.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the intent was not decided")
		}
	}

	tests := []struct {
		name, auth string
		engine     intentd.Engine
		status     int
	}{
		{"read", "Bearer read", e, http.StatusOK},
		{"every role", "Bearer all", e, http.StatusOK},
		{"no token", "", e, http.StatusUnauthorized},
		{"metrics role", "Bearer metrics", e, http.StatusForbidden},
		{"engine without marks", "Bearer read", noMarks{e}, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := srv
			if tt.engine != intentd.Engine(e) {
				s = NewServer(tt.engine, Options{Console: true, Tokens: allTokens(t)})
			}
			before := time.Now()
			rec := serve(s, "GET", consoleMinutes, tt.auth)
			if rec.Code != tt.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tt.status)
			}
			if tt.status != http.StatusOK {
				return
			}
			var a consoleMinutesAnswer
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			if len(a.Before) != chartMinutes || a.LastID != 1 || !a.RetainedFrom.IsZero() {
				t.Fatalf("answer %s: want %d marks, last id 1, nothing pruned", rec.Body, chartMinutes)
			}
			if a.Minute != before.Unix()/60 && a.Minute != before.Unix()/60+1 || a.Now.Unix()/60 != a.Minute {
				t.Fatalf("minute %d, now %s; the test began at %s", a.Minute, a.Now, before)
			}
			// The one event is newer than every mark but the last two.
			for i, b := range a.Before[:chartMinutes-2] {
				if b != 0 {
					t.Fatalf("mark %d is %d: the event is placed %d minutes ago", i, b, chartMinutes-1-i)
				}
			}
		})
	}

	// Without the console, the minutes are not served.
	if rec := serve(NewServer(e, Options{}), "GET", consoleMinutes, ""); rec.Code != http.StatusNotFound {
		t.Fatalf("without the console: %d, want 404", rec.Code)
	}
}
