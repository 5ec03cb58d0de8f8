package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intentd/intentd/cluster/clustertls"
)

// TestCerts makes a cluster's material, adds a member later under the same CA, renews
// one, and checks what a member would load: each set of files is a member's, and the
// refusals say what to do.
func TestCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	file := func(name string) string { return filepath.Join(dir, name) }
	member := func(name string) clustertls.Files {
		return clustertls.Files{Cert: file(name + ".pem"), Key: file(name + ".key"), CA: file("ca.pem")}
	}
	loads := func(name string) {
		t.Helper()
		if _, err := clustertls.Load(member(name)); err != nil {
			t.Fatalf("member %s: %v", name, err)
		}
	}

	r := runCLI(t, "http://unused", "certs", "-o", dir, "node1=127.0.0.1", "node2=10.0.0.2,node2.internal")
	if r.code != exitOK || !strings.Contains(r.stdout, "--cluster-tls-ca "+file("ca.pem")) {
		t.Fatalf("certs: %d %s %s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"ca.key", "node1.key", "node2.key"} {
		if info, err := os.Stat(file(f)); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want 0600", f, err, info.Mode())
		}
	}
	loads("node1")
	loads("node2")
	caBefore, _ := os.ReadFile(file("ca.pem"))

	t.Run("a member added later, under the same CA", func(t *testing.T) {
		r := runCLI(t, "http://unused", "certs", "-o", dir, "node3=127.0.0.1")
		if r.code != exitOK || !strings.Contains(r.stdout, "already there") {
			t.Fatalf("certs: %d %s %s", r.code, r.stdout, r.stderr)
		}
		if caAfter, _ := os.ReadFile(file("ca.pem")); string(caAfter) != string(caBefore) {
			t.Fatal("the CA was made anew")
		}
		loads("node3")
	})
	t.Run("a member's files are not replaced without --renew", func(t *testing.T) {
		before, _ := os.ReadFile(file("node1.pem"))
		r := runCLI(t, "http://unused", "certs", "-o", dir, "node4=127.0.0.1", "node1=127.0.0.1")
		if r.code != exitRefused || !strings.Contains(r.stderr, "only with --renew") {
			t.Fatalf("certs: %d %s %s", r.code, r.stdout, r.stderr)
		}
		if after, _ := os.ReadFile(file("node1.pem")); string(after) != string(before) {
			t.Fatal("node1.pem was replaced")
		}
		if _, err := os.Stat(file("node4.pem")); err == nil {
			t.Fatal("a refused run wrote node4.pem")
		}
	})
	t.Run("renewed", func(t *testing.T) {
		before, _ := os.ReadFile(file("node1.pem"))
		if r := runCLI(t, "http://unused", "certs", "-o", dir, "--renew", "node1=127.0.0.1"); r.code != exitOK {
			t.Fatalf("certs --renew: %d %s", r.code, r.stderr)
		}
		if after, _ := os.ReadFile(file("node1.pem")); string(after) == string(before) {
			t.Fatal("node1.pem was not renewed")
		}
		loads("node1")
	})
	t.Run("a CA key others may read", func(t *testing.T) {
		if err := os.Chmod(file("ca.key"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(file("ca.key"), 0o600)
		if r := runCLI(t, "http://unused", "certs", "-o", dir, "node5=127.0.0.1"); r.code != exitRefused || !strings.Contains(r.stderr, "chmod 600") {
			t.Fatalf("certs: %d %s", r.code, r.stderr)
		}
	})
	t.Run("a CA half there", func(t *testing.T) {
		half := t.TempDir()
		if err := os.WriteFile(filepath.Join(half, "ca.pem"), caBefore, 0o644); err != nil {
			t.Fatal(err)
		}
		if r := runCLI(t, "http://unused", "certs", "-o", half, "node1=127.0.0.1"); r.code != exitRefused || !strings.Contains(r.stderr, "without the other") {
			t.Fatalf("certs: %d %s", r.code, r.stderr)
		}
	})
	for _, bad := range [][]string{{}, {"node1"}, {"ca=127.0.0.1"}, {"../x=127.0.0.1"}, {"node1="}} {
		if r := runCLI(t, "http://unused", append([]string{"certs", "-o", t.TempDir()}, bad...)...); r.code != exitUsage {
			t.Errorf("certs %q: exit %d, want %d (usage)", bad, r.code, exitUsage)
		}
	}
}
