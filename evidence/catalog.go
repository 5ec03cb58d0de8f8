package evidence

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
)

// DemoPolicy is the source of the policy the demo catalog is written for: the t-shirt
// purchase of docs/policy-language.md. Its products pass it, or fail it for one reason
// each, as docs/evidence.md lists; the demo, the load tool and the tests use both.
//
//go:embed demo_policy.txt
var DemoPolicy string

//go:embed catalog.json
var demoCatalog []byte

// Catalog is the catalog extractor: evidence looked up by the exact solution string
// in a JSON file {"<solution>": {<flat evidence>}, ...}. It is safe for concurrent
// use, and Reload swaps the contents atomically, so lookups never see half a file.
type Catalog struct {
	path string // "" for the embedded demo catalog

	mu      sync.RWMutex
	entries map[string]Evidence
}

// NewCatalog reads the catalog file at path.
func NewCatalog(path string) (*Catalog, error) {
	c := &Catalog{path: path}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// DefaultCatalog returns a catalog of the embedded demo products (listed in
// docs/evidence.md): the catalog of a first run and of the tests.
func DefaultCatalog() *Catalog {
	entries, err := ParseCatalog(demoCatalog)
	if err != nil {
		// The embedded file is part of the build and its tests parse it, so this
		// cannot happen in a released binary.
		panic("evidence: embedded catalog: " + err.Error())
	}
	return &Catalog{entries: entries}
}

// Reload reads the file again. On any error the catalog keeps its old contents, so
// that a bad edit followed by SIGHUP does not take the service's evidence away. The
// embedded catalog has no file; its Reload does nothing.
func (c *Catalog) Reload() error {
	if c.path == "" {
		return nil
	}
	data, err := os.ReadFile(c.path)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	entries, err := ParseCatalog(data)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", c.path, err)
	}
	c.mu.Lock()
	c.entries = entries
	c.mu.Unlock()
	return nil
}

// Len returns the number of solutions in the catalog.
func (c *Catalog) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// Solutions returns the catalog's solutions, sorted.
func (c *Catalog) Solutions() []string {
	c.mu.RLock()
	out := make([]string, 0, len(c.entries))
	for s := range c.entries {
		out = append(out, s)
	}
	c.mu.RUnlock()
	sort.Strings(out)
	return out
}

// Extract returns the evidence stored for req.Solution, matched exactly (no
// normalisation of case, slashes or query: the catalog's keys are what agents
// propose). A solution that is not in the catalog is a KindNotFound error. The
// result is a copy the caller may change.
func (c *Catalog) Extract(ctx context.Context, req Request) (Evidence, error) {
	c.mu.RLock()
	e, ok := c.entries[req.Solution]
	c.mu.RUnlock()
	if !ok {
		return nil, errorf(KindNotFound, "catalog", nil, "solution %q is not in the catalog", clip(req.Solution))
	}
	out := make(Evidence, len(e))
	for k, v := range e {
		out[k] = copyJSON(v)
	}
	return out, nil
}

// ParseCatalog decodes a catalog file: one JSON object whose keys are solutions and
// whose values are flat evidence objects (scalars and arrays of scalars, integers
// kept as json.Number). The error names the solution at fault.
func ParseCatalog(data []byte) (map[string]Evidence, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("want a JSON object of solutions: %v", err)
	}
	if raw == nil {
		return nil, fmt.Errorf("want a JSON object of solutions, got null")
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return nil, fmt.Errorf("data after the JSON object")
	}
	// Sorted, so that of several bad entries the one reported is always the same.
	sols := make([]string, 0, len(raw))
	for sol := range raw {
		sols = append(sols, sol)
	}
	sort.Strings(sols)
	entries := make(map[string]Evidence, len(raw))
	for _, sol := range sols {
		body := raw[sol]
		if sol == "" {
			return nil, fmt.Errorf("an empty solution is not allowed")
		}
		obj, err := decodeFlatObject(body)
		if err != nil {
			return nil, fmt.Errorf("solution %q: %v", clip(sol), err)
		}
		entries[sol] = obj
	}
	return entries, nil
}
