package evidence

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/intentd/intentd/internal/netguard"
)

// DefaultTimeout is the time limit of one extraction over the network, as the
// service's decisions fix it.
const DefaultTimeout = 10 * time.Second

// Option sets a parameter of the http or web extractor.
type Option func(*fetchConfig)

type fetchConfig struct {
	timeout      time.Duration
	maxBytes     int64
	userAgent    string
	transport    http.RoundTripper
	allowPrivate bool
	maxRedirects int
}

// WithTimeout sets the time limit of one extraction, connection to last byte. The
// caller's context is honoured as well; the earlier of the two ends the request.
func WithTimeout(d time.Duration) Option { return func(c *fetchConfig) { c.timeout = d } }

// WithMaxBytes sets the largest response body read (the evidence service's JSON, or
// the product page). A larger one is a KindTooLarge error, not a truncated read: half
// a page could name the wrong offer.
func WithMaxBytes(n int64) Option { return func(c *fetchConfig) { c.maxBytes = n } }

// WithUserAgent sets the User-Agent header of the requests.
func WithUserAgent(ua string) Option { return func(c *fetchConfig) { c.userAgent = ua } }

// WithTransport replaces the HTTP transport (for a proxy, client certificates or
// tests). The web extractor's refusal of private addresses lives in its default
// transport's dialer, so a replaced transport must do its own.
func WithTransport(rt http.RoundTripper) Option { return func(c *fetchConfig) { c.transport = rt } }

// WithPrivateAddresses lets the web extractor fetch pages from loopback, private,
// link-local and other non-public addresses. It is off by default because the URL
// comes from a proposal: without the check, anyone who may propose could make the
// server read its own network (cloud metadata, admin ports).
func WithPrivateAddresses(allow bool) Option { return func(c *fetchConfig) { c.allowPrivate = allow } }

func newFetchConfig(maxBytes int64, opts []Option) fetchConfig {
	c := fetchConfig{
		timeout:      DefaultTimeout,
		maxBytes:     maxBytes,
		userAgent:    "intentd-evidence/1",
		maxRedirects: 5,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBytes <= 0 {
		c.maxBytes = maxBytes
	}
	return c
}

// newTransport is a fresh transport per extractor with dial and header time-outs of
// its own, so that one slow source cannot hold another's connections.
func newTransport(guardPrivate bool) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if guardPrivate {
		d.Control = netguard.Control
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// redirectError is returned by CheckRedirect; the extractors turn it into a
// KindRedirect error.
type redirectError struct{ reason string }

func (e *redirectError) Error() string { return e.reason }

// classify turns an error of http.Client.Do or of reading a body into an *Error.
// The context is consulted first: a request cut off by the deadline fails with
// whatever the transport saw at that moment, and that is a time-out.
func classify(ctx context.Context, err error, extractor, what string, limit time.Duration) *Error {
	if e := ctxError(ctx, extractor, what, limit); e != nil {
		return e
	}
	var re *redirectError
	if errors.As(err, &re) {
		return errorf(KindRedirect, extractor, err, "%s: %s", what, re.reason)
	}
	var pe *netguard.Error
	if errors.As(err, &pe) {
		return errorf(KindUnsupported, extractor, err, "%s: %s", what, pe.Error())
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errorf(KindTimeout, extractor, err, "%s: no answer within the time limit (%v)", what, limit)
	}
	return errorf(KindUnreachable, extractor, err, "%s: %s", what, unreachable(err))
}

// unreachable says why a connection failed in words a reason can show to whoever reads
// an intent's status. The transport's own message names what is the operator's alone:
// the resolver's address ("lookup shop.example on 10.0.0.53:53"), the local and remote
// addresses of a socket. The whole error stays in Err, for the log.
func unreachable(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return fmt.Sprintf("the host %s was not found", dns.Name)
		}
		if dns.IsTimeout {
			return fmt.Sprintf("looking up the host %s timed out", dns.Name)
		}
		return fmt.Sprintf("the host %s could not be looked up", dns.Name)
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "the connection was reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the host cannot be reached"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection was closed before the answer was complete"
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return "its TLS certificate is not valid: " + cert.Err.Error()
	}
	var rec tls.RecordHeaderError
	if errors.As(err, &rec) {
		return "the TLS handshake failed: the server does not speak TLS"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return fmt.Sprintf("the connection failed (%s)", op.Op)
	}
	// Not the socket's: the answer itself was wrong (a malformed response, a body that
	// does not decompress), which the transport's message says without addresses.
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// readLimited reads at most limit bytes of body, and reports whether there was
// more. A Content-Length over the limit is refused before reading.
func readLimited(resp *http.Response, limit int64) ([]byte, bool, error) {
	if resp.ContentLength > limit {
		return nil, true, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > limit {
		return nil, true, nil
	}
	return data, false, nil
}

// effectiveLimit is the time the request will really have: the extractor's limit,
// or less when the caller's deadline comes first. It is only for messages.
func effectiveLimit(ctx context.Context, limit time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < limit {
			return left.Round(time.Millisecond)
		}
	}
	return limit
}
