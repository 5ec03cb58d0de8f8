package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedLogStart damages the write-ahead log of a stopped intentd that had
// acknowledged intents: the next start is refused with one line naming the log and
// --accept-data-loss, and with that flag the service starts on what remains.
func TestDamagedLogStart(t *testing.T) {
	ownStores(t)
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	for range 100 {
		s.submit()
	}
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) == 0 {
		t.Fatal("no write-ahead log in the data folder")
	}
	for _, l := range logs {
		if err := os.Truncate(l, 0); err != nil {
			t.Fatal(err)
		}
	}

	err := runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", dir})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), filepath.Base(logs[len(logs)-1])) || !strings.Contains(err.Error(), "--accept-data-loss") {
		t.Fatalf("Run on a damaged log: %v, want one line naming %s and --accept-data-loss", err, filepath.Base(logs[len(logs)-1]))
	}
	startServerIn(t, dir, []string{"--accept-data-loss"})
}

// TestDamagedTlogStart removes the CURRENT file of the transparency log's database
// while the server is stopped: the next start is refused with one line naming the log's
// folder and saying to remove it, and once it is removed the server starts and serves
// the log it had, rebuilt from the store.
func TestDamagedTlogStart(t *testing.T) {
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	s.decideMany(3)
	s.logReader().waitCheckpoint(t, 3)
	want := s.logSnapshot(3)
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}
	tlogDir := filepath.Join(dir, "tlog")
	if err := os.Remove(filepath.Join(tlogDir, "CURRENT")); err != nil {
		t.Fatal(err)
	}

	err := runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", dir})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tlogDir) || !strings.Contains(err.Error(), "remove the folder") {
		t.Fatalf("Run on a log without CURRENT: %v, want one line naming %s and saying to remove it", err, tlogDir)
	}
	if err := os.RemoveAll(tlogDir); err != nil {
		t.Fatal(err)
	}
	s = startServerIn(t, dir, nil)
	s.waitSameLog(want, 3)
}
