package http

import (
	"net/http"
	"testing"
)

// TestRootRedirectsToConsole: GET / sends a browser to the console, with or without
// tokens (the console asks for one itself); every other path no route serves stays a
// 404, and a server without the console has nothing at /.
func TestRootRedirectsToConsole(t *testing.T) {
	e := openEngine(t)
	<-e.Ready()
	tests := []struct {
		name         string
		opts         Options
		method, path string
		status       int
		location     string
	}{
		{"GET /", Options{Console: true}, "GET", "/", http.StatusFound, "/ui/"},
		{"GET / with tokens", Options{Console: true, Tokens: allTokens(t)}, "GET", "/", http.StatusFound, "/ui/"},
		{"another path", Options{Console: true}, "GET", "/nowhere", http.StatusNotFound, ""},
		{"a doubled slash", Options{Console: true}, "GET", "//intents", http.StatusNotFound, ""},
		{"without the console", Options{}, "GET", "/", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(NewServer(e, tt.opts), tt.method, tt.path, "")
			if rec.Code != tt.status || rec.Header().Get("Location") != tt.location {
				t.Fatalf("%d, Location %q; want %d, %q\n%s", rec.Code, rec.Header().Get("Location"), tt.status, tt.location, rec.Body)
			}
		})
	}
}
