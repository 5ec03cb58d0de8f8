package http

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

func TestParseTokens(t *testing.T) {
	h := HashToken("s3cret")
	tests := []struct {
		name    string
		file    string
		want    int
		wantErr string
	}{
		{"one", h + " admin,read ops\n", 1, ""},
		{"comments, blanks and tabs", "# the ops team\n\n\t" + h + "\tread\n", 1, ""},
		{"two", h + " read\n" + HashToken("other") + " submit,propose\n", 2, ""},
		{"repeated role", h + " read,read\n", 1, ""},
		{"empty", "", 0, "no token"},
		{"only comments", "# x\n", 0, "no token"},
		{"the token itself", "s3cret admin\n", 0, "line 1: the first field does not start with sha256:"},
		{"upper-case prefix", "SHA256:" + strings.TrimPrefix(h, "sha256:") + " read\n", 0, "does not start with sha256:"},
		{"short hash", "sha256:00ff read\n", 0, "line 1: the hash is not 64 hex digits"},
		{"not hex", "sha256:" + strings.Repeat("zz", 32) + " read\n", 0, "not 64 hex digits"},
		{"no roles", h + "\n", 0, "line 1: 1 fields"},
		{"too many fields", h + " read a b\n", 0, "4 fields"},
		{"unknown role", "# c\n" + h + " read,root\n", 0, `line 2: unknown role "root"`},
		{"empty role", h + " read,\n", 0, `unknown role ""`},
		{"hash twice", h + " read\n" + h + " admin\n", 0, "line 2: the hash is given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := ParseTokens(strings.NewReader(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the error quotes the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tok.Len() != tt.want {
				t.Fatalf("Len = %d, want %d", tok.Len(), tt.want)
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	tok, err := ParseTokens(strings.NewReader(HashToken("alpha") + " admin,read ops\n" + HashToken("beta") + " submit\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		header string
		ok     bool
		name   string
		roles  []Role
	}{
		{"Bearer alpha", true, "ops", []Role{RoleAdmin, RoleRead}},
		{"bearer alpha", true, "ops", []Role{RoleAdmin, RoleRead}},
		{"Bearer   alpha", true, "ops", []Role{RoleAdmin, RoleRead}},
		{"Bearer beta", true, HashToken("beta")[:len(TokenHashPrefix)+8], []Role{RoleSubmit}},
		{"Bearer alph", false, "", nil},
		{"Bearer alpha ", false, "", nil},
		{"Bearer ", false, "", nil},
		{"Bearer", false, "", nil},
		{"Basic alpha", false, "", nil},
		{"alpha", false, "", nil},
		{"", false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			c, ok := tok.authenticate(tt.header)
			if ok != tt.ok || c.name != tt.name || !slices.Equal(c.roles, tt.roles) {
				t.Fatalf("authenticate(%q) = %+v, %v; want %q %v, %v", tt.header, c, ok, tt.name, tt.roles, tt.ok)
			}
		})
	}
}

// TestReadyz checks /readyz before the engine is ready, after, and once draining.
func TestReadyz(t *testing.T) {
	ready := make(chan struct{})
	srv := NewServer(openEngine(t), Options{Ready: ready})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	steps := []struct {
		name   string
		do     func()
		status int
		body   string
	}{
		{"before recovery", func() {}, http.StatusServiceUnavailable, `"code":"not_ready"`},
		{"after recovery", func() { close(ready) }, http.StatusOK, "ready\n"},
		{"draining", srv.Drain, http.StatusServiceUnavailable, `"code":"shutting_down"`},
	}
	for _, st := range steps {
		st.do()
		if rec := get("/readyz"); rec.Code != st.status || !strings.Contains(rec.Body.String(), st.body) {
			t.Fatalf("%s: /readyz %d %s, want %d %s", st.name, rec.Code, rec.Body, st.status, st.body)
		}
		if rec := get("/healthz"); rec.Code != http.StatusOK {
			t.Fatalf("%s: /healthz %d", st.name, rec.Code)
		}
	}
}

// TestReadyzStoreLost answers 503 with the code of a store whose data was deleted or
// changed under the service, and its message, never the cause the store gives.
func TestReadyzStoreLost(t *testing.T) {
	for _, code := range []string{intentd.CodeStoreMissing, intentd.CodeStoreChanged} {
		lost := &intentd.Error{Kind: intentd.KindBusy, Code: code, Message: "the store's data is gone",
			Err: errors.New("stream SECRET_NAME was deleted")}
		srv := NewServer(openEngine(t), Options{Writable: func() error { return lost }})
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		body := rec.Body.String()
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"`+code+`"`) ||
			!strings.Contains(body, "the store's data is gone") || strings.Contains(body, "SECRET_NAME") || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("/readyz with the store lost (%s): %d %s", code, rec.Code, body)
		}
	}
}

// FuzzParseTokens checks that no file makes the parser panic, and that what it
// accepts authenticates exactly the tokens whose hashes it holds.
func FuzzParseTokens(f *testing.F) {
	for _, seed := range []string{
		HashToken("a") + " admin,read ops\n",
		"# c\n\n" + HashToken("b") + "\tsubmit\n",
		"sha256:zz read\n", "x", "\x00\n\r\n", HashToken("a") + " read,\n",
	} {
		f.Add(seed, "a")
	}
	f.Fuzz(func(t *testing.T, file, token string) {
		tok, err := ParseTokens(strings.NewReader(file))
		if err != nil {
			return
		}
		if tok.Len() == 0 {
			t.Fatal("a tokens set with no token was accepted")
		}
		_, ok := tok.authenticate("Bearer " + token)
		if ok && !strings.Contains(strings.ToLower(file), strings.TrimPrefix(HashToken(strings.TrimLeft(token, " ")), TokenHashPrefix)) {
			t.Fatalf("token %q authenticates, but its hash is not in the file", token)
		}
	})
}
