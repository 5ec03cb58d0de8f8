package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/intentd/intentd/natsstore"
)

// TestNATSEmbedCredential starts intentd with --nats-embed: its server refuses a client
// without the credential intentd made in the data folder (mode 0600), takes one with it,
// and a restart keeps the credential and the intents.
func TestNATSEmbedCredential(t *testing.T) {
	t.Parallel()
	ownStores(t)
	dir := t.TempDir()
	s := startServerIn(t, dir, []string{"--nats-embed"})
	id := s.submit()
	url := s.m.natsSrv.URL()
	path := filepath.Join(dir, "nats", natsstore.NKeyFile)

	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatal("a client without the credential connected to the embedded server")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("a client without the credential: %v, want an authorization violation", err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the credential file: %v, %v; want mode 0600", info, err)
	}
	seed, _ := os.ReadFile(path)
	opt, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, opt)
	if err != nil {
		t.Fatalf("a client with the credential: %v", err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.Stream(context.Background(), "INTENTD"); err != nil {
		t.Fatalf("the store's stream through the credential: %v", err)
	}
	nc.Close()
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}

	s = startServerIn(t, dir, []string{"--nats-embed"})
	if again, _ := os.ReadFile(path); string(again) != string(seed) {
		t.Fatal("the restart replaced the credential")
	}
	if st := s.status(id); st["status"] != "open" {
		t.Fatalf("after a restart the intent is %v", st)
	}
}

// TestNATSEmbedCredentialRefused refuses to start on a credential file that others may
// read or that is damaged, with one line naming it, and leaves the file as it was.
func TestNATSEmbedCredentialRefused(t *testing.T) {
	t.Parallel()
	ownStores(t)
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	for _, tc := range []struct {
		name string
		text []byte
		mode os.FileMode
		want string
	}{
		{"too open", seed, 0o644, "mode 0644"},
		{"damaged", []byte("SUA" + strings.Repeat("x", 20) + "\n"), 0o600, "not an NKey seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "nats", natsstore.NKeyFile)
			os.MkdirAll(filepath.Dir(path), 0o700)
			if err := os.WriteFile(path, tc.text, tc.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, tc.mode) // past the umask
			err := runRefused(t, []string{"--data", dir, "--nats-embed", "--listen", "127.0.0.1:0"})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("start on a credential %s: %v; want one line naming %s and %q", tc.name, err, path, tc.want)
			}
			if got, _ := os.ReadFile(path); string(got) != string(tc.text) {
				t.Fatal("the credential file was replaced")
			}
		})
	}
}

// TestNATSEmbedConfigAuthorization: a --nats-embed-config that defines client
// authorization is left as it is, and intentd connects as one of its users (here an NKey
// in an account with JetStream limits, as docs/operating.md shows); without a credential
// for it, or with one for a server that would admit anyone, it refuses to start.
func TestNATSEmbedConfigAuthorization(t *testing.T) {
	t.Parallel()
	ownStores(t)
	dir := t.TempDir()
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	seedFile := filepath.Join(dir, "intentd.nk")
	withToken, bare, withAccount := filepath.Join(dir, "token.conf"), filepath.Join(dir, "bare.conf"), filepath.Join(dir, "account.conf")
	for file, text := range map[string]string{
		seedFile:    string(seed) + "\n",
		withToken:   "authorization { token: s3cret }\n",
		bare:        "server_name: bare\n",
		withAccount: "accounts { INTENTD { jetstream { max_file: 1G, max_mem: 64M, max_streams: 8, max_consumers: 1000 }\n users: [ { nkey: " + pub + " } ] } }\n",
	} {
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a token and no credential", []string{"--nats-embed-config", withToken}, []string{"defines client authorization of its own", "--nats-token"}},
		{"a credential and no configuration", []string{"--nats-token", "s3cret"}, []string{"leave --nats-token out", natsstore.NKeyFile}},
		{"a credential and no authorization", []string{"--nats-embed-config", bare, "--nats-token", "s3cret"}, []string{bare + " defines none", "leave --nats-token out", natsstore.NKeyFile}},
	} {
		data := t.TempDir()
		err := runRefused(t, append([]string{"--data", data, "--nats-embed", "--listen", "127.0.0.1:0"}, tc.args...))
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %v, want an error saying %q", tc.name, err, want)
			}
		}
		if _, err := os.Stat(filepath.Join(data, "nats", natsstore.NKeyFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a credential was made: %v", tc.name, err)
		}
	}
	data := t.TempDir()
	s := startServerIn(t, data, []string{"--nats-embed", "--nats-embed-config", withAccount, "--nats-nkey", seedFile})
	s.submit()
	if nc, err := nats.Connect(s.m.natsSrv.URL()); err == nil {
		nc.Close()
		t.Fatal("a client without the account's credential connected")
	}
	if _, err := os.Stat(filepath.Join(data, "nats", natsstore.NKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a credential was made beside the configuration's: %v", err)
	}
}

// TestNATSEmbedClusterNeedsReplicas: an embedded server joined to a cluster by its
// configuration cannot tell the cluster's size, so the stream's replicas are given.
func TestNATSEmbedClusterNeedsReplicas(t *testing.T) {
	t.Parallel()
	ownStores(t)
	conf := filepath.Join(t.TempDir(), "nats.conf")
	// Ports nothing listens on: the server starts alone, its route tried in vain.
	text := "server_name: a\ncluster { name: c, listen: \"127.0.0.1:-1\", routes: [nats-route://127.0.0.1:16398] }\n"
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	err := runRefused(t, []string{"--data", t.TempDir(), "--nats-embed", "--nats-embed-config", conf, "--listen", "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "give --nats-replicas") {
		t.Fatalf("a clustered embedded server without --nats-replicas: %v", err)
	}
}
