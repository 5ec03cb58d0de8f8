package natsstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// TestEmbedAdmitsItsNKeyAlone starts a server that admits one NKey user: a client without
// the seed is refused, one with it connects, and the store opens with it. The seed file
// is made with mode 0600 and kept as it is by the next start.
func TestEmbedAdmitsItsNKeyAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, NKeyFile)
	srv, err := Embed(EmbedOptions{Dir: dir, NKeyFile: path})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("seed file: %v, %v; want mode 0600", info, err)
	}
	seed, _ := os.ReadFile(path)
	if nc, err := nats.Connect(srv.URL()); err == nil {
		nc.Close()
		t.Fatal("a client without the credential connected")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("a client without the credential: %v, want an authorization violation", err)
	}
	s, err := Open(context.Background(), Options{URLs: []string{srv.URL()}, NKey: path})
	if err != nil {
		t.Fatalf("Open with the seed: %v", err)
	}
	if _, err := s.PutPolicy(context.Background(), "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	srv.Shutdown()

	srv, err = Embed(EmbedOptions{Dir: dir, NKeyFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if again, _ := os.ReadFile(path); string(again) != string(seed) {
		t.Fatal("the second start replaced the seed")
	}
	opt, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.URL(), opt)
	if err != nil {
		t.Fatalf("a client with the seed after a restart: %v", err)
	}
	nc.Close()
}

// TestNKeyFileRefused refuses a seed file that others may read, or that holds no user
// seed, with one line naming it, and leaves the file as it was.
func TestNKeyFileRefused(t *testing.T) {
	user, _ := nkeys.CreateUser()
	userSeed, _ := user.Seed()
	account, _ := nkeys.CreateAccount()
	accountSeed, _ := account.Seed()
	for _, tc := range []struct {
		name string
		text []byte
		mode os.FileMode
		want string
	}{
		{"too open", userSeed, 0o644, "mode 0644"},
		{"damaged", []byte("SUAXXXX not a seed\n"), 0o600, "not an NKey seed"},
		{"not a user's", accountSeed, 0o600, "not a user's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, NKeyFile)
			if err := os.WriteFile(path, tc.text, tc.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, tc.mode) // past the umask
			srv, err := Embed(EmbedOptions{Dir: dir, NKeyFile: path})
			if err == nil {
				srv.Shutdown()
				t.Fatal("the server started")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %q, want one line naming %s and %q", err, path, tc.want)
			}
			if got, _ := os.ReadFile(path); string(got) != string(tc.text) {
				t.Fatal("the file was replaced")
			}
		})
	}
}

// TestEmbedConfigAuthorization keeps a configuration's own client authorization: no user
// is added to it, and a caller bringing a credential needs a configuration that has one.
func TestEmbedConfigAuthorization(t *testing.T) {
	dir := t.TempDir()
	withToken := filepath.Join(dir, "token.conf")
	bare := filepath.Join(dir, "bare.conf")
	os.WriteFile(withToken, []byte("authorization { token: s3cret }\n"), 0o600)
	os.WriteFile(bare, []byte("server_name: bare\n"), 0o600)

	_, err := Embed(EmbedOptions{Dir: t.TempDir(), ConfigFile: withToken, NKeyFile: filepath.Join(dir, NKeyFile)})
	if !errors.Is(err, ErrOwnAuthorization) {
		t.Fatalf("an NKey beside a configuration's token: %v, want ErrOwnAuthorization", err)
	}
	if _, err := os.Stat(filepath.Join(dir, NKeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a seed file was made for a server that refused it: %v", err)
	}
	if _, err := Embed(EmbedOptions{Dir: t.TempDir(), ConfigFile: bare, ConfigAuthorizes: true}); !errors.Is(err, ErrNoAuthorization) {
		t.Fatalf("a credential for a configuration without authorization: %v, want ErrNoAuthorization", err)
	}
	srv, err := Embed(EmbedOptions{Dir: t.TempDir(), ConfigFile: withToken, ConfigAuthorizes: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if nc, err := nats.Connect(srv.URL()); err == nil {
		nc.Close()
		t.Fatal("a client without the token connected")
	}
	s, err := Open(context.Background(), Options{URLs: []string{srv.URL()}, Token: "s3cret"})
	if err != nil {
		t.Fatalf("Open with the configuration's token: %v", err)
	}
	s.Close()

	// A no_auth_user lets in whoever brings nothing: that is no authorization.
	noAuth := filepath.Join(dir, "noauth.conf")
	os.WriteFile(noAuth, []byte("authorization { users: [{user: a, password: b}] }\nno_auth_user: a\n"), 0o600)
	if _, err := Embed(EmbedOptions{Dir: t.TempDir(), ConfigFile: noAuth, ConfigAuthorizes: true}); !errors.Is(err, ErrNoAuthorization) {
		t.Fatalf("a configuration with no_auth_user: %v, want ErrNoAuthorization", err)
	}
}

// TestRoutesNeedAuthorization refuses a cluster whose routes listen beyond loopback with
// no authorization, and lets one with it, or on loopback, start.
func TestRoutesNeedAuthorization(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	os.WriteFile(conf, []byte("server_name: a\ncluster { name: c, listen: 0.0.0.0:6399 }\n"), 0o600)
	_, err := Embed(EmbedOptions{Dir: t.TempDir(), ConfigFile: conf})
	if err == nil || !strings.Contains(err.Error(), "no route authorization") || !strings.Contains(err.Error(), "0.0.0.0:6399") {
		t.Fatalf("routes beyond loopback without authorization: %v", err)
	}
	for _, c := range []server.ClusterOpts{
		{Host: "0.0.0.0", Port: 6399, Username: "route", Password: "p"},
		{Host: "127.0.0.1", Port: 6399},
		{Host: "::1", Port: 6399},
		{Host: "localhost", Port: 6399},
		{},
	} {
		if err := checkRoutes(&server.Options{Cluster: c}, nil); err != nil {
			t.Errorf("cluster %+v: %v", c, err)
		}
	}
	for _, c := range []server.ClusterOpts{{Port: 6399}, {Host: "10.0.0.1", Port: 6399}, {Host: "10.0.0.1", Port: 6399, Username: "route"}} {
		if err := checkRoutes(&server.Options{Cluster: c}, nil); err == nil {
			t.Errorf("cluster %+v without authorization was allowed", c)
		}
	}
}

// TestOpenRefusesTwoCredentials takes one credential at a time.
func TestOpenRefusesTwoCredentials(t *testing.T) {
	_, err := Open(context.Background(), Options{URLs: []string{"nats://127.0.0.1:1"}, Token: "t", NKey: "n"})
	if err == nil || !strings.Contains(err.Error(), "give one of") {
		t.Fatalf("two credentials: %v", err)
	}
}
