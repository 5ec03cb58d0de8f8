package secretfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteNewThenRead writes a secret that Read takes back, never replaces it, and
// refuses what is too open, too large or not a file.
func TestWriteNewThenRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	if err := WriteNew(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(path, []byte("two")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second WriteNew: %v, want fs.ErrExist", err)
	}
	if got, err := Read(path, 3); err != nil || string(got) != "one" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if _, err := Read(filepath.Join(dir, "missing"), 3); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v, want fs.ErrNotExist", err)
	}
	for _, tc := range []struct {
		name  string
		setup func() string
		limit int
		want  string
	}{
		{"too large", func() string { return path }, 2, "larger than 2 bytes"},
		{"a folder", func() string { return dir }, 3, "not a regular file"},
		{"readable by group", func() string { os.Chmod(path, 0o640); return path }, 3, "mode 0640"},
	} {
		if _, err := Read(tc.setup(), tc.limit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
