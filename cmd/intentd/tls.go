package main

import (
	"context"
	"errors"
	"flag"

	intenthttp "github.com/intentd/intentd/http"
)

// tlsFlags registers the flags of the API's TLS.
func (c *Config) tlsFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.API.TLS.Cert, "tls-cert", "", "PEM file of the HTTP API's certificate (with its intermediates after it): the API is then served over TLS, HTTP/2 and HTTP/1.1; needs --tls-key; read again on SIGHUP and when it changes")
	fs.StringVar(&c.API.TLS.Key, "tls-key", "", "PEM file of the private key of --tls-cert (mode 0600 or 0400)")
	fs.StringVar(&c.API.TLS.ClientCA, "tls-client-ca", "", "PEM file of the CAs whose client certificates authenticate callers, their roles in the subject's OU values (docs/operating.md, \"TLS\"); asked for, not required; with it every route but the health checks needs a token or such a certificate")
}

// validateTLS checks that the TLS flags come as a set: a certificate and its key, or
// neither; a client CA only with them.
func (c *Config) validateTLS() error {
	t := c.API.TLS
	switch {
	case (t.Cert == "") != (t.Key == ""):
		return errors.New("--tls-cert and --tls-key go together: give both (the API's certificate and its key), or neither to serve plain HTTP")
	case t.ClientCA != "" && t.Cert == "":
		return errors.New("--tls-client-ca needs TLS: give --tls-cert and --tls-key too")
	}
	return nil
}

// loadTLS reads the API's TLS files, when given, and reads them again whenever they
// change, until Close; SIGHUP reads them at once (Reload). A file that cannot be used
// stops the start with the flag at fault.
func (m *Main) loadTLS() error {
	f := m.Config.API.TLS
	if f.Cert == "" {
		return nil
	}
	t, err := intenthttp.LoadTLS(f)
	if err != nil {
		return err
	}
	m.apiTLS = t
	interval := m.tlsWatchEvery
	if interval <= 0 {
		interval = tlsWatchInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	m.stopAPITLSWatch = func() { cancel(); <-done }
	go func() {
		defer close(done)
		t.Watch(ctx, interval, m.logger.With("component", "http"))
	}()
	return nil
}

// reloadTLS reads the API's TLS files again (SIGHUP); a bad file is logged and the
// certificate in use kept.
func (m *Main) reloadTLS() {
	if m.apiTLS == nil {
		return
	}
	if err := m.apiTLS.Reload(); err != nil {
		m.logger.Error("TLS reload failed; the certificate in use stays", "component", "http", "err", err)
		return
	}
	m.logger.Info("TLS files read again", "component", "http", "cert", m.Config.API.TLS.Cert, "not_after", m.apiTLS.NotAfter())
}
