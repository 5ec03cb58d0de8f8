package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// DefaultHTTPMaxBytes is the http extractor's default response size limit.
const DefaultHTTPMaxBytes = 1 << 20

// HTTPExtractor is the http extractor: it posts the request to an evidence service
// at BASE/extract and accepts only a 200 whose body is a flat JSON object. It is safe
// for concurrent use.
type HTTPExtractor struct {
	endpoint string
	cfg      fetchConfig
	client   *http.Client
}

// NewHTTP returns an http extractor that posts to base + "/extract". base is the
// service's root URL as the operator configured it (--extractor-url); a trailing
// slash is ignored. Defaults: DefaultTimeout, DefaultHTTPMaxBytes.
func NewHTTP(base string, opts ...Option) *HTTPExtractor {
	cfg := newFetchConfig(DefaultHTTPMaxBytes, opts)
	x := &HTTPExtractor{endpoint: strings.TrimRight(base, "/") + "/extract", cfg: cfg}
	rt := cfg.transport
	if rt == nil {
		// The service is the operator's, so it may well live on a private address.
		rt = newTransport(false)
	}
	x.client = &http.Client{Transport: rt, CheckRedirect: x.checkRedirect}
	return x
}

// Endpoint returns the URL the extractor posts to.
func (x *HTTPExtractor) Endpoint() string { return x.endpoint }

// checkRedirect follows a redirect only to the same host (and port) without a
// downgrade from https: the request carries the intent and policy ids, which are
// for the configured service alone.
func (x *HTTPExtractor) checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	switch {
	case len(via) > x.cfg.maxRedirects:
		return &redirectError{fmt.Sprintf("more than %d redirects", x.cfg.maxRedirects)}
	case !strings.EqualFold(req.URL.Host, first.Host):
		return &redirectError{fmt.Sprintf("redirect to another host (%s) refused", req.URL.Host)}
	case first.Scheme == "https" && req.URL.Scheme != "https":
		return &redirectError{"redirect from https to " + req.URL.Scheme + " refused"}
	}
	return nil
}

// Extract posts req to the evidence service. Failures: KindTimeout, KindCanceled,
// KindUnreachable, KindRedirect, KindBadStatus (any status but 200; 404 is
// KindNotFound, the service's way to say it does not know the solution),
// KindTooLarge and KindBadBody (not one flat JSON object). The values' types are
// checked by the Router, against the attributes asked for.
func (x *HTTPExtractor) Extract(ctx context.Context, req Request) (Evidence, error) {
	if req.Attributes == nil {
		// The contract's "attributes" is an object; never send null.
		req.Attributes = map[string]Attribute{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, errorf(KindBadBody, "http", err, "encoding the request: %v", err)
	}
	limit := effectiveLimit(ctx, x.cfg.timeout)
	ctx, cancel := context.WithTimeout(ctx, x.cfg.timeout)
	defer cancel()
	what := "POST " + x.endpoint
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, x.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, errorf(KindUnsupported, "http", err, "bad evidence service URL %q: %v", x.endpoint, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", x.cfg.userAgent)
	resp, err := x.client.Do(hreq)
	if err != nil {
		return nil, classify(ctx, err, "http", what, limit)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, errorf(KindNotFound, "http", nil, "%s: the evidence service does not know solution %q (404)", what, clip(req.Solution))
	case resp.StatusCode != http.StatusOK:
		return nil, errorf(KindBadStatus, "http", nil, "%s: status %s, want 200", what, resp.Status)
	}
	data, tooLarge, err := readLimited(resp, x.cfg.maxBytes)
	if err != nil {
		return nil, classify(ctx, err, "http", what, limit)
	}
	if tooLarge {
		return nil, errorf(KindTooLarge, "http", nil, "%s: the answer is larger than %d bytes", what, x.cfg.maxBytes)
	}
	ev, err := DecodeHTTPResponse(data)
	if err != nil {
		return nil, errorf(KindBadBody, "http", err, "%s: %v", what, err)
	}
	return ev, nil
}

// DecodeHTTPResponse decodes an evidence service's 200 body: exactly one flat JSON
// object (values are strings, numbers, booleans, null, or arrays of the scalars),
// numbers kept as json.Number.
func DecodeHTTPResponse(data []byte) (Evidence, error) {
	return decodeFlatObject(data)
}
