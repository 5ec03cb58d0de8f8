package evidence

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"
)

// DefaultWebMaxBytes is the web extractor's default page size limit.
const DefaultWebMaxBytes = 2 << 20

// WebExtractor is the web extractor: it fetches the solution URL and reads the
// product from the page (ParsePage). It is safe for concurrent use.
type WebExtractor struct {
	cfg    fetchConfig
	client *http.Client
}

// NewWeb returns a web extractor. Defaults: DefaultTimeout, DefaultWebMaxBytes, at
// most 5 redirects (http and https only), and no fetching from non-public addresses
// (WithPrivateAddresses).
func NewWeb(opts ...Option) *WebExtractor {
	cfg := newFetchConfig(DefaultWebMaxBytes, opts)
	w := &WebExtractor{cfg: cfg}
	rt := cfg.transport
	if rt == nil {
		rt = newTransport(!cfg.allowPrivate)
	}
	w.client = &http.Client{Transport: rt, CheckRedirect: w.checkRedirect}
	return w
}

// checkRedirect allows a shop's usual redirects (http to https, to www., to a
// canonical path), even to another host: the page, not the host, is the evidence,
// and the dialer still refuses private addresses.
func (w *WebExtractor) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > w.cfg.maxRedirects {
		return &redirectError{fmt.Sprintf("more than %d redirects", w.cfg.maxRedirects)}
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return &redirectError{fmt.Sprintf("redirect to a %q URL refused (http and https only)", req.URL.Scheme)}
	}
	return nil
}

// Extract fetches req.Solution and returns the product data on the page. Failures:
// KindUnsupported (not an http or https URL, or a non-public address), KindTimeout,
// KindCanceled, KindUnreachable, KindRedirect, KindNotFound (404 or 410),
// KindBadStatus (another status but 200), KindBadBody (not HTML), KindTooLarge and
// KindNoProduct.
func (w *WebExtractor) Extract(ctx context.Context, req Request) (Evidence, error) {
	u, err := url.Parse(req.Solution)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errorf(KindUnsupported, "web", err, "solution %q is not an http or https URL", clipTo(req.Solution, 200))
	}
	if u.User != nil {
		// Credentials in a proposed URL would be sent to the shop on the
		// proposer's behalf; no shop page needs them.
		return nil, errorf(KindUnsupported, "web", nil, "solution URL with user credentials refused")
	}
	limit := effectiveLimit(ctx, w.cfg.timeout)
	ctx, cancel := context.WithTimeout(ctx, w.cfg.timeout)
	defer cancel()
	what := "GET " + clipTo(u.Redacted(), 200)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, errorf(KindUnsupported, "web", err, "%s: %v", what, err)
	}
	hreq.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9")
	hreq.Header.Set("User-Agent", w.cfg.userAgent)
	resp, err := w.client.Do(hreq)
	if err != nil {
		return nil, classify(ctx, err, "web", what, limit)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusGone:
		return nil, errorf(KindNotFound, "web", nil, "%s: status %s: the page does not exist", what, resp.Status)
	default:
		return nil, errorf(KindBadStatus, "web", nil, "%s: status %s, want 200", what, resp.Status)
	}
	ct := resp.Header.Get("Content-Type")
	if ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "text/html" && mt != "application/xhtml+xml") {
			return nil, errorf(KindBadBody, "web", err, "%s: content type %q is not an HTML page", what, clip(ct))
		}
	}
	data, tooLarge, err := readLimited(resp, w.cfg.maxBytes)
	if err != nil {
		return nil, classify(ctx, err, "web", what, limit)
	}
	if tooLarge {
		return nil, errorf(KindTooLarge, "web", nil, "%s: the page is larger than %d bytes", what, w.cfg.maxBytes)
	}
	ev, err := ParsePage(data, ct, resp.Request.URL.String())
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Extractor = "web"
			e.Reason = what + ": " + e.Reason
		}
		return nil, err
	}
	return ev, nil
}
