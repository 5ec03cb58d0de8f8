package client

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// writeSelfSigned writes a self-signed client certificate and its key in dir.
func writeSelfSigned(t *testing.T, dir string, keyMode os.FileMode) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "caller", OrganizationalUnit: []string{"read"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "caller.pem"), filepath.Join(dir, "caller.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), keyMode); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestNewTLSConfig checks what NewTLSConfig reads and what it refuses, each refusal
// naming the file at fault.
func TestNewTLSConfig(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir, 0o600)
	open := t.TempDir()
	_, openKey := writeSelfSigned(t, open, 0o644)
	missing := filepath.Join(dir, "missing.pem")
	notKey := filepath.Join(dir, "not.key")
	b, _ := os.ReadFile(certFile)
	if err := os.WriteFile(notKey, b, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name              string
		ca, cert, key     string
		wantErr           string
		wantRoots, wantCC bool
	}{
		{name: "nothing"},
		{name: "a CA", ca: certFile, wantRoots: true},
		{name: "a CA and a certificate", ca: certFile, cert: certFile, key: keyFile, wantRoots: true, wantCC: true},
		{name: "a certificate alone", cert: certFile, key: keyFile, wantCC: true},
		{name: "CA missing", ca: missing, wantErr: "CA file: open " + missing},
		{name: "CA not PEM", ca: keyFile, wantErr: "CA file " + keyFile + ": no PEM certificate in it"},
		{name: "certificate without key", cert: certFile, wantErr: "needs its key"},
		{name: "key without certificate", key: keyFile, wantErr: "needs its key"},
		{name: "key open to others", cert: certFile, key: openKey, wantErr: "chmod 600"},
		{name: "key is no key", cert: certFile, key: notKey, wantErr: "client certificate " + certFile + " and key " + notKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewTLSConfig(tc.ca, tc.cert, tc.key)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one holding %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (c.RootCAs != nil) != tc.wantRoots || (len(c.Certificates) == 1) != tc.wantCC {
				t.Fatalf("RootCAs set %v, %d certificates; want %v and %v", c.RootCAs != nil, len(c.Certificates), tc.wantRoots, tc.wantCC)
			}
		})
	}
}

// TestClientTLSConfig checks a client given TLSConfig: it trusts the CA it names, speaks
// HTTP/2 with a server that offers it, presents its certificate, and shares one
// transport with its copies; HTTPClient, when set, is used instead.
func TestClientTLSConfig(t *testing.T) {
	var proto atomic.Value
	var presented atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
		presented.Store(r.TLS != nil && len(r.TLS.PeerCertificates) == 1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"api_version":"0.10.0"}`))
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()

	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := writeSelfSigned(t, dir, 0o600)

	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Info(t.Context()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Info without the CA: %v, want a certificate error", err)
	}
	if c.TLSConfig, err = NewTLSConfig(caFile, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatalf("Info with the CA: %v", err)
	}
	if info.APIVersion != "0.10.0" || proto.Load() != "HTTP/2.0" || !presented.Load() {
		t.Fatalf("Info: %+v over %v, certificate presented %v; want it over HTTP/2.0 with the certificate", info, proto.Load(), presented.Load())
	}
	cp := *c
	if cp.HTTP() != c.HTTP() {
		t.Error("a copy of the client made a transport of its own")
	}
	cp.HTTPClient = srv.Client()
	if cp.HTTP() != srv.Client() {
		t.Error("HTTPClient is not the client requests go through")
	}
}
