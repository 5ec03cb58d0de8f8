package intentd_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/intentd/intentd"

// leaves are the packages that must not depend on the rest of the project, with the
// project packages each may read all the same. Keeping them leaves is what lets the
// core swap a store or an extractor without touching the language or the crypto.
var leaves = map[string][]string{
	"policy":      nil,
	"crypto":      nil,
	"persistence": nil,
	"evidence":    {"policy"},
}

type listedPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// TestImportDirection fails when a leaf package, or one of its tests, imports a
// project package it may not.
func TestImportDirection(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", "./...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		leaf := strings.SplitN(rel, "/", 2)[0]
		allowed, isLeaf := leaves[leaf]
		if !isLeaf {
			continue
		}
		seen[leaf] = true
		imports := append(append(append([]string{}, p.Imports...), p.TestImports...), p.XTestImports...)
		for _, imp := range imports {
			if err := checkImport(leaf, allowed, imp); err != "" {
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, err)
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("go list found none of the leaf packages; the check would pass vacuously")
	}
}

// checkImport says why imp may not be imported from the leaf, or "" when it may.
func checkImport(leaf string, allowed []string, imp string) string {
	if imp != module && !strings.HasPrefix(imp, module+"/") {
		return ""
	}
	target := strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"), "/", 2)[0]
	if target == leaf {
		return ""
	}
	for _, a := range allowed {
		if target == a {
			return ""
		}
	}
	return "a leaf package may not import other project packages"
}

func TestCheckImport(t *testing.T) {
	tests := []struct {
		leaf    string
		imp     string
		allowed bool
	}{
		{"policy", "encoding/json", true},
		{"policy", module + "/policy/internal/x", true},
		{"policy", module + "/crypto", false},
		{"crypto", module + "/actors", false},
		{"persistence", module + "/policy", false},
		{"evidence", module + "/policy", true},
		{"evidence", module + "/crypto", false},
		{"evidence", module, false},
		{"policy", "github.com/intentd/intentdx/policy", true},
	}
	for _, tt := range tests {
		t.Run(tt.leaf+"->"+tt.imp, func(t *testing.T) {
			got := checkImport(tt.leaf, leaves[tt.leaf], tt.imp) == ""
			if got != tt.allowed {
				t.Errorf("checkImport(%q, %q) allowed = %v, want %v", tt.leaf, tt.imp, got, tt.allowed)
			}
		})
	}
}
