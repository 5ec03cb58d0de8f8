package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/internal/backup"
)

// fakeBackup is a backup the server streams: a whole one, or one that fails after
// half its bytes.
type fakeBackup struct {
	data []byte
	fail bool
}

func (f fakeBackup) Name() string { return "intentd-backup-test.tar.gz" }
func (f fakeBackup) Close() error { return nil }
func (f fakeBackup) WriteTo(w io.Writer) (int64, error) {
	if f.fail {
		n, _ := w.Write(f.data[:len(f.data)/2])
		return int64(n), errors.New("the disk failed")
	}
	n, err := w.Write(f.data)
	return int64(n), err
}

func sampleBackup(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := backup.NewWriter(&b, backup.Header{Store: backup.StorePebble})
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("a table of the store ", 10000)
	if err := w.Add("000005.sst", int64(len(body)), strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBackup saves a backup, and checks that a backup that fails half-way leaves no
// file, and an earlier one as it was.
func TestBackup(t *testing.T) {
	data := sampleBackup(t)
	serve := func(fail bool) string {
		return startServerWith(t, evidence.DefaultCatalog(), 0, func(o *intenthttp.Options) {
			o.Backup = func(context.Context) (intenthttp.Backup, error) { return fakeBackup{data, fail}, nil }
		})
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "b.tar.gz")

	r := runCLI(t, serve(false), "backup", "-o", out)
	if r.code != 0 || !strings.Contains(r.stdout, "checked whole") {
		t.Fatalf("backup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file holds %d bytes (%v), want the %d of the backup", len(got), err, len(data))
	}
	checkMode(t, out, 0o600)

	r = runCLI(t, serve(true), "backup", "-o", out)
	if r.code != 1 {
		t.Fatalf("a backup broken off: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
		t.Fatal("a failed backup changed the earlier file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a failed backup left files: %v", entries)
	}

	if r := runCLI(t, serve(false), "backup"); r.code != 2 || !strings.Contains(r.stderr, "-o FILE") {
		t.Fatalf("backup without -o: exit %d, %s", r.code, r.stderr)
	}
}
