package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intentd/intentd/evidence"
	intenthttp "github.com/intentd/intentd/http"
)

// testCA issues the certificates of a TLS test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	ca := &testCA{}
	ca.cert, ca.key = ca.make(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "test CA"},
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	})
	return ca
}

// make signs tmpl (by itself when the CA has no certificate yet) with a new key.
func (ca *testCA) make(t *testing.T, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	parent, signer := ca.cert, ca.key
	if parent == nil {
		parent, signer = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// write writes the certificate (and the key, mode 0600, when not nil) in dir as
// NAME.pem and NAME.key.
func write(t *testing.T, dir, name string, cert *x509.Certificate, key *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	certFile = filepath.Join(dir, name+".pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	if key == nil {
		return certFile, ""
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile = filepath.Join(dir, name+".key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// startTLSServer serves the API over TLS with the server's certificate for 127.0.0.1,
// taking client certificates of the CA when clientCA is set; it returns the https://
// URL.
func startTLSServer(t *testing.T, ca *testCA, dir string, clientCA bool) string {
	t.Helper()
	cert, key := ca.make(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "intentd"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	files := intenthttp.TLSFiles{}
	files.Cert, files.Key = write(t, dir, "server", cert, key)
	if clientCA {
		files.ClientCA, _ = write(t, dir, "ca", ca.cert, nil)
	}
	tc, err := intenthttp.LoadTLS(files)
	if err != nil {
		t.Fatal(err)
	}
	e, opts := newTestEngine(t, evidence.DefaultCatalog(), 0)
	opts.TLS = tc
	srv := intenthttp.NewServer(e, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Shutdown(t.Context())
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return "https://" + ln.Addr().String()
}

// TestTLSFlags runs intentctl against a server over TLS: --ca trusts its CA, --cert and
// --cert-key present a client certificate, and what they refuse, each with its exit
// code.
func TestTLSFlags(t *testing.T) {
	lookupEnv = func(string) (string, bool) { return "", false }
	dir := t.TempDir()
	ca := newTestCA(t)
	caFile, _ := write(t, dir, "trusted-ca", ca.cert, nil)
	other := newTestCA(t)
	otherFile, _ := write(t, dir, "other-ca", other.cert, nil)
	plain := startTLSServer(t, ca, t.TempDir(), false)
	mtls := startTLSServer(t, ca, t.TempDir(), true)

	reader, readerKey := ca.make(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "reader", OrganizationalUnit: []string{"read"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	certFile, keyFile := write(t, dir, "reader", reader, readerKey)
	openKey := filepath.Join(dir, "open.key")
	b, _ := os.ReadFile(keyFile)
	if err := os.WriteFile(openKey, b, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		server string
		args   []string
		env    map[string]string
		code   int
		stdout string // in the output
		stderr string // in the errors
	}{
		{name: "trusted by --ca", server: plain, args: []string{"--ca", caFile, "info"}, code: exitOK, stdout: "api version"},
		{name: "trusted by INTENTCTL_CA", server: plain, args: []string{"info"}, env: map[string]string{"INTENTCTL_CA": caFile}, code: exitOK, stdout: "api version"},
		{name: "not trusted without --ca", server: plain, args: []string{"info"}, code: exitUnreachable, stderr: "certificate signed by unknown authority"},
		{name: "another CA", server: plain, args: []string{"--ca", otherFile, "info"}, code: exitUnreachable, stderr: "certificate signed by unknown authority"},
		{name: "--ca for http://", server: "http://127.0.0.1:1", args: []string{"--ca", caFile, "info"}, code: exitUsage, stderr: "are for an https:// server"},
		{name: "--ca not PEM", server: plain, args: []string{"--ca", keyFile, "info"}, code: exitRefused, stderr: "no PEM certificate in it"},
		{name: "--cert alone", server: mtls, args: []string{"--ca", caFile, "--cert", certFile, "info"}, code: exitUsage, stderr: "--cert and --cert-key go together"},
		{name: "client certificate", server: mtls, args: []string{"--ca", caFile, "--cert", certFile, "--cert-key", keyFile, "info"}, code: exitOK, stdout: "api version"},
		{name: "client certificate from the environment", server: mtls, args: []string{"info"},
			env: map[string]string{"INTENTCTL_CA": caFile, "INTENTCTL_CERT": certFile, "INTENTCTL_CERT_KEY": keyFile}, code: exitOK, stdout: "api version"},
		{name: "client certificate without the role", server: mtls, args: []string{"--ca", caFile, "--cert", certFile, "--cert-key", keyFile, "policy", "delete", "x"},
			code: exitRefused, stderr: "needs the role admin"},
		{name: "no client certificate", server: mtls, args: []string{"--ca", caFile, "info"}, code: exitRefused, stderr: "a client certificate signed by the CA this server trusts for callers is required"},
		{name: "key open to others", server: mtls, args: []string{"--ca", caFile, "--cert", certFile, "--cert-key", openKey, "info"}, code: exitRefused, stderr: "chmod 600"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lookupEnv = func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			defer func() { lookupEnv = func(string) (string, bool) { return "", false } }()
			r := runCLI(t, tc.server, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("intentctl %q: exit %d, stdout %q, stderr %q; want exit %d, %q in stdout, %q in stderr",
					tc.args, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}

	// The whole demo over TLS: policies, intents, proposals, the event stream (over
	// HTTP/2) and the proofs.
	t.Run("demo", func(t *testing.T) {
		r := runCLI(t, plain, "--ca", caFile, "demo")
		if r.code != exitOK {
			t.Fatalf("demo over TLS: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}
