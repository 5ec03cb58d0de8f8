package http

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intentd/intentd"
)

// stubBackup is a backup that writes body, after waiting for release when it is set.
type stubBackup struct {
	body    string
	started chan struct{}
	release chan struct{}
	closed  chan struct{}
}

func (b *stubBackup) Name() string { return "intentd-backup-20261129T070000Z.tar.gz" }
func (b *stubBackup) Close() error { close(b.closed); return nil }
func (b *stubBackup) WriteTo(w io.Writer) (int64, error) {
	if b.started != nil {
		close(b.started)
		<-b.release
	}
	n, err := io.WriteString(w, b.body)
	return int64(n), err
}

// TestBackupRoute checks POST /admin/backup's answers: the backup with its headers,
// the errors met before it begins, one backup at a time, and a server without backups.
func TestBackupRoute(t *testing.T) {
	post := func(t *testing.T, url string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Post(url+"/admin/backup", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	code := func(t *testing.T, body string) string {
		t.Helper()
		var e ErrorResponse
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("not an error: %s", body)
		}
		return e.Code
	}

	t.Run("whole", func(t *testing.T) {
		b := &stubBackup{body: "the backup", closed: make(chan struct{})}
		ts := httptest.NewServer(NewServer(openEngine(t), Options{Backup: func(context.Context) (Backup, error) { return b, nil }}))
		defer ts.Close()
		resp, body := post(t, ts.URL)
		if resp.StatusCode != 200 || body != "the backup" || resp.Header.Get("Content-Type") != "application/gzip" ||
			resp.Header.Get("Content-Disposition") != `attachment; filename="intentd-backup-20261129T070000Z.tar.gz"` {
			t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
		}
		<-b.closed
	})
	t.Run("storage full", func(t *testing.T) {
		full := &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStorageFull, Message: "no room", Err: intentd.ErrStorageFull}
		ts := httptest.NewServer(NewServer(openEngine(t), Options{Backup: func(context.Context) (Backup, error) { return nil, full }}))
		defer ts.Close()
		resp, body := post(t, ts.URL)
		if resp.StatusCode != 503 || code(t, body) != intentd.CodeStorageFull || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("internal", func(t *testing.T) {
		ts := httptest.NewServer(NewServer(openEngine(t), Options{Backup: func(context.Context) (Backup, error) { return nil, errors.New("checkpoint: disk gone") }}))
		defer ts.Close()
		resp, body := post(t, ts.URL)
		if resp.StatusCode != 500 || strings.Contains(body, "disk gone") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("one at a time", func(t *testing.T) {
		b := &stubBackup{body: "first", started: make(chan struct{}), release: make(chan struct{}), closed: make(chan struct{})}
		ts := httptest.NewServer(NewServer(openEngine(t), Options{Backup: func(context.Context) (Backup, error) { return b, nil }}))
		defer ts.Close()
		done := make(chan string)
		go func() {
			resp, err := http.Post(ts.URL+"/admin/backup", "", nil)
			if err != nil {
				done <- err.Error()
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			done <- string(body)
		}()
		<-b.started
		resp, body := post(t, ts.URL)
		if resp.StatusCode != 503 || code(t, body) != intentd.CodeBackupInProgress {
			t.Fatalf("a second backup meanwhile: %d %s", resp.StatusCode, body)
		}
		close(b.release)
		if got := <-done; got != "first" {
			t.Fatalf("the first backup: %q", got)
		}
	})
	t.Run("none", func(t *testing.T) {
		ts := httptest.NewServer(NewServer(openEngine(t), Options{}))
		defer ts.Close()
		resp, body := post(t, ts.URL)
		if resp.StatusCode != 404 || code(t, body) != CodeNotFound {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
}
