package persistence

import (
	"context"
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
