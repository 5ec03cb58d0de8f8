package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The intentd the tests start is built once, for every test that needs it, into a
// folder that outlives any one test.
var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// intentdBinary builds cmd/intentd from this checkout and returns its path.
func intentdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "intentd-deploy-"); buildErr != nil {
			return
		}
		buildPath = filepath.Join(buildDir, "intentd")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/intentd")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/intentd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// readFile returns the text of a file of the checkout, relative to this folder.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
