package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/intentd/intentd/internal/secretfile"
)

// maxKeyFile bounds a client key file read: a PEM key is a few kilobytes at most.
const maxKeyFile = 64 << 10

// NewTLSConfig reads the TLS settings of a client from PEM files, for Client.TLSConfig:
// caFile, when not empty, holds the CA certificates the server's certificate must chain
// to, in place of the system's; certFile and keyFile, both or neither, a client
// certificate to present and its private key, which group and others must not be able
// to read (mode 0600 or 0400). The errors name the file at fault.
func NewTLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate in it", caFile)
		}
	}
	switch {
	case certFile == "" && keyFile == "":
		return c, nil
	case certFile == "" || keyFile == "":
		return nil, errors.New("a client certificate needs its key: give both files, or neither")
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	keyPEM, err := secretfile.ReadKey(keyFile, maxKeyFile)
	if err != nil {
		return nil, fmt.Errorf("client key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("client certificate %s and key %s: %w", certFile, keyFile, err)
	}
	c.Certificates = []tls.Certificate{cert}
	return c, nil
}
