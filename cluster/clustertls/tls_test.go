package clustertls

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// member writes a member's files, signed by ca and naming hosts, into dir under name.
func member(t *testing.T, dir string, ca *CA, name string, hosts ...string) Files {
	t.Helper()
	cert, key, err := ca.Issue(name, hosts, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f := Files{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+".key"), CA: filepath.Join(dir, name+"-ca.pem")}
	write(t, f.Cert, cert, 0o644)
	write(t, f.Key, key, 0o600)
	write(t, f.CA, ca.CertPEM(), 0o644)
	return f
}

// write replaces a file through a rename, as an operator's tools do, so that a reader
// never sees half of it.
func write(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func newCA(t *testing.T, name string) *CA {
	t.Helper()
	ca, err := NewCA(name, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func load(t *testing.T, f Files) *Config {
	t.Helper()
	c, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	ca, other := newCA(t, "cluster"), newCA(t, "other")
	good := member(t, dir, ca, "node1", "127.0.0.1")
	foreign := member(t, dir, other, "node2", "127.0.0.1")
	loose := member(t, dir, ca, "node3", "127.0.0.1")
	if err := os.Chmod(loose.Key, 0o644); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "empty.pem")
	write(t, notPEM, []byte("nothing here\n"), 0o644)
	tests := []struct {
		name  string
		files Files
		want  string
	}{
		{"a flag missing", Files{Cert: good.Cert, Key: good.Key}, "--cluster-tls-ca"},
		{"a file missing", Files{Cert: good.Cert, Key: good.Key, CA: filepath.Join(dir, "none.pem")}, "no such file"},
		{"a key others may read", loose, "chmod 600"},
		{"a key that is not the certificate's", Files{Cert: good.Cert, Key: foreign.Key, CA: good.CA}, "private key does not match"},
		{"a certificate of another CA", Files{Cert: foreign.Cert, Key: foreign.Key, CA: good.CA}, "signed by the CA"},
		{"a CA file without a certificate", Files{Cert: good.Cert, Key: good.Key, CA: notPEM}, "no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.files)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, want an error saying %q", err, tt.want)
			}
		})
	}
	if _, err := Load(good); err != nil {
		t.Fatalf("a good member: %v", err)
	}
}

// serve answers every connection's handshake with srv's ServerConfig and reports the
// outcome of each.
func serve(t *testing.T, srv *Config) (addr string, results chan error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	results = make(chan error, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				results <- c.(*tls.Conn).Handshake()
			}()
		}
	}()
	return ln.Addr().String(), results
}

// dial makes a handshake with addr under cfg and reports both sides' outcomes.
func dial(t *testing.T, addr string, cfg *tls.Config, results chan error) (client, server error) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err == nil {
		// A TLS 1.3 client finishes before the server has checked its certificate:
		// a read tells whether the server kept the connection.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		if err == io.EOF {
			err = nil
		}
		c.Close()
	}
	select {
	case server = <-results:
	case <-time.After(5 * time.Second):
		t.Fatal("the server saw no handshake")
	}
	return err, server
}

func TestHandshake(t *testing.T) {
	dir := t.TempDir()
	ca, other := newCA(t, "cluster"), newCA(t, "other")
	srv := load(t, member(t, dir, ca, "node1", "127.0.0.1", "node1.example"))
	addr, results := serve(t, srv)
	peer := load(t, member(t, dir, ca, "node2", "127.0.0.1"))
	stranger := load(t, member(t, dir, other, "node3", "127.0.0.1"))
	wrongHost := load(t, member(t, dir, ca, "node4", "10.9.9.9"))
	wrongHostAddr, wrongHostResults := serve(t, wrongHost)
	noCert := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: peer.cur.Load().pool}
	// A stranger that trusts the cluster's CA, so that the refusal seen is the server's.
	strangerTrusting := stranger.ClientConfig()
	strangerTrusting.RootCAs = peer.cur.Load().pool
	// crypto/tls sends no certificate the server's CAs did not sign: send it anyway.
	strangerCert := strangerTrusting.Certificates[0]
	strangerTrusting.Certificates = nil
	strangerTrusting.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &strangerCert, nil }

	t.Run("a member of the cluster", func(t *testing.T) {
		if c, s := dial(t, addr, peer.ClientConfig(), results); c != nil || s != nil {
			t.Fatalf("client %v, server %v; want both to accept", c, s)
		}
	})
	t.Run("a client with no certificate", func(t *testing.T) {
		if _, s := dial(t, addr, noCert, results); s == nil || !strings.Contains(s.Error(), "certificate") {
			t.Fatalf("server %v, want it to refuse a client without a certificate", s)
		}
	})
	t.Run("a client of another CA", func(t *testing.T) {
		if _, s := dial(t, addr, strangerTrusting, results); s == nil || !strings.Contains(s.Error(), "unknown authority") {
			t.Fatalf("server %v, want it to refuse a certificate of another CA", s)
		}
	})
	t.Run("a server of another CA", func(t *testing.T) {
		strangerAddr, strangerResults := serve(t, stranger)
		if c, _ := dial(t, strangerAddr, peer.ClientConfig(), strangerResults); c == nil || !strings.Contains(c.Error(), "unknown authority") {
			t.Fatalf("client %v, want it to refuse a server of another CA", c)
		}
	})
	t.Run("a server whose certificate names another host", func(t *testing.T) {
		if c, _ := dial(t, wrongHostAddr, peer.ClientConfig(), wrongHostResults); c == nil || !strings.Contains(c.Error(), "10.9.9.9") {
			t.Fatalf("client %v, want it to refuse a certificate not naming 127.0.0.1", c)
		}
	})
}

// TestRotation moves a running member and its peer to a new CA by replacing their
// files: handshakes after the reload use the new material, and a change that does not
// make a member leaves the one in use.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "cluster")
	srvFiles := member(t, dir, ca, "node1", "127.0.0.1")
	srv := load(t, srvFiles)
	addr, results := serve(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Watch(ctx, 20*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))

	next := newCA(t, "cluster 2")
	peer := load(t, member(t, t.TempDir(), next, "node2", "127.0.0.1"))
	if _, s := dial(t, addr, peer.ClientConfig(), results); s == nil {
		t.Fatal("a peer of the next CA was let in before the rotation")
	}

	// A half rotation, a key of the next CA beside the old certificate, is refused and
	// the old material stays.
	nextCert, nextKey, err := next.Issue("node1", []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write(t, srvFiles.Key, nextKey, 0o600)
	time.Sleep(100 * time.Millisecond)
	old := load(t, member(t, t.TempDir(), ca, "node5", "127.0.0.1"))
	if c, s := dial(t, addr, old.ClientConfig(), results); c != nil || s != nil {
		t.Fatalf("during a half rotation: client %v, server %v; want the old material in use", c, s)
	}

	write(t, srvFiles.Cert, nextCert, 0o644)
	write(t, srvFiles.CA, next.CertPEM(), 0o644)
	deadline := time.Now().Add(5 * time.Second)
	for srv.NotAfter().After(time.Now().Add(2 * time.Hour)) {
		if time.Now().After(deadline) {
			t.Fatal("the watch did not read the rotated files")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, s := dial(t, addr, peer.ClientConfig(), results); c != nil || s != nil {
		t.Fatalf("after the rotation: client %v, server %v; want the next CA's peer let in", c, s)
	}
	if _, s := dial(t, addr, old.ClientConfig(), results); s == nil {
		t.Fatal("after the rotation a peer of the old CA is still let in")
	}
}

func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "cluster")
	key, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "ca.pem"), ca.CertPEM(), 0o644)
	write(t, filepath.Join(dir, "ca.key"), key, 0o600)
	again, err := LoadCA(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	// A member issued by the CA read back is trusted by a member of the first.
	a := load(t, member(t, dir, ca, "node1", "127.0.0.1"))
	b := load(t, member(t, dir, again, "node2", "127.0.0.1"))
	addr, results := serve(t, a)
	if c, s := dial(t, addr, b.ClientConfig(), results); c != nil || s != nil {
		t.Fatalf("client %v, server %v", c, s)
	}
	other := newCA(t, "other")
	otherKey, _ := other.KeyPEM()
	write(t, filepath.Join(dir, "other.key"), otherKey, 0o600)
	if _, err := LoadCA(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "other.key")); err == nil || !strings.Contains(err.Error(), "is not the key") {
		t.Fatalf("LoadCA with another CA's key = %v", err)
	}
}
