package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	docKey = "BngnBZd4aXrjYCTpz5oGreBjqSF4NVBjfvo6Fpd9ZW9y"
	runKey = "5A1pA3DDny99wA4kNx7HXgTnqdbZARiQJUCNXHf54Vcu"
	docID  = "3323e70a-962a-4fed-81c7-e7cf9f4fc7b1"
	runID  = "b893ee9a-b32a-4a9c-99f2-419234551b41"
)

func TestMatchLines(t *testing.T) {
	tests := []struct {
		name      string
		want, got string
		bound     bindings
		ok        bool
	}{
		{"same text", "verified: it holds", "verified: it holds", nil, true},
		{"one word changed", "outcome    success", "outcome    failure", nil, false},
		{"a key learnt", "key " + docKey, "key " + runKey, nil, true},
		{"a key as learnt", "key " + docKey, "key " + runKey, bindings{docKey: runKey}, true},
		{"a key other than learnt", "key " + docKey, "key " + runKey, bindings{docKey: docKey}, false},
		{"two document values for one", "key " + docKey + " and " + runKey, "key " + runKey + " and " + runKey, nil, false},
		{"an id and a time", docID + " at 2026-11-22 14:00:38.274Z", runID + " at 2026-11-28 21:04:26.2Z", nil, true},
		{"elided within a line", `{"outcome":"failure","intent_id":"…","previews_left":19}`, `{"outcome":"failure","intent_id":"x","previews_left":19}`, nil, true},
		{"elided lines", "[\n...\n]", "[\n  1,\n  2\n]", nil, true},
		{"elided lines, the end differs", "[\n...\n]", "[\n  1,\n  2\n}", nil, false},
		{"output goes on", "a", "a\nb", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bindings{}
			for k, v := range tt.bound {
				b[k] = v
			}
			if got := matchLines(strings.Split(tt.want, "\n"), strings.Split(tt.got, "\n"), b); got != tt.ok {
				t.Errorf("matchLines = %v, want %v (bindings %v)", got, tt.ok, b)
			}
		})
	}
}

func TestRewrite(t *testing.T) {
	b := bindings{docID: runID}
	got, err := b.rewrite("intentctl propose " + docID + " sku:TS-NAVY-M --key " + docKey)
	if err != nil {
		t.Fatal(err)
	}
	if want := "intentctl propose " + runID + " sku:TS-NAVY-M --key " + docKey; got != want {
		t.Errorf("rewrite = %q, want %q", got, want)
	}
	// A value the document chose stands for itself from then on.
	if b[docKey] != docKey {
		t.Errorf("bindings %v: the typed key is not bound to itself", b)
	}
}

func TestParseFile(t *testing.T) {
	md := "# t\n\n<!-- doctest: skip needs a thing -->\n```sh\nmake run\n```\n\n" +
		"```console\n$ intentctl demo \\\n    --wait 1m\nline one\n\n$ echo $?\n0\n```\n\n" +
		"```\nplain output, not a shell block\n```\n\n" +
		"<!-- doctest: background output -->\n```\nid: 1\n```\n\n" +
		"```sh\n# a comment\ncurl -s localhost:8080/info   # the settings\n```\n"
	path := filepath.Join(t.TempDir(), "t.md")
	if err := os.WriteFile(path, []byte(md), 0o600); err != nil {
		t.Fatal(err)
	}
	blocks, err := parseFile(path, "t.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 4 {
		t.Fatalf("%d blocks, want 4: %+v", len(blocks), blocks)
	}
	if blocks[0].marker != "skip needs a thing" || blocks[0].line != 4 {
		t.Errorf("block 0 = %+v, want the marked block at line 4", blocks[0])
	}
	steps := blocks[1].steps
	if len(steps) != 2 || steps[0].command != "intentctl demo \\\n    --wait 1m" || strings.Join(steps[0].want, "|") != "line one" || !steps[1].compare {
		t.Errorf("transcript steps = %+v", steps)
	}
	if !blocks[2].output || strings.Join(blocks[2].steps[0].want, "|") != "id: 1" {
		t.Errorf("background output block = %+v", blocks[2])
	}
	if s := blocks[3].steps; len(s) != 1 || s[0].compare {
		t.Errorf("script steps = %+v, want one command whose output is not shown", s)
	}
}
