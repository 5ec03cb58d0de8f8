package policy

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with the file, or rewrites the file with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func sources(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.src"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources in testdata/%s: %v", dir, err)
	}
	return files
}

// TestPrinterGolden prints each policy of testdata/pretty; the printed form compiles
// to the same id and prints the same again.
func TestPrinterGolden(t *testing.T) {
	for _, file := range sources(t, "pretty") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p := mustCompile(t, string(src))
			golden(t, strings.TrimSuffix(file, ".src")+".golden", p.Pretty())
			q := mustCompile(t, p.Pretty())
			if q.ID() != p.ID() {
				t.Fatal("the pretty form compiles to another id")
			}
			if q.Pretty() != p.Pretty() {
				t.Fatalf("printing twice changed the text:\n%s", q.Pretty())
			}
		})
	}
}

// TestErrorsGolden compiles each source of testdata/errors and compares the errors,
// shown with a caret under each spot.
func TestErrorsGolden(t *testing.T) {
	for _, file := range sources(t, "errors") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Compile(string(src))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want compile errors, got %v", err)
			}
			golden(t, strings.TrimSuffix(file, ".src")+".golden", list.Detail(string(src)))
		})
	}
}
