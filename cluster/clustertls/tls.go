// Package clustertls is the mutual TLS between the members of a cluster: each member
// holds a certificate signed by the cluster's own CA, presents it when it dials another
// member and when another dials it, and refuses a peer whose certificate does not chain
// to that CA, at the handshake, before any message reaches an actor. The files are read
// again without a restart (Reload, Watch) so that an operator can rotate them. It also
// makes the CA and the members' certificates (ca.go), for intentctl certs.
package clustertls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/intentd/intentd/internal/filewatch"
	"github.com/intentd/intentd/internal/secretfile"
	"google.golang.org/grpc/credentials"
)

// Files names the PEM files of a member: its certificate (with any intermediates after
// it), its private key, and the CA certificates its peers' certificates must chain to.
type Files struct {
	Cert, Key, CA string
}

// Config is a member's TLS material, read from its Files and read again on Reload. The
// tls.Configs it gives read the material of the moment at each handshake, so that a
// reload reaches every connection made after it; connections already made stay up.
type Config struct {
	files Files
	cur   atomic.Pointer[material]
}

// material is one reading of the files.
type material struct {
	cert  tls.Certificate
	leaf  *x509.Certificate
	pool  *x509.CertPool
	stamp []filewatch.Stamp
}

// maxKeyFile bounds a key file read: a PEM key is a few hundred bytes.
const maxKeyFile = 64 << 10

// Load reads the files and checks that they make a member: the key is the
// certificate's, kept from group and others, and the certificate chains to the CA and
// serves both as client and as server.
func Load(f Files) (*Config, error) {
	c := &Config{files: f}
	m, err := read(f)
	if err != nil {
		return nil, err
	}
	c.cur.Store(m)
	return c, nil
}

// read reads and checks the three files.
func read(f Files) (*material, error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, errors.New("cluster TLS needs a certificate, its key and the CA: --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca")
	}
	st, err := stamps(f)
	if err != nil {
		return nil, err
	}
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS certificate: %w", err)
	}
	keyPEM, err := secretfile.ReadKey(f.Key, maxKeyFile) // kept from group and others
	if err != nil {
		return nil, fmt.Errorf("cluster TLS key: %w", err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS CA: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS certificate %s and key %s: %w", f.Cert, f.Key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cluster TLS CA %s: no PEM certificate in it", f.CA)
	}
	leaf := cert.Leaf
	if _, err := verify(leaf, cert.Certificate[1:], pool, "", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth); err != nil {
		return nil, fmt.Errorf("cluster TLS certificate %s: %w (a member's certificate must be signed by the CA of --cluster-tls-ca and serve as client and server: intentctl certs makes such)", f.Cert, err)
	}
	return &material{cert: cert, leaf: leaf, pool: pool, stamp: st}, nil
}

// stamps stats the three files, in the order cert, key, CA.
func stamps(f Files) ([]filewatch.Stamp, error) {
	var out []filewatch.Stamp
	for _, p := range []string{f.Cert, f.Key, f.CA} {
		st, err := filewatch.Of(p)
		if err != nil {
			return nil, fmt.Errorf("cluster TLS: %w", err)
		}
		out = append(out, st)
	}
	return out, nil
}

// verify checks that cert chains to pool, for each of the uses given, and when name is
// not empty, that it names that host.
func verify(cert *x509.Certificate, intermediates [][]byte, pool *x509.CertPool, name string, uses ...x509.ExtKeyUsage) ([][]*x509.Certificate, error) {
	inter := x509.NewCertPool()
	for _, der := range intermediates {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}
		inter.AddCert(c)
	}
	var chains [][]*x509.Certificate
	for _, use := range uses {
		var err error
		chains, err = cert.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: name, KeyUsages: []x509.ExtKeyUsage{use}})
		if err != nil {
			return nil, err
		}
	}
	return chains, nil
}

// Reload reads the files again. On an error the material in use stays and the error
// says why; a reload never leaves a member without a certificate.
func (c *Config) Reload() error {
	m, err := read(c.files)
	if err != nil {
		return err
	}
	c.cur.Store(m)
	return nil
}

// NotAfter is when the certificate in use expires.
func (c *Config) NotAfter() time.Time { return c.cur.Load().leaf.NotAfter }

// Watch reads the files again whenever one of them changes, looking every interval,
// until ctx ends. A change that does not make a member (a key that is not the
// certificate's, a certificate of another CA) is logged once per change and the
// material in use stays; a file missing for a moment, as during a rotation that
// replaces the files one by one, is read once both are there.
func (c *Config) Watch(ctx context.Context, interval time.Duration, log *slog.Logger) {
	filewatch.Watcher{
		Stamps:  func() ([]filewatch.Stamp, error) { return stamps(c.files) },
		Current: func() []filewatch.Stamp { return c.cur.Load().stamp },
		Reload:  c.Reload,
		Failed: func(err error) {
			log.Error("cluster TLS files changed but cannot be used; the certificate in use stays", "err", err)
		},
		Reloaded: func() { log.Info("cluster TLS files read again", "cert", c.files.Cert, "not_after", c.NotAfter()) },
	}.Run(ctx, interval)
}

// ServerConfig is the tls.Config of the member's listener: it presents the member's
// certificate and requires one of the peer's that chains to the CA
// (tls.RequireAndVerifyClientCert), both as they are at the handshake.
func (c *Config) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// gRPC needs h2 negotiated; the config returned per handshake must say so
		// itself, since gRPC adds it only to the config it was given.
		NextProtos: []string{"h2"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := c.cur.Load()
			return &tls.Config{
				MinVersion:   tls.VersionTLS13,
				NextProtos:   []string{"h2"},
				Certificates: []tls.Certificate{m.cert},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    m.pool,
			}, nil
		},
	}
}

// ClientConfig is the tls.Config a member dials others with, as the material is now:
// it presents the member's certificate, and accepts a peer whose certificate chains to
// the CA and names the host dialled. Credentials makes one per dial, so that a dial
// after a reload trusts the CA read last.
func (c *Config) ClientConfig() *tls.Config {
	m := c.cur.Load()
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{m.cert},
		RootCAs:      m.pool,
	}
}

// Credentials are the gRPC transport credentials of protoactor's remoting: each
// handshake, dialled or accepted, uses the material of the moment.
func (c *Config) Credentials() credentials.TransportCredentials { return creds{c} }

// creds makes gRPC's TLS credentials anew for each handshake, from the Config's
// material then: gRPC's own are fixed when made.
type creds struct{ c *Config }

func (k creds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return credentials.NewTLS(k.c.ClientConfig()).ClientHandshake(ctx, authority, raw)
}

func (k creds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return credentials.NewTLS(k.c.ServerConfig()).ServerHandshake(raw)
}

func (k creds) Info() credentials.ProtocolInfo {
	return credentials.NewTLS(k.c.ClientConfig()).Info()
}

func (k creds) Clone() credentials.TransportCredentials { return k }

// OverrideServerName is deprecated in gRPC and unused by remoting; the name checked is
// always the host dialled.
func (k creds) OverrideServerName(string) error { return nil }
