// Package golden compares a test's output with a file kept in testdata, so that a change
// to a format or a printer shows in review as a change to that file; `go test -update`
// rewrites the files.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Check fails t when got differs from the file at path, or writes got there with -update.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got == string(want) {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	if len(w) <= printWhole {
		t.Fatalf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Fatalf("%s: line %d differs:\n got  %q\n want %q", path, i+1, g[i], w[i])
		}
	}
	t.Fatalf("%s: %d lines, want %d", path, len(g), len(w))
}

// printWhole is the most lines a differing file is printed whole with; past it, a
// failure names the first line that differs, which a reader can act on.
const printWhole = 200
