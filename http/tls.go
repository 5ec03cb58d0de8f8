package http

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/intentd/intentd/internal/filewatch"
	"github.com/intentd/intentd/internal/secretfile"
)

// TLSFiles names the PEM files of the API's TLS: the server's certificate (with any
// intermediates after it), its private key, and, optionally, the CA certificates that a
// client certificate must chain to for its caller to be authenticated by it.
type TLSFiles struct {
	Cert, Key, ClientCA string
}

// TLS is the API's TLS material, read from its TLSFiles and read again by Reload and
// Watch. The tls.Config a server serves with reads the material of the moment at each
// handshake, so that a renewed certificate reaches every connection made after the
// reload without a restart; connections already made keep theirs.
type TLS struct {
	files TLSFiles
	cur   atomic.Pointer[tlsMaterial]
}

// tlsMaterial is one reading of the files.
type tlsMaterial struct {
	cert tls.Certificate
	// clientCAs is nil without a client CA file.
	clientCAs *x509.CertPool
	stamps    []filewatch.Stamp
}

// maxTLSKeyFile bounds a key file read: a PEM key is a few kilobytes at most.
const maxTLSKeyFile = 64 << 10

// LoadTLS reads the files and checks that they make a server: the key is the
// certificate's and is kept from group and others, and the client CA file, when
// named, holds at least one certificate. An error names the flag of the file at fault.
func LoadTLS(f TLSFiles) (*TLS, error) {
	t := &TLS{files: f}
	m, err := readTLS(f)
	if err != nil {
		return nil, err
	}
	t.cur.Store(m)
	return t, nil
}

// readTLS reads and checks the files once.
func readTLS(f TLSFiles) (*tlsMaterial, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("TLS needs a certificate and its key: --tls-cert and --tls-key")
	}
	st, err := tlsStamps(f)
	if err != nil {
		return nil, err
	}
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: %w", err)
	}
	keyPEM, err := secretfile.ReadKey(f.Key, maxTLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s and --tls-key %s: %w (want the PEM certificate and the PEM private key of that certificate)", f.Cert, f.Key, err)
	}
	m := &tlsMaterial{cert: cert, stamps: st}
	if f.ClientCA != "" {
		caPEM, err := os.ReadFile(f.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		m.clientCAs = x509.NewCertPool()
		if !m.clientCAs.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("--tls-client-ca %s: no PEM certificate in it", f.ClientCA)
		}
	}
	return m, nil
}

// tlsStamps stats the files, in the order certificate, key, client CA.
func tlsStamps(f TLSFiles) ([]filewatch.Stamp, error) {
	var out []filewatch.Stamp
	for _, p := range []struct{ flag, path string }{{"--tls-cert", f.Cert}, {"--tls-key", f.Key}, {"--tls-client-ca", f.ClientCA}} {
		if p.path == "" {
			continue
		}
		st, err := filewatch.Of(p.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.flag, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// Reload reads the files again. On an error the material in use stays and the error
// says why: a reload never leaves the server without a certificate.
func (t *TLS) Reload() error {
	m, err := readTLS(t.files)
	if err != nil {
		return err
	}
	t.cur.Store(m)
	return nil
}

// NotAfter is when the certificate in use expires.
func (t *TLS) NotAfter() time.Time { return t.cur.Load().cert.Leaf.NotAfter }

// ClientCertificates reports whether a client CA is configured: whether a caller may
// be authenticated by a client certificate.
func (t *TLS) ClientCertificates() bool { return t.files.ClientCA != "" }

// Watch reads the files again whenever one of them changes, looking every interval,
// until ctx ends. A change that cannot be used (a key that is not the certificate's, a
// file half written) is logged once per change and the material in use stays; a file
// missing for a moment, as during a rotation that replaces the files one by one, is
// read once it is back.
func (t *TLS) Watch(ctx context.Context, interval time.Duration, log *slog.Logger) {
	filewatch.Watcher{
		Stamps:  func() ([]filewatch.Stamp, error) { return tlsStamps(t.files) },
		Current: func() []filewatch.Stamp { return t.cur.Load().stamps },
		Reload:  t.Reload,
		Failed: func(err error) {
			log.Error("TLS files changed but cannot be used; the certificate in use stays", "err", err)
		},
		Reloaded: func() { log.Info("TLS files read again", "cert", t.files.Cert, "not_after", t.NotAfter()) },
	}.Run(ctx, interval)
}

// nextProtos are the protocols the server offers in ALPN: HTTP/2 first, so that every
// client that speaks it gets it, and HTTP/1.1 for the others.
var nextProtos = []string{"h2", "http/1.1"}

// config is the tls.Config the server serves with. Each handshake gets the material of
// the moment through GetConfigForClient, whose answer replaces the whole config for
// that connection: it must name the protocols itself for HTTP/2 to be negotiated.
// A client certificate is asked for, never required, so that browsers and callers with
// tokens connect as before; it is not checked at the handshake, where a certificate of
// another CA would end the connection without a word, but by the server before each
// request that needs a caller (clientcert.go), which answers 401 and says why. The
// client CAs are still sent in the request for a certificate, so that a client that
// holds several (a browser) offers one of them.
func (t *TLS) config() *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: nextProtos}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		m := t.cur.Load()
		c := &tls.Config{
			MinVersion:   tls.VersionTLS12,
			NextProtos:   nextProtos,
			Certificates: []tls.Certificate{m.cert},
		}
		if m.clientCAs != nil {
			c.ClientAuth = tls.RequestClientCert
			c.ClientCAs = m.clientCAs
		}
		return c, nil
	}
	return base
}

// clientCAs is the pool a client certificate must chain to, as read last; nil
// without a client CA.
func (t *TLS) clientCAs() *x509.CertPool { return t.cur.Load().clientCAs }
