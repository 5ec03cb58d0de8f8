package intentd_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/intentd/intentd"

// rules name, for each package that must not depend on the rest of the project, the
// project packages it may read all the same; "." is the root package, intentd itself.
// The leaves (policy, crypto) import nothing, so that the core can swap a store or an
// extractor without touching the language or the crypto; the root holds the domain and
// reads only the leaves; a store reads only the domain it persists; the proof checker
// only what a client needs, so that a client links no server.
var rules = map[string][]string{
	".":           {"policy", "crypto", "internal"},
	"policy":      {"internal"},
	"crypto":      {"internal"},
	"internal":    nil,
	"persistence": {".", "policy", "crypto", "internal", "storetest"},
	"natsstore":   {".", "internal", "storetest"},
	"storetest":   {".", "internal"},
	"evidence":    {"policy", "internal"},
	"proof":       {".", "policy", "crypto", "internal"},
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
		leaf := topOf(p.ImportPath)
		allowed, ruled := rules[leaf]
		if !ruled {
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
	for name := range rules {
		if !seen[name] && name != "internal" {
			t.Errorf("go list found no package %s; its rule would pass vacuously", name)
		}
	}
}

// topOf is the project folder an import path is in ("." for the root package), or ""
// for a path outside the project.
func topOf(path string) string {
	if path == module {
		return "."
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	return strings.SplitN(rel, "/", 2)[0]
}

// checkImport says why imp may not be imported from the package in folder leaf, or ""
// when it may.
func checkImport(leaf string, allowed []string, imp string) string {
	target := topOf(imp)
	if target == "" || target == leaf {
		return ""
	}
	for _, a := range allowed {
		if target == a {
			return ""
		}
	}
	return "the import-direction rules do not allow it"
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
		{"persistence", module + "/http", false},
		{"evidence", module + "/policy", true},
		{"evidence", module + "/crypto", false},
		{"evidence", module, false},
		{".", module + "/actors", false},
		{".", module + "/crypto", true},
		{"persistence", module, true},
		{"persistence", module + "/actors", false},
		{"proof", module + "/actors", false},
		{"proof", module + "/persistence", false},
		{"proof", module, true},
		{"policy", "github.com/intentd/intentdx/policy", true},
	}
	for _, tt := range tests {
		t.Run(tt.leaf+"->"+tt.imp, func(t *testing.T) {
			got := checkImport(tt.leaf, rules[tt.leaf], tt.imp) == ""
			if got != tt.allowed {
				t.Errorf("checkImport(%q, %q) allowed = %v, want %v", tt.leaf, tt.imp, got, tt.allowed)
			}
		})
	}
}
