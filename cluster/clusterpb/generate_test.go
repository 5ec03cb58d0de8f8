package clusterpb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates the Go code of each .proto file here into a
// temporary directory, as `make proto` does, and fails when it differs from the committed file: a
// .proto edited without `make proto` would otherwise ship messages that disagree with
// their declaration. protoc-gen-go is built from the google.golang.org/protobuf that
// go.mod resolves, the version the Makefile pins. It skips without protoc.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc is not installed (apt-get install protobuf-compiler), so the generated code is not checked")
	}
	if testing.Short() {
		t.Skip("builds protoc-gen-go; skipped with -short")
	}
	dir := t.TempDir()
	plugin := filepath.Join(dir, "protoc-gen-go")
	build := exec.Command("go", "build", "-o", plugin, "google.golang.org/protobuf/cmd/protoc-gen-go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build protoc-gen-go: %v\n%s", err, out)
	}
	protos, err := filepath.Glob("*.proto")
	if err != nil || len(protos) == 0 {
		t.Fatalf("no .proto files here: %v", err)
	}
	for _, file := range protos {
		gen := exec.Command(protoc, "--plugin=protoc-gen-go="+plugin, "--proto_path=.",
			"--go_out="+dir, "--go_opt=paths=source_relative", file)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("protoc %s: %v\n%s", file, err, out)
		}
		code := strings.TrimSuffix(file, ".proto") + ".pb.go"
		want, err := os.ReadFile(filepath.Join(dir, code))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(code)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(withoutProtocVersion(got), withoutProtocVersion(want)) {
			t.Errorf("%s is stale: run `make proto` and commit the result", code)
		}
	}
}

// withoutProtocVersion drops the header line naming protoc's version: another protoc
// release writes the same code, and a machine with one must not fail the check for it.
func withoutProtocVersion(src []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(src, []byte("\n")) {
		if strings.HasPrefix(string(line), "// \tprotoc ") {
			continue
		}
		out = append(out, line)
	}
	return bytes.Join(out, []byte("\n"))
}
