package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
)

// TestToken runs info against a server that wants a token, with the token given in each
// form: --token, --token @FILE, --token-file and their variables; which form wins; and
// what is refused. No output ever shows the token.
func TestToken(t *testing.T) {
	const token = "ctl-token-5e2a91"
	tokens, err := intenthttp.ParseTokens(strings.NewReader(intenthttp.HashToken(token) + " admin,submit,propose,read intentctl\n"))
	if err != nil {
		t.Fatal(err)
	}
	server := startServerWith(t, evidence.DefaultCatalog(), 0, func(o *intenthttp.Options) { o.Tokens = tokens })
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return path
	}
	good := file("good", token+"\n", 0o600)
	wrong := file("wrong", "not-the-token\n", 0o600)
	missing := filepath.Join(dir, "none")

	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stdout string // a substring of standard output
		stderr string // a substring of standard error
	}{
		{"no token", []string{"info"}, nil, exitRefused, "", "unauthorized"},
		{"the token", []string{"--token", token, "info"}, nil, exitOK, "key id", ""},
		{"a file", []string{"--token-file", good, "info"}, nil, exitOK, "key id", ""},
		{"a file after the command", []string{"info", "--token-file=" + good}, nil, exitOK, "key id", ""},
		{"@FILE", []string{"--token", "@" + good, "info"}, nil, exitOK, "key id", ""},
		{"the variable", []string{"info"}, map[string]string{"INTENTCTL_TOKEN": token}, exitOK, "key id", ""},
		{"the variable, @FILE", []string{"info"}, map[string]string{"INTENTCTL_TOKEN": "@" + good}, exitOK, "key id", ""},
		{"the file variable", []string{"info"}, map[string]string{"INTENTCTL_TOKEN_FILE": good}, exitOK, "key id", ""},
		{"a file flag wins over the token variable", []string{"info", "--token-file", good},
			map[string]string{"INTENTCTL_TOKEN": "not-the-token"}, exitOK, "key id", ""},
		{"a token flag wins over the file variable", []string{"--token", "@" + good, "info"},
			map[string]string{"INTENTCTL_TOKEN_FILE": wrong}, exitOK, "key id", ""},
		{"a wrong token in a file", []string{"--token-file", wrong, "info"}, nil, exitRefused, "", "unauthorized"},
		{"both flags", []string{"--token", token, "--token-file", good, "info"}, nil, exitUsage, "",
			"intentctl info: --token and --token-file (or INTENTCTL_TOKEN and INTENTCTL_TOKEN_FILE): give one of them"},
		{"both variables", []string{"info"}, map[string]string{"INTENTCTL_TOKEN": token, "INTENTCTL_TOKEN_FILE": good}, exitUsage, "",
			"give one of them"},
		{"a missing file", []string{"--token-file", missing, "info"}, nil, exitRefused, "",
			"intentctl info: --token-file: open " + missing + ": no such file or directory"},
		{"a missing @FILE", []string{"info", "--token", "@" + missing}, nil, exitRefused, "",
			"intentctl info: --token @FILE: open " + missing + ": no such file or directory"},
		{"an empty file", []string{"--token-file", file("empty", "\n", 0o600), "info"}, nil, exitRefused, "", "empty"},
		{"a file others may read", []string{"--token-file", file("open", token+"\n", 0o644), "info"}, nil, exitRefused, "",
			"mode 0644 lets group or others access the secret; run chmod 600"},
		{"a command's help shows no token from the environment", []string{"info", "-h"},
			map[string]string{"INTENTCTL_TOKEN": token}, exitOK, "-token-file", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := lookupEnv
			lookupEnv = func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			t.Cleanup(func() { lookupEnv = prev })
			r := runCLI(t, server, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
				t.Fatalf("intentctl %q: exit %d, want %d\nstdout: %s\nstderr: %s\nwant stdout with %q, stderr with %q",
					tt.args, r.code, tt.code, r.stdout, r.stderr, tt.stdout, tt.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, token) && !strings.Contains(strings.Join(tt.args, " "), token) {
				t.Fatalf("the output shows the token:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
			}
		})
	}
}
