package http

import (
	"context"
	"crypto/x509"
	"encoding/hex"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/intentd/intentd"
)

// A client certificate authenticates its caller when it chains to the client CA
// (Options.TLS, --tls-client-ca) and serves for client authentication. Its roles are the
// values of its subject's organizational units (OU) that name one (admin, submit,
// propose, read, metrics); any other OU grants nothing, so that a certificate a CA
// issued for something else carries no role by accident. Its common name (CN) is the
// caller's name in request logs, as a token's name is. A request that carries an
// Authorization header is judged by its token alone, whatever certificate its
// connection presented: a caller with a certificate it did not mean to use (a browser
// that offered one) and a valid token is the token's caller.

// certCallerPrefix starts the name of a caller authenticated by a certificate in request
// logs, so that it cannot be taken for a token's name.
const certCallerPrefix = "cert:"

// connCert is the verdict on the client certificate of one connection, reached at its
// first request that needs a caller and kept for the others: the chain is checked once
// per connection, as a handshake would check it, rather than once per request (it
// costs about 80 µs). It is reached again when the client CAs were read again since
// (a CA replaced to shut its callers out reaches the connections already made) and
// when the certificate expires during the connection.
type connCert struct {
	mu sync.Mutex
	// pool is the client CAs the verdict was reached with; nil before the first.
	pool     *x509.CertPool
	notAfter time.Time
	c        caller
	err      error
}

type connCertKey struct{}

// connContext gives each connection its connCert (http.Server.ConnContext). Every
// request of the connection, over HTTP/1.1 or HTTP/2, has a context made from it.
func connContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connCertKey{}, &connCert{})
}

// presentsCertificate reports whether the request's connection presented a client
// certificate.
func presentsCertificate(r *http.Request) bool {
	return r.TLS != nil && len(r.TLS.PeerCertificates) > 0
}

// certCaller authenticates the caller of a request whose connection presented a
// client certificate.
func (s *Server) certCaller(r *http.Request) (caller, error) {
	cc, ok := r.Context().Value(connCertKey{}).(*connCert)
	if !ok {
		// Not served through Serve (a test's handler): checked on every request.
		cc = &connCert{}
	}
	pool := s.opts.TLS.clientCAs()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.pool != pool || (cc.err == nil && time.Now().After(cc.notAfter)) {
		chain := r.TLS.PeerCertificates
		cc.c, cc.err = verifyClientCert(chain, pool)
		cc.pool, cc.notAfter = pool, chain[0].NotAfter
	}
	return cc.c, cc.err
}

// verifyClientCert checks a client's chain (its certificate first, then the
// intermediates it sent) against the client CAs, and reads the caller from the
// certificate.
func verifyClientCert(chain []*x509.Certificate, roots *x509.CertPool) (caller, error) {
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	leaf := chain[0]
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return caller{}, intentd.Errorf(intentd.KindUnauthorized, CodeUnauthorized,
			"the client certificate is not accepted: %s (it must be signed by the CA this server trusts for callers, valid now, and usable for client authentication)", certReason(err))
	}
	return certRoles(leaf), nil
}

// certReason says in words why a chain was refused, naming nothing of the server's.
func certReason(err error) string {
	switch e := err.(type) {
	case x509.UnknownAuthorityError:
		return "it is not signed by a trusted CA"
	case x509.CertificateInvalidError:
		switch e.Reason {
		case x509.Expired:
			return "it is expired or not yet valid"
		case x509.IncompatibleUsage:
			return "it is not for client authentication"
		}
	}
	return "its chain does not verify"
}

// certRoles is the caller a verified certificate names: its roles from its OUs, its
// name from its CN (or, without one, a part of its serial number).
func certRoles(leaf *x509.Certificate) caller {
	var roles []Role
	for _, ou := range leaf.Subject.OrganizationalUnit {
		if r := Role(ou); slices.Contains(allRoles, r) && !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	name := leaf.Subject.CommonName
	if name == "" {
		serial := leaf.SerialNumber.Bytes()
		name = "serial:" + hex.EncodeToString(serial[:min(len(serial), 8)])
	}
	return caller{name: certCallerPrefix + clip(name), roles: roles, cert: true}
}
