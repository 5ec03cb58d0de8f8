package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd/crypto"
)

// TestKeyIsNotPublic gives intent new every file a user may take for a private key:
// each is refused, whatever its mode, before the server is asked anything (the server
// here does not exist), with a message that names the file as a public key or what it
// is. The private key itself gets as far as the server.
func TestKeyIsNotPublic(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	if r := runCLI(t, "http://unused", "keygen", "-o", file("alice.key")); r.code != exitOK {
		t.Fatalf("keygen: %s", r.stderr)
	}
	if r := runCLI(t, "http://unused", "keygen", "--passkey", "-o", file("bob.passkey")); r.code != exitOK {
		t.Fatalf("keygen --passkey: %s", r.stderr)
	}
	pub, err := os.ReadFile(file("alice.key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	pubKey := strings.TrimSpace(string(crypto.StripComments(pub)))
	// A public key file written before keygen's header line, and a copy of its key.
	for name, text := range map[string]string{
		"copy.key": string(pub), "old.key.pub": pubKey + "\n", "oldcopy.key": pubKey + "\n",
		"tls.key":   "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n",
		"notes.txt": "buy a navy t-shirt\n",
	} {
		if err := os.WriteFile(file(name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const server = "http://127.0.0.1:1" // nothing listens: a try to reach it exits 3
	for _, tt := range []struct {
		name, key string
		mode      os.FileMode
		flag      string
		want      string
	}{
		{"the .pub file, as keygen wrote it", "alice.key.pub", 0o644, "--key", "alice.key.pub is a public key (keygen writes it beside the private key): sign with --key " + file("alice.key")},
		{"the .pub file made private", "alice.key.pub", 0o600, "--key", "is a public key"},
		{"a copy of the public key", "copy.key", 0o600, "--key", "copy.key is a public key (its first line says so), not a private key"},
		{"a copy of the public key others may read", "copy.key", 0o644, "--key", "copy.key is a public key"},
		{"a .pub file without a header", "old.key.pub", 0o644, "--key", "old.key.pub is a public key"},
		{"a copy of a public key file without a header", "oldcopy.key", 0o644, "--key", "oldcopy.key holds the public key of "},
		{"a PEM key", "tls.key", 0o600, "--key", "tls.key is a PEM file (-----BEGIN EC PRIVATE KEY-----)"},
		{"a text file others may read", "notes.txt", 0o644, "--key", "notes.txt is not a key file: it holds neither an Ed25519 seed nor a passkey"},
		{"a passkey file others may read", "bob.passkey", 0o644, "--key", "is a passkey file; use --passkey"},
		{"an Ed25519 key as a passkey", "alice.key", 0o600, "--passkey", "alice.key is not a passkey file"},
		{"a passkey file as an Ed25519 key", "bob.passkey", 0o600, "--key", "is a passkey file; use --passkey"},
		{"a passkey's public key", "bob.passkey.pub", 0o600, "--passkey", "is a public key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.Chmod(file(tt.key), tt.mode); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, server, "intent", "new", "--policy", "11111111111111111111111111111111", tt.flag, file(tt.key))
			if r.code != exitRefused || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("intent new %s %s: exit %d, %q; want exit %d saying %q", tt.flag, tt.key, r.code, r.stderr, exitRefused, tt.want)
			}
		})
	}
	t.Run("the private key", func(t *testing.T) {
		r := runCLI(t, server, "intent", "new", "--policy", "11111111111111111111111111111111", "--key", file("alice.key"))
		if r.code != exitUnreachable {
			t.Fatalf("intent new --key alice.key: exit %d, %q; want it past the key, to find no server", r.code, r.stderr)
		}
		if err := os.WriteFile(file("tshirt.policy"), []byte(demoPolicySource), 0o644); err != nil {
			t.Fatal(err)
		}
		r = runCLI(t, server, "intent", "new", "--policy-file", file("tshirt.policy"), "--attr", "size=M", "--attr", "colors=navy",
			"--attr", "max_price_cents=3000", "--key", file("alice.key"), "--dry-run")
		if want := "signed with public key " + pubKey; r.code != exitOK || !strings.Contains(r.stderr, want) {
			t.Fatalf("intent new --dry-run: exit %d, %q; want %q", r.code, r.stderr, want)
		}
	})
}

// TestKeyFilesSayWhatTheyAre reads the first lines keygen writes, and a private key
// file of before them, which still signs.
func TestKeyFilesSayWhatTheyAre(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	if r := runCLI(t, "http://unused", "keygen", "-o", file("alice.key")); r.code != exitOK {
		t.Fatalf("keygen: %s", r.stderr)
	}
	for name, want := range map[string]string{"alice.key": privateKeyHeader, "alice.key.pub": publicKeyHeader} {
		b, err := os.ReadFile(file(name))
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(string(b), "\n"); first != want {
			t.Errorf("%s starts %q, want %q", name, first, want)
		}
	}
	// intentd --signing-key reads the file as it is.
	b, _ := os.ReadFile(file("alice.key"))
	key, err := crypto.ParseSigningKey(b)
	if err != nil {
		t.Fatal(err)
	}
	// A file of before the header: the seed alone.
	old := file("old.key")
	if err := os.WriteFile(old, key.EncodeFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := loadSigner(old, "ed25519")
	if err != nil {
		t.Fatalf("a key file without its header: %v", err)
	}
	if !bytes.Equal(s.publicKey(), key.PublicKey()) {
		t.Error("the key file without its header signs with another key")
	}
}
