package http

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

// failingLog is a transparency log read from elsewhere that cannot be read: every
// read fails with err, as a cluster member's without a log of its own fails while no
// member that keeps one answers.
type failingLog struct{ err error }

func (f failingLog) Checkpoint(context.Context) ([]byte, error) { return nil, f.err }
func (f failingLog) Tile(context.Context, uint64, uint64, int) ([]byte, error) {
	return nil, f.err
}
func (f failingLog) Entries(context.Context, uint64, int) ([]byte, error) { return nil, f.err }
func (f failingLog) Inclusion(context.Context, string) (*intentd.LogInclusion, *intentd.LogWitnessing, error) {
	return nil, nil, f.err
}

// TestLogReadFails serves the log's routes over a log that cannot be read: each answers
// the error's status and code, and is not to be cached, since the resource may be
// served a moment later.
func TestLogReadFails(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"no member answers", &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeMemberUnavailable, Message: "no cluster member that keeps the transparency log answered; retry later"}, http.StatusServiceUnavailable, intentd.CodeMemberUnavailable},
		{"no member keeps a log", intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "no member of this cluster keeps a transparency log (--tlog)"), http.StatusNotFound, intentd.CodeLogNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(NewServer(openEngine(t), Options{Log: failingLog{c.err}}))
			defer ts.Close()
			for _, path := range []string{"/log/checkpoint", "/log/tile/0/000", "/log/tile/entries/000.p/3"} {
				resp, err := http.Get(ts.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.status || !strings.Contains(string(body), `"`+c.code+`"`) || resp.Header.Get("Cache-Control") != cacheMissing {
					t.Errorf("GET %s: %d %s, Cache-Control %q; want %d %s, %q", path, resp.StatusCode, body, resp.Header.Get("Cache-Control"), c.status, c.code, cacheMissing)
				}
			}
		})
	}
}
