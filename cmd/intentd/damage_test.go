package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDamagedLogStart damages the write-ahead log of a stopped intentd that had
// acknowledged intents and published 30 outcomes: the next start is refused with one
// line naming the log and --accept-data-loss, and with that flag the service starts on
// what remains. The next outcome's event has an id past the 30 published, so that a
// subscriber that saw them takes it for a new one, and so does the transparency log,
// which keeps the 30 leaves it made and adds one for it.
func TestDamagedLogStart(t *testing.T) {
	t.Parallel()
	ownStores(t)
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	for range 100 {
		s.submit()
	}
	for i, id := range s.decideMany(30) {
		want := "success"
		if i%7 == 0 {
			want = "failure"
		}
		s.waitStatus(id, want)
	}
	published := s.eventIDs(30)
	s.logReader().waitCheckpoint(t, 30)
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
	s = startServerIn(t, dir, []string{"--accept-data-loss"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := s.openStream(ctx, "", "Last-Event-ID", published[29])
	id := s.decideMany(1)[0]
	ev, err := st.next()
	if err != nil {
		t.Fatalf("no event after %s once the loss was accepted: %v", published[29], err)
	}
	last, _ := strconv.ParseUint(published[29], 10, 64)
	if n, _ := strconv.ParseUint(ev.id, 10, 64); n <= last || decodeOutcome(t, ev).IntentID != id {
		t.Fatalf("the first event after the loss is %s of %s, want one of %s with an id past %d", ev.id, decodeOutcome(t, ev).IntentID, id, last)
	}
	s.logReader().waitCheckpoint(t, 31)
}

// TestDamagedMarkStart damages or removes the mark of a stopped intentd that had
// acknowledged intents: the next start is refused with one line naming the mark and
// what to do, not a loss from the log, and with --accept-data-loss the service starts
// with every intent.
func TestDamagedMarkStart(t *testing.T) {
	t.Parallel()
	ownStores(t)
	tests := []struct {
		name   string
		damage func(t *testing.T, mark string)
		want   string
	}{
		{"a byte flipped", func(t *testing.T, mark string) {
			b, err := os.ReadFile(mark)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0xff
			if err := os.WriteFile(mark, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "the mark is damaged"},
		{"removed", func(t *testing.T, mark string) {
			if err := os.Remove(mark); err != nil {
				t.Fatal(err)
			}
		}, "the mark is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := startServerIn(t, dir, nil)
			var ids []string
			for range 18 {
				ids = append(ids, s.submit())
			}
			if err := s.m.Close(); err != nil {
				t.Fatal(err)
			}
			mark := filepath.Join(dir, "intentd.mark")
			tt.damage(t, mark)

			err := runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", dir})
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), mark) ||
				!strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "--accept-data-loss") ||
				strings.Contains(err.Error(), "write-ahead log (") {
				t.Fatalf("Run with a damaged mark: %v, want one line naming %s, saying %q and --accept-data-loss", err, mark, tt.want)
			}
			s = startServerIn(t, dir, []string{"--accept-data-loss"})
			for _, id := range ids {
				if st := s.status(id); st["status"] != "open" {
					t.Fatalf("intent %s after the mark was replaced: %v", id, st)
				}
			}
		})
	}
}

// TestDamagedTlogStart removes the CURRENT file of the transparency log's database
// while the server is stopped: the next start is refused with one line naming the log's
// folder and saying to remove it, and once it is removed the server starts and serves
// the log it had, rebuilt from the store.
func TestDamagedTlogStart(t *testing.T) {
	t.Parallel()
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
