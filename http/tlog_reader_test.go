package http

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
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

// proofEngine is the real engine whose every proof is one fixed bundle.
type proofEngine struct {
	*actors.Engine
	bundle intentd.ProofBundle
}

func (p proofEngine) Proof(context.Context, string) (*intentd.ProofBundle, error) {
	b := p.bundle
	return &b, nil
}

// TestProofWhenTheLogFails serves a proof over a log that cannot be read: the bundle is
// served without its inclusion, whatever the log's error, and the error is logged at
// error only when it is internal; a cluster where no member keeps a log is as a server
// without one, and logs nothing.
func TestProofWhenTheLogFails(t *testing.T) {
	var bundle intentd.ProofBundle
	bundle.Receipt.Receipt.KeyID, bundle.Receipt.Receipt.IntentID = "k", "6f1c2a9e-55d3-4c1b-9a7e-0d2f8b3e4a10"
	for _, c := range []struct {
		name  string
		err   error
		level string // the level the error is logged at, "" for none
	}{
		{"internal", intentd.Internal("read leaf index: %w", io.ErrUnexpectedEOF), "level=ERROR"},
		{"no member answers", &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeMemberUnavailable, Message: "no member answered"}, "level=DEBUG"},
		{"no member keeps a log", intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "no member keeps one"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs strings.Builder
			srv := NewServer(proofEngine{openEngine(t), bundle}, Options{Log: failingLog{c.err}, Info: intentd.Info{KeyID: "k"},
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			ts := httptest.NewServer(srv)
			defer ts.Close()
			resp, err := http.Get(ts.URL + "/intents/" + bundle.Receipt.Receipt.IntentID + "/proof")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || strings.Contains(string(body), `"log"`) {
				t.Fatalf("proof: %d %s; want 200 without log", resp.StatusCode, body)
			}
			line := ""
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, "transparency log inclusion") {
					line = l
				}
			}
			if c.level == "" && line != "" || c.level != "" && !strings.Contains(line, c.level) {
				t.Errorf("logged %q; want the inclusion's error at %q", line, c.level)
			}
		})
	}
}
