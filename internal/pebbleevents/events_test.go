package pebbleevents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/intentd/intentd/internal/syncbuf"
)

// jsonLines decodes the JSON log lines written to b.
func jsonLines(t *testing.T, b *syncbuf.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range bytes.Lines(b.Bytes()) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestListenerLogsFlushesAndCompactions(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	db, err := pebble.Open("db", &pebble.Options{FS: vfs.NewMem(), EventListener: Listener(log, "store")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := bytes.Repeat([]byte("v"), 1000)
	for round := range 2 {
		for i := range 200 {
			if err := db.Set(fmt.Appendf(nil, "key-%04d", i), value, pebble.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatalf("flush %d: %v", round, err)
		}
	}
	if err := db.Compact([]byte("key-"), []byte("key-~"), true); err != nil {
		t.Fatal(err)
	}

	var flushes, compactions int
	for _, m := range jsonLines(t, &buf) {
		if m["db"] != "store" {
			t.Errorf("line %v: db = %v, want store", m, m["db"])
		}
		switch m["msg"] {
		case FlushedMsg:
			flushes++
			// Each flush holds 200 values of 1,000 bytes.
			if in, _ := m["bytes_in"].(float64); in < 200_000 {
				t.Errorf("flush line %v: bytes_in below the 200 KB flushed", m)
			}
			if out, _ := m["bytes_out"].(float64); out <= 0 {
				t.Errorf("flush line %v: no bytes_out", m)
			}
			if _, ok := m["took"].(float64); !ok {
				t.Errorf("flush line %v: no took", m)
			}
		case CompactedMsg:
			compactions++
			if out, _ := m["bytes_out"].(float64); out <= 0 {
				t.Errorf("compaction line %v: no bytes_out", m)
			}
			if from, _ := m["from"].([]any); len(from) == 0 {
				t.Errorf("compaction line %v: no input level", m)
			}
		case BackgroundErrorMsg:
			t.Errorf("unexpected error line %v", m)
		}
	}
	if flushes != 2 {
		t.Errorf("%d flush lines, want 2 (one per Flush)", flushes)
	}
	if compactions == 0 {
		t.Error("no compaction line after a manual compaction of two overlapping tables")
	}
}

func TestListenerWithoutLogger(t *testing.T) {
	l := Listener(nil, "store")
	// A listener without a logger must not panic on any event.
	l.BackgroundError(fmt.Errorf("disk gone"))
	l.FlushEnd(pebble.FlushInfo{})
	l.CompactionEnd(pebble.CompactionInfo{})
	l.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	l.WriteStallEnd()
	l.DiskSlow(vfs.DiskSlowInfo{})
}

func TestListenerLevels(t *testing.T) {
	boom := fmt.Errorf("no space left on device")
	tests := []struct {
		name  string
		event func(*pebble.EventListener)
		msg   string // "": no line
		level string
	}{
		{"background error", func(l *pebble.EventListener) { l.BackgroundError(boom) }, BackgroundErrorMsg, "ERROR"},
		// A failed flush or compaction is also a background error, logged there once.
		{"failed flush", func(l *pebble.EventListener) { l.FlushEnd(pebble.FlushInfo{Err: boom}) }, "", ""},
		{"failed compaction", func(l *pebble.EventListener) { l.CompactionEnd(pebble.CompactionInfo{Err: boom}) }, "", ""},
		{"write stall", func(l *pebble.EventListener) {
			l.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "L0 file count limit exceeded"})
		}, "store writes stalled: flushes or compactions are behind", "WARN"},
		{"flush", func(l *pebble.EventListener) { l.FlushEnd(pebble.FlushInfo{InputBytes: 10}) }, FlushedMsg, "INFO"},
		{"slow disk", func(l *pebble.EventListener) {
			l.DiskSlow(vfs.DiskSlowInfo{Path: "/data/000012.log", OpType: vfs.OpTypeSyncData, Duration: 7 * time.Second})
		}, DiskSlowMsg, "WARN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf syncbuf.Buffer
			tt.event(Listener(slog.New(slog.NewJSONHandler(&buf, nil)), "tlog"))
			lines := jsonLines(t, &buf)
			if tt.msg == "" {
				if len(lines) != 0 {
					t.Fatalf("lines %v, want none", lines)
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("%d lines, want 1: %v", len(lines), lines)
			}
			m := lines[0]
			if m["msg"] != tt.msg || m["level"] != tt.level || m["db"] != "tlog" {
				t.Errorf("line %v, want msg %q at %s for db tlog", m, tt.msg, tt.level)
			}
		})
	}
}

// TestBackgroundErrorsAreSpaced fails a flush over and over, as Pebble does while a
// disk stays full: one line, then none until errorGap has passed.
func TestBackgroundErrorsAreSpaced(t *testing.T) {
	var buf syncbuf.Buffer
	l := Listener(slog.New(slog.NewJSONHandler(&buf, nil)), "store")
	for range 1000 {
		l.BackgroundError(fmt.Errorf("write 000123.sst: no space left on device"))
	}
	lines := jsonLines(t, &buf)
	if len(lines) != 1 {
		t.Fatalf("%d lines for 1,000 errors within %v, want 1", len(lines), errorGap)
	}
	if lines[0]["err"] != "write 000123.sst: no space left on device" || lines[0]["repeated"] != 0.0 {
		t.Errorf("line %v: want the error's message and repeated 0", lines[0])
	}
}

func TestEvery(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	now := t0
	e := &every{gap: 10 * time.Second, now: func() time.Time { return now }}
	steps := []struct {
		at      time.Duration
		ok      bool
		skipped int
	}{
		{0, true, 0},
		{time.Second, false, 0},
		{9 * time.Second, false, 0},
		{10 * time.Second, true, 2},
		{15 * time.Second, false, 0},
		{time.Minute, true, 1},
		{2 * time.Minute, true, 0},
	}
	for _, st := range steps {
		now = t0.Add(st.at)
		if ok, skipped := e.allow(); ok != st.ok || skipped != st.skipped {
			t.Errorf("at %v: allow() = %v, %d; want %v, %d", st.at, ok, skipped, st.ok, st.skipped)
		}
	}
}
