package policy

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd/internal/golden"
)

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
			golden.Check(t, strings.TrimSuffix(file, ".src")+".golden", p.Pretty())
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

// TestBytecodeGolden pins the bytecode and the id of each policy of testdata/pretty, in
// testdata/bytecode. Intents and proofs name a policy by its id, the hash of its bytecode,
// so a change to the compiler that moved one byte of these would orphan every stored
// intent of such a policy: the golden files must stay as they are unless a new bytecode
// version comes with the change.
func TestBytecodeGolden(t *testing.T) {
	for _, file := range sources(t, "pretty") {
		name := strings.TrimSuffix(filepath.Base(file), ".src")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p := mustCompile(t, string(src))
			golden.Check(t, filepath.Join("testdata", "bytecode", name+".golden"), "id "+p.ID()+"\n"+hex.Dump(p.Bytecode()))
			if q, err := Decode(p.Bytecode()); err != nil || q.ID() != p.ID() {
				t.Fatalf("decoding the bytecode: %v", err)
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
			golden.Check(t, strings.TrimSuffix(file, ".src")+".golden", list.Detail(string(src)))
		})
	}
}
