package http

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// AnyOrigin, as a CORS origin, lets pages of every origin call the routes that need no
// token: every route when the server has no tokens, the health checks when it has.
const AnyOrigin = "*"

// The CORS answers' fixed parts. Access-Control-Allow-Credentials is never sent: the
// API authenticates with a bearer token in Authorization, which a page sets itself and
// which the preflight lets through as a header; cookies and TLS client certificates
// are not used, so a page has no reason to send them and none is let through.
const (
	corsAllowHeaders  = "Authorization, Content-Type, Last-Event-ID"
	corsExposeHeaders = "Retry-After"
	// CORSMaxAge is how long, in seconds, a browser may reuse a preflight answer: the
	// most Chromium keeps one. A stale answer grants nothing, since every answer to the
	// request itself carries its own Access-Control-Allow-Origin.
	CORSMaxAge = 7200
)

// ParseCORSOrigin checks an origin pages may call the API from and returns it in the
// form browsers send in the Origin header: scheme://host[:port], in lower case, without
// the scheme's default port. AnyOrigin is returned as is. A path (even "/"), a query, a
// fragment, user information or a port out of range is refused: none appears in an
// Origin header, so such an entry would match nothing.
func ParseCORSOrigin(s string) (string, error) {
	if s == AnyOrigin {
		return s, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not an origin (want scheme://host[:port]): %v", s, err)
	}
	switch {
	case u.Scheme == "" || u.Opaque != "" || u.Host == "":
		return "", fmt.Errorf("%q is not an origin (want scheme://host[:port], such as https://shop.example)", s)
	case u.User != nil:
		return "", fmt.Errorf("origin %q has user information (want scheme://host[:port])", s)
	case u.Path != "" || u.RawPath != "":
		return "", fmt.Errorf("origin %q has a path (want scheme://host[:port], with no / after it)", s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return "", fmt.Errorf("origin %q has a query or a fragment (want scheme://host[:port])", s)
	case u.Hostname() == "":
		return "", fmt.Errorf("origin %q has no host (want scheme://host[:port])", s)
	case strings.Contains(u.Host, "*"):
		return "", fmt.Errorf("origin %q: a wildcard stands alone (*) or not at all; list each origin", s)
	}
	if strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("origin %q has an empty port", s)
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("origin %q: port %q is not from 1 to 65535", s, p)
		}
		// Browsers leave the scheme's default port out of the Origin they send.
		if !(scheme == "http" && n == 80) && !(scheme == "https" && n == 443) {
			host += ":" + strconv.Itoa(n)
		}
	}
	return scheme + "://" + host, nil
}

// corsOrigins are the origins whose pages may read the API's answers; the zero value
// is CORS off, under which no answer changes.
type corsOrigins struct {
	on     bool
	listed map[string]bool
	any    bool // AnyOrigin was given
}

// newCORSOrigins keeps the valid origins of list. Main refuses invalid ones before
// here; one that reaches this point anyway is left out, so that a mistake allows less
// rather than more.
func newCORSOrigins(list []string) (corsOrigins, []error) {
	c := corsOrigins{on: len(list) > 0, listed: map[string]bool{}}
	var errs []error
	for _, o := range list {
		o, err := ParseCORSOrigin(o)
		switch {
		case err != nil:
			errs = append(errs, err)
		case o == AnyOrigin:
			c.any = true
		default:
			c.listed[o] = true
		}
	}
	return c, errs
}

// allow is the Access-Control-Allow-Origin value for a request from origin to a route
// that needs a token (needsToken) or not, or "" for none. AnyOrigin covers only the
// routes without a token. Pages that carry tokens are the operator's own, whose origins
// can be named; a wildcard there would let the script of any site a visitor opens use a
// token it got hold of from inside the visitor's network, which may reach a service the
// site itself cannot. For the routes it covers the wildcard itself is answered, since
// the answer is the same for every origin.
func (c corsOrigins) allow(origin string, needsToken bool) string {
	switch {
	case !c.on || origin == "":
		return ""
	case c.any && !needsToken:
		return AnyOrigin
	case c.listed[origin]:
		return origin
	}
	return ""
}

// header adds the CORS headers of an answer to a request that is not a preflight.
// Vary: Origin goes on every answer once CORS is on, so that a cache does not hand one
// origin's answer, with or without Access-Control-Allow-Origin, to another.
func (c corsOrigins) header(h http.Header, r *http.Request, needsToken bool) {
	if !c.on {
		return
	}
	h.Add("Vary", "Origin")
	if v := c.allow(r.Header.Get("Origin"), needsToken); v != "" {
		h.Set("Access-Control-Allow-Origin", v)
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	}
}

// isPreflight reports whether r is a CORS preflight: browsers send one before a request
// that is not "simple", and never with credentials.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// preflight is the preflight of one route pattern.
type preflight struct {
	routes []*route
	// allow is the Allow header httprouter gives an OPTIONS request to the pattern.
	allow string
}

// methods lists the methods of the pattern a page of origin may call, comma-separated,
// and the Access-Control-Allow-Origin to answer; "" and "" when none.
func (p *preflight) methods(c corsOrigins, origin string, tokens bool) (methods, allowOrigin string) {
	var ms []string
	for _, rt := range p.routes {
		if v := c.allow(origin, tokens && rt.role != ""); v != "" {
			ms = append(ms, rt.method)
			// The listed origin rather than the wildcard when one route needs it: the
			// answer is one for all the pattern's methods.
			if allowOrigin == "" || v != AnyOrigin {
				allowOrigin = v
			}
		}
	}
	slices.Sort(ms)
	return strings.Join(ms, ", "), allowOrigin
}

// newPreflights groups the route table by pattern, in the table's order.
func newPreflights() (patterns []string, byPattern map[string]*preflight) {
	byPattern = map[string]*preflight{}
	for i := range routes {
		rt := &routes[i]
		p := byPattern[rt.pattern]
		if p == nil {
			p = &preflight{}
			byPattern[rt.pattern] = p
			patterns = append(patterns, rt.pattern)
		}
		p.routes = append(p.routes, rt)
	}
	for _, p := range byPattern {
		ms := []string{http.MethodOptions}
		for _, rt := range p.routes {
			ms = append(ms, rt.method)
		}
		// As httprouter writes it: sorted, comma and space.
		slices.Sort(ms)
		p.allow = strings.Join(ms, ", ")
	}
	return patterns, byPattern
}

// answer answers a preflight for the pattern: 204 with the methods, the headers and how
// long to keep the answer. The request's own Access-Control-Request-Method is not
// checked against the methods: a browser does that, and refuses to send a request the
// answer does not list.
func (p *preflight) answer(w http.ResponseWriter, methods, allowOrigin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", allowOrigin)
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", strconv.Itoa(CORSMaxAge))
	w.WriteHeader(http.StatusNoContent)
}
