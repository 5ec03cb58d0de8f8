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
// The leaves (policy, crypto, httpsig) import nothing, so that the core can swap a store or an
// extractor without touching the language or the crypto; the root holds the domain and
// reads only the leaves; a store reads only the domain it persists; the proof checker
// only what a client needs, so that a client links no server; the client likewise.
var rules = map[string][]string{
	".":           {"policy", "crypto", "internal"},
	"policy":      {"internal"},
	"crypto":      {"internal"},
	"httpsig":     nil,
	"internal":    nil,
	"persistence": {".", "policy", "crypto", "internal", "storetest"},
	"natsstore":   {".", "internal", "storetest"},
	"storetest":   {".", "internal"},
	"evidence":    {"policy", "internal"},
	"proof":       {".", "policy", "crypto", "httpsig", "internal"},
	"client":      {".", "policy", "crypto", "httpsig", "internal"},
	"mcpserver":   {".", "policy", "crypto", "httpsig", "internal", "client", "proof"},
	// The pieces of cluster mode: its messages speak the domain, its membership speaks
	// NATS (its tests start servers through natsstore); neither reaches into the engine,
	// which builds on them.
	"cluster": {".", "policy", "internal", "natsstore"},
	// The transparency log is built from what any engine gives (the domain), signs with
	// the service's key and shares its checks with the proof checker; it reaches into
	// no engine or store, so that it runs the same over each.
	"tlog":    {".", "crypto", "internal", "proof"},
	"webhook": {".", "internal"},
}

// externalTestRules name, for a package whose external tests (package x_test) may
// reach further than the package itself, the project folders those tests may import
// besides its rules: the client's run it against a real server, which only a test may
// link. Its in-package tests keep to the package's rules.
var externalTestRules = map[string][]string{
	"client":    {"http", "actors", "persistence", "evidence", "proof", "webhook"},
	"mcpserver": {"http", "actors", "persistence", "evidence"},
	// The log's benchmark of a rebuild from the store runs over each real store.
	"tlog": {"persistence", "natsstore"},
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
		imports := append(append([]string{}, p.Imports...), p.TestImports...)
		for _, imp := range imports {
			if err := checkImport(leaf, allowed, imp); err != "" {
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, err)
			}
		}
		xallowed := append(append([]string{}, allowed...), externalTestRules[leaf]...)
		for _, imp := range p.XTestImports {
			if err := checkImport(leaf, xallowed, imp); err != "" {
				t.Errorf("%s's external tests import %s: %s", p.ImportPath, imp, err)
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
		{"client", module, true},
		{"client", module + "/crypto", true},
		{"client", module + "/proof", false},
		{"client", module + "/http", false},
		{"client", module + "/actors", false},
		{"client", module + "/persistence", false},
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

// serverOnly are the dependencies that only a server needs: the engine, its store and
// the server's metrics, the libraries under them, and the project's packages that hold
// them.
var serverOnly = []string{"pebble", "protoactor", "prometheus",
	module + "/http", module + "/actors", module + "/persistence"}

// TestClientLinksNoServer fails when the client, or intentctl, which talks to a server
// only through it, links any part of a server: a command line tool would carry the
// engine, its store and the metrics for nothing, and every change to them would
// rebuild it.
func TestClientLinksNoServer(t *testing.T) {
	for _, pkg := range []string{"./client", "./cmd/intentctl"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s lists nothing; the check would pass vacuously", pkg)
		}
		for _, dep := range deps {
			if linksServer(dep) {
				t.Errorf("%s depends on %s, which only a server needs", pkg, dep)
			}
		}
	}
}

// linksServer reports whether the import path dep is, or is inside, one that only a
// server needs.
func linksServer(dep string) bool {
	for _, s := range serverOnly {
		if strings.HasPrefix(s, module+"/") {
			if dep == s || strings.HasPrefix(dep, s+"/") {
				return true
			}
		} else if strings.Contains(dep, s) {
			return true
		}
	}
	return false
}

func TestLinksServer(t *testing.T) {
	tests := []struct {
		dep  string
		want bool
	}{
		{"github.com/cockroachdb/pebble/v2/vfs", true},
		{"github.com/asynkron/protoactor-go/actor", true},
		{"github.com/prometheus/client_golang/prometheus", true},
		{module + "/http", true},
		{module + "/actors", true},
		{module + "/persistence/internal/x", true},
		{module + "/httpx", false},
		{module + "/client", false},
		{module + "/proof", false},
		{"net/http", false},
	}
	for _, tt := range tests {
		if got := linksServer(tt.dep); got != tt.want {
			t.Errorf("linksServer(%q) = %v, want %v", tt.dep, got, tt.want)
		}
	}
}
