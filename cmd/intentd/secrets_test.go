package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd/natsstore"
)

// natsToken is the token of the NATS server that TestNatsTokenFile starts.
const natsToken = "nats-token-7c1e9a"

// writeSecret writes a secret file of the given mode and returns its path.
func writeSecret(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

// TestSecretFlags checks the forms of --nats-token: the token, @FILE, --nats-token-file,
// their variables, which wins, and what is refused; the refusals never show a token.
func TestSecretFlags(t *testing.T) {
	t.Parallel()
	file := writeSecret(t, "from-file\n", 0o600)
	other := writeSecret(t, "other-file\n", 0o600)
	missing := filepath.Join(t.TempDir(), "none")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		// token is the NatsToken wanted; cmdline whether Run would warn of a token on
		// the command line.
		token   string
		cmdline bool
		wantErr string
	}{
		{"none", nil, nil, "", false, ""},
		{"the token", []string{"--nats-token", "s3cret"}, nil, "s3cret", true, ""},
		{"the token, one dash and =", []string{"-nats-token=s3cret"}, nil, "s3cret", true, ""},
		{"a file", []string{"--nats-token-file", file}, nil, "from-file", false, ""},
		{"@FILE", []string{"--nats-token", "@" + file}, nil, "from-file", false, ""},
		{"@FILE with =", []string{"--nats-token=@" + file}, nil, "from-file", false, ""},
		{"the variable", nil, map[string]string{"INTENTD_NATS_TOKEN": "s3cret"}, "s3cret", false, ""},
		{"the variable, @FILE", nil, map[string]string{"INTENTD_NATS_TOKEN": "@" + file}, "from-file", false, ""},
		{"the file variable", nil, map[string]string{"INTENTD_NATS_TOKEN_FILE": file}, "from-file", false, ""},
		{"a file flag wins over the token variable", []string{"--nats-token-file", file},
			map[string]string{"INTENTD_NATS_TOKEN": "s3cret"}, "from-file", false, ""},
		{"a token flag wins over the file variable", []string{"--nats-token", "@" + file},
			map[string]string{"INTENTD_NATS_TOKEN_FILE": other}, "from-file", false, ""},
		{"a file flag wins over the file variable", []string{"--nats-token-file", file},
			map[string]string{"INTENTD_NATS_TOKEN_FILE": other}, "from-file", false, ""},
		{"both flags", []string{"--nats-token", "s3cret", "--nats-token-file", file}, nil, "", false,
			"--nats-token and --nats-token-file: give one of them"},
		{"both variables", nil, map[string]string{"INTENTD_NATS_TOKEN": "s3cret", "INTENTD_NATS_TOKEN_FILE": file}, "", false,
			"--nats-token and --nats-token-file: give one of them"},
		{"a missing file", []string{"--nats-token-file", missing}, nil, "", false,
			"--nats-token-file: open " + missing + ": no such file or directory"},
		{"a missing @FILE", []string{"--nats-token", "@" + missing}, nil, "", false,
			"--nats-token @FILE: open " + missing + ": no such file or directory"},
		{"@ alone", []string{"--nats-token", "@"}, nil, "", false, "--nats-token @: want a file name"},
		{"an empty file", []string{"--nats-token-file", writeSecret(t, "\n", 0o600)}, nil, "", false, "empty"},
		{"a file others may read", []string{"--nats-token-file", writeSecret(t, "s3cret\n", 0o644)}, nil, "", false,
			"mode 0644 lets group or others access the secret; run chmod 600"},
		{"with a credentials file", []string{"--nats-creds", "user.creds", "--nats-token-file", file}, nil, "", false,
			"--nats-creds and --nats-token-file: give one of them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseFlags(tt.args, tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "from-file") {
					t.Fatalf("the error shows the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Config.Nats.Token != tt.token {
				t.Fatalf("NatsToken = %q, want %q", m.Config.Nats.Token, tt.token)
			}
			if got := len(m.cmdlineSecrets) > 0; got != tt.cmdline {
				t.Fatalf("secrets on the command line: %q, want some: %v", m.cmdlineSecrets, tt.cmdline)
			}
		})
	}
}

// TestNatsTokenFile starts intentd on a NATS server that wants a token, with the token
// in a file: the file's token is the one sent, so the server takes it, and a file with
// another token is refused by the server.
func TestNatsTokenFile(t *testing.T) {
	t.Parallel()
	ownStores(t)
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("authorization { token: \""+natsToken+"\" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := natsstore.Embed(natsstore.EmbedOptions{Dir: t.TempDir(), ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)

	t.Run("the right token", func(t *testing.T) {
		s := startServer(t, []string{"--store", srv.URL(), "--nats-token-file", writeSecret(t, natsToken+"\n", 0o600)})
		id := s.submit()
		if st := s.status(id); st["status"] != "open" {
			t.Fatalf("status of a new intent: %v", st)
		}
		if strings.Contains(s.logs.String(), "a secret given on the command line") {
			t.Fatalf("a token given by file warned of as on the command line:\n%s", s.logs)
		}
	})
	t.Run("another token", func(t *testing.T) {
		err := runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", t.TempDir(), "--store", srv.URL(),
			"--nats-token-file", writeSecret(t, "not-the-token\n", 0o600)})
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Fatalf("Run with the wrong token: %v, want the server's authorization refusal", err)
		}
	})
}
