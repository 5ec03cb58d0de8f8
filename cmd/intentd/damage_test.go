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
