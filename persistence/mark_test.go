package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/intentd/intentd/internal/syncbuf"
)

// storeWithWrites makes a store in a folder of its own with a policy and n intents,
// closed, and returns the folder.
func storeWithWrites(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	s := openWithPolicy(t, dir)
	for i := range n {
		mustCreate(t, s, fmt.Sprintf("i%03d", i), "P", "o")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readMarkFile decodes the mark in dir, failing the test unless there is a whole one.
func readMarkFile(t *testing.T, dir string) markRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, markFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeMark(b)
	if err != nil {
		t.Fatalf("the mark %x: %v", b, err)
	}
	return m
}

// TestMarkDamaged damages the mark of a store that holds 18 intents: the start is
// refused with one line that names the mark as what is damaged and says what to do,
// never as writes lost from the log; with AcceptDataLoss the store opens, whole, and
// writes a mark that the next start reads.
func TestMarkDamaged(t *testing.T) {
	tests := []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"a byte of the write number flipped", func(b []byte) []byte { b[len(markMagic)] ^= 0xff; return b }},
		{"a bit of the event sequence flipped", func(b []byte) []byte { b[len(markMagic)+15] ^= 1; return b }},
		{"a bit of the checksum flipped", func(b []byte) []byte { b[markLen-1] ^= 0x80; return b }},
		{"cut short", func(b []byte) []byte { return b[:20] }},
		{"a byte more", func(b []byte) []byte { return append(b, 0) }},
		{"empty", func([]byte) []byte { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := storeWithWrites(t, 18)
			path := filepath.Join(dir, markFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tt.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}

			_, err = Open(dir, Options{})
			if !errors.Is(err, ErrMarkDamaged) || errors.Is(err, ErrDataLoss) {
				t.Fatalf("Open with a damaged mark = %v, want ErrMarkDamaged and not ErrDataLoss", err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, path) ||
				!strings.Contains(msg, "--accept-data-loss") || !strings.Contains(msg, "restore "+markFile) {
				t.Fatalf("Open with a damaged mark = %q, want one line naming %s and what to do", msg, path)
			}

			var log syncbuf.Buffer
			s, err := Open(dir, Options{AcceptDataLoss: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatalf("Open with AcceptDataLoss: %v", err)
			}
			for i := range 18 {
				if _, err := s.Intent(ctx, fmt.Sprintf("i%03d", i)); err != nil {
					t.Errorf("intent %d after the mark was replaced: %v", i, err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "mark is damaged") {
				t.Errorf("no warning that the mark was damaged; the log:\n%s", log.String())
			}
			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatalf("Open after the mark was replaced: %v", err)
			}
			s.Close()
		})
	}
}

// TestMarkFirstForm opens stores whose mark is in its first form, the two numbers
// alone: it is read, a loss against it is still found, and the next mark is written in
// the form with a checksum.
func TestMarkFirstForm(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("lost %v", lost), func(t *testing.T) {
			dir := storeWithWrites(t, 5)
			m := readMarkFile(t, dir)
			if lost {
				m.writes++
			}
			v1 := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, m.writes), m.events)
			if err := os.WriteFile(filepath.Join(dir, markFile), v1, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir, Options{})
			if lost {
				if !errors.Is(err, ErrDataLoss) {
					t.Fatalf("Open of a store below its first-form mark = %v, want ErrDataLoss", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open with a first-form mark: %v", err)
			}
			mustCreate(t, s, "more", "P", "o")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, markFile)); len(b) != markLen || !bytes.HasPrefix(b, []byte(markMagic)) {
				t.Fatalf("the mark after a write is %x, want the form with a checksum", b)
			}
			if got := readMarkFile(t, dir); got.writes <= m.writes {
				t.Fatalf("the mark after a write = %+v, want writes past %d", got, m.writes)
			}
		})
	}
}

// TestMarkChecksum flips each bit of a mark in turn: every one is found.
func TestMarkChecksum(t *testing.T) {
	b := markRecord{writes: 1 << 40, events: 12345, issued: 12400}.encode()
	for i := range len(b) * 8 {
		c := bytes.Clone(b)
		c[i/8] ^= 1 << (i % 8)
		if m, err := decodeMark(c); !errors.Is(err, ErrMarkDamaged) {
			t.Fatalf("bit %d flipped: decodeMark = %+v, %v; want ErrMarkDamaged", i, m, err)
		}
	}
}

// FuzzDecodeMark decodes any bytes as a mark: it never panics, a mark it reads in the
// current form is written back to the same bytes, and one in the first form is the two
// numbers it holds, with the event sequence as the highest id handed out.
func FuzzDecodeMark(f *testing.F) {
	f.Add(markRecord{}.encode())
	f.Add(markRecord{writes: 18, events: 7, issued: 1031}.encode())
	f.Add(markRecord{writes: 1<<64 - 1, events: 1<<64 - 1, issued: 1<<64 - 1}.encode())
	f.Add(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 18), 7))
	f.Add([]byte{})
	f.Add([]byte(markMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMark(b)
		if err != nil {
			if !errors.Is(err, ErrMarkDamaged) {
				t.Fatalf("decodeMark(%x) = %v, not ErrMarkDamaged", b, err)
			}
			return
		}
		switch len(b) {
		case markLen:
			if !bytes.Equal(m.encode(), b) {
				t.Fatalf("decodeMark(%x) = %+v, which encodes as %x", b, m, m.encode())
			}
		case markLenV1:
			if m.writes != binary.BigEndian.Uint64(b) || m.events != binary.BigEndian.Uint64(b[8:]) || m.issued != m.events {
				t.Fatalf("decodeMark(%x) = %+v", b, m)
			}
		default:
			t.Fatalf("decodeMark read %d bytes as %+v", len(b), m)
		}
	})
}

// TestMarkMissing opens stores whose mark is gone. One with numbered writes, which
// only a version that keeps the mark makes, lost it: the start is refused with one
// line naming the mark and what to do, or with AcceptDataLoss opens, whole, with a
// warning. One without numbered writes, as a version before the mark left it, opens
// as it did, with a warning; a new store opens without one, and has its mark before
// its first write.
func TestMarkMissing(t *testing.T) {
	tests := []struct {
		name    string
		folder  func(t *testing.T) string
		refused bool
		warning string // "": none
		intents int    // of the 18 written, those read back
	}{
		{"numbered writes", func(t *testing.T) string {
			return storeWithWrites(t, 18)
		}, true, "mark is missing", 18},
		{"numbered writes, and half the log lost", func(t *testing.T) string {
			dir := storeWithWrites(t, 18)
			cutLog(t, dir, 2)
			return dir
		}, true, "mark is missing", 0},
		{"a store from before the mark", func(t *testing.T) string {
			dir := storeWithWrites(t, 18)
			db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{}})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.DeleteRange([]byte{prefixWrite}, []byte{prefixWrite + 1}, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			return dir
		}, false, "version that kept none", 18},
		{"the whole log lost", func(t *testing.T) string {
			dir := storeWithWrites(t, 18)
			cutLog(t, dir, 0)
			return dir
		}, false, "is empty and has no mark", 0},
		{"a new store", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "new")
		}, false, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.folder(t)
			path := filepath.Join(dir, markFile)
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			var log syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&log, nil))
			s, err := Open(dir, Options{Logger: logger})
			if tt.refused {
				if err == nil {
					s.Close()
					t.Fatal("a store that lost its mark was opened")
				}
				if msg := err.Error(); !errors.Is(err, ErrMarkMissing) || strings.Contains(msg, "\n") || !strings.Contains(msg, path) ||
					!strings.Contains(msg, "--accept-data-loss") || !strings.Contains(msg, "restore "+markFile) {
					t.Fatalf("Open without the mark = %v, want ErrMarkMissing in one line naming %s and what to do", err, path)
				}
				s, err = Open(dir, Options{Logger: logger, AcceptDataLoss: true})
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			// The mark is there before any write.
			if _, err := os.Stat(path); err != nil {
				t.Errorf("no mark once the store is open: %v", err)
			}
			if tt.warning == "" && strings.Contains(log.String(), "level=WARN") || tt.warning != "" && !strings.Contains(log.String(), tt.warning) {
				t.Errorf("the log, want a warning saying %q (none if empty):\n%s", tt.warning, log.String())
			}
			for i := range tt.intents {
				if _, err := s.Intent(ctx, fmt.Sprintf("i%03d", i)); err != nil {
					t.Errorf("intent %d: %v", i, err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatalf("Open once a mark is written: %v", err)
			}
			s.Close()
		})
	}
}

// cutLog keeps 1/keepOf of the write-ahead log of the store in dir (none for 0).
func cutLog(t *testing.T, dir string, keepOf int) {
	t.Helper()
	damageLogs(t, dir, func(b []byte) []byte {
		if keepOf == 0 {
			return nil
		}
		return b[:len(b)/keepOf]
	})
}
