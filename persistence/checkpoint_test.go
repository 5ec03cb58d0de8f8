package persistence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckpoint takes a checkpoint of a store on disk, opens it as a store of its own
// (its mark checked as a start would) and finds what was written before it, and checks
// that a checkpoint an interrupted backup left is removed at the next open.
func TestCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.PutPolicy(ctx, "P", []byte{7}, []byte("src"))
	mustCreate(t, s, "open", "P", "o")
	mustCreate(t, s, "done", "P", "d")
	if _, err := finish(s, "done", "P", []byte("d2")); err != nil {
		t.Fatal(err)
	}
	cp, err := s.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(cp) != dir || !strings.HasPrefix(filepath.Base(cp), checkpointPrefix) {
		t.Fatalf("checkpoint in %s, want a %s* folder in %s", cp, checkpointPrefix, dir)
	}
	mustCreate(t, s, "after", "P", "a")
	copied := filepath.Join(t.TempDir(), "copy")
	if err := os.Rename(cp, copied); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(copied, markFile)); err != nil {
		t.Fatalf("the checkpoint has no mark: %v", err)
	}
	c, err := Open(copied, Options{})
	if err != nil {
		t.Fatalf("open the checkpoint: %v", err)
	}
	for id, want := range map[string]string{"open": "o", "done": "d2"} {
		if got, err := c.Intent(ctx, id); err != nil || string(got) != want {
			t.Errorf("intent %s in the checkpoint = %q, %v; want %q", id, got, err, want)
		}
	}
	if first, last, err := c.EventBounds(ctx); err != nil || first != 1 || last != 1 {
		t.Errorf("events in the checkpoint: %d to %d, %v; want 1 to 1", first, last, err)
	}
	c.Close()

	left, err := s.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("the checkpoint left by an interrupted backup is still there: %v", err)
	}
}

func TestCheckpointInMemory(t *testing.T) {
	s := openMem(t, NewMemFS())
	defer s.Close()
	if _, err := s.Checkpoint(); err == nil {
		t.Fatal("a checkpoint of an in-memory store: no error")
	}
}
