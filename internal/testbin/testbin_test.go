package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDirIsOneAndGoes: every call gives the same folder, and Remove takes it and what it
// holds away; a call after makes a new one.
func TestDirIsOneAndGoes(t *testing.T) {
	a, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Dir()
	if err != nil || b != a {
		t.Fatalf("second call: %q, %v; want %q", b, err, a)
	}
	if err := os.WriteFile(filepath.Join(a, "prog"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("the folder after Remove: %v, want it gone", err)
	}
	c, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	defer Remove()
	if c == a {
		t.Fatalf("a call after Remove gave the removed folder %q", c)
	}
	if err := Remove(); err != nil {
		t.Fatal(err)
	}
	if err := Remove(); err != nil {
		t.Fatalf("Remove with no folder: %v", err)
	}
}
