package persistence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedFolder opens data folders with a file of the store missing or damaged:
// each is refused with an error naming the folder and what is wrong, never a panic.
func TestDamagedFolder(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"CURRENT missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
				t.Fatal(err)
			}
		}, "the file CURRENT is missing"},
		// Only the first manifest is left, as a first open that stopped leaves it; but
		// the options and the mark are written once the store is created.
		{"CURRENT and the log missing", func(t *testing.T, dir string) {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, f := range append(logs, filepath.Join(dir, "CURRENT")) {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}, "the file CURRENT is missing"},
		{"CURRENT names no manifest", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "CURRENT"), []byte("MANIFEST-999999\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "MANIFEST-999999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.PutPolicy(context.Background(), "P", []byte{1}, []byte("src")); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tt.damage(t, dir)
			s, err = Open(dir, Options{})
			if err == nil {
				s.Close()
				t.Fatal("a damaged folder was opened")
			}
			if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open = %v, want an error naming %s and saying %q", err, dir, tt.want)
			}
		})
	}
}

// TestDamagedLog damages the write-ahead log of a store that acknowledged 200 intents,
// as a failing disk or a careless hand would after the fsync, in the ways that made
// Pebble drop records in silence: the store refuses to open, naming the log and what
// is missing, and opens with AcceptDataLoss on what remains, after which the loss is
// not reported again.
func TestDamagedLog(t *testing.T) {
	tests := []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"truncated to half", func(b []byte) []byte { return b[:len(b)/2] }},
		{"64 bytes flipped in the middle", func(b []byte) []byte {
			for i := len(b) / 2; i < len(b)/2+64; i++ {
				b[i] ^= 0xff
			}
			return b
		}},
		{"zeroed after the first quarter", func(b []byte) []byte {
			clear(b[len(b)/4:])
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openWithPolicy(t, dir)
			for i := range 200 {
				if err := s.CreateIntent(ctx, fmt.Sprintf("i%03d", i), "P", make([]byte, 300), t0); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			logs := damageLogs(t, dir, tt.damage)
			if len(logs) != 1 {
				t.Fatalf("log files %v, want one", logs)
			}

			_, err := Open(dir, Options{})
			if !errors.Is(err, ErrDataLoss) || !strings.Contains(err.Error(), filepath.Base(logs[0])) || !strings.Contains(err.Error(), "--accept-data-loss") {
				t.Fatalf("Open of a store that lost writes = %v, want ErrDataLoss naming %s", err, filepath.Base(logs[0]))
			}
			s, err = Open(dir, Options{AcceptDataLoss: true})
			if err != nil {
				t.Fatalf("Open with AcceptDataLoss: %v", err)
			}
			kept := 0
			for i := range 200 {
				if _, err := s.Intent(ctx, fmt.Sprintf("i%03d", i)); err == nil {
					kept++
				}
			}
			if kept == 200 {
				t.Fatal("the damage lost nothing: the test does not test")
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatalf("Open after the loss was accepted: %v", err)
			}
			s.Close()
		})
	}
}

// damageLogs passes each write-ahead log of the store in dir through damage, as a
// failing disk or a careless hand would change it after the fsync, and returns their
// names.
func damageLogs(t *testing.T, dir string, damage func([]byte) []byte) []string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(l, damage(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return logs
}

// openWithPolicy opens a store in dir and stores the policy "P" in it, which the
// intents of the tests name.
func openWithPolicy(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	return s
}
