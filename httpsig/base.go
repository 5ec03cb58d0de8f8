package httpsig

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dunglas/httpsfv"
)

// derived lists the derived components (RFC 9421 section 2.2) this package computes
// for a request. @status is for responses, and @query-param needs a parameter, so
// both are refused.
var derived = map[string]bool{
	"@method":         true,
	"@authority":      true,
	"@path":           true,
	"@query":          true,
	"@target-uri":     true,
	"@scheme":         true,
	"@request-target": true,
}

// scheme is the request's scheme: the URL's when it has one (a request being sent),
// else what the connection says (a request being served). Behind a proxy that ends
// TLS this says "http"; it matters only to @scheme, @target-uri and the default port
// @authority drops.
func scheme(r *http.Request) string {
	if r.URL != nil && r.URL.Scheme != "" {
		return strings.ToLower(r.URL.Scheme)
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// authority is @authority (RFC 9421 section 2.2.3): the host the request was sent
// to, lower-cased, without the scheme's default port, so that "Example.COM:443" and
// "example.com" sign alike over https.
func authority(r *http.Request) string {
	host := r.Host
	if host == "" && r.URL != nil {
		host = r.URL.Host
	}
	host = strings.ToLower(host)
	switch scheme(r) {
	case "http":
		host = strings.TrimSuffix(host, ":80")
	case "https":
		host = strings.TrimSuffix(host, ":443")
	}
	return host
}

// componentValue is the value of one covered component of r, derived or header,
// as RFC 9421 section 2 canonicalizes it. name is known to be lower case and, if
// derived, one of derived.
func componentValue(r *http.Request, label, name string) (string, *Error) {
	switch name {
	case "@method":
		// As sent: RFC 9421 section 2.2.1 does not change the case of a method.
		return r.Method, nil
	case "@authority":
		return authority(r), nil
	case "@path":
		if p := r.URL.EscapedPath(); p != "" {
			return p, nil
		}
		return "/", nil
	case "@query":
		return "?" + r.URL.RawQuery, nil
	case "@scheme":
		return scheme(r), nil
	case "@request-target":
		if r.RequestURI != "" {
			return r.RequestURI, nil
		}
		return r.URL.RequestURI(), nil
	case "@target-uri":
		t := scheme(r) + "://" + authority(r) + r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			t += "?" + r.URL.RawQuery
		}
		return t, nil
	}
	values := r.Header.Values(name)
	if len(values) == 0 && name == "host" && r.Host != "" {
		// A server moves Host out of the header into r.Host.
		values = []string{r.Host}
	}
	if len(values) == 0 {
		return "", refuse(MissingComponent, "signature %q covers %q but the request has no %s header", label, name, name)
	}
	// RFC 9421 section 2.1: each field line's value trimmed, joined with ", ".
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.Trim(v, " \t"))
	}
	return b.String(), nil
}

// buildBase is the signature base (RFC 9421 section 2.5) of r for the signature
// label covering the components names, ending with the "@signature-params" line whose value is params,
// the text of the Signature-Input member. Signer and verifier both build it here, so
// they cannot drift apart.
func buildBase(r *http.Request, label string, names []string, params string) ([]byte, *Error) {
	n := len(params) + 22
	values := make([]string, len(names))
	for i, name := range names {
		v, err := componentValue(r, label, name)
		if err != nil {
			return nil, err
		}
		// A line break inside a value would let one component pose as another in
		// the base; HTTP forbids them in values anyway.
		if strings.ContainsAny(v, "\r\n") {
			return nil, refuse(Malformed, "signature %q: the value of %q has a line break", label, name)
		}
		values[i] = v
		n += len(name) + len(v) + 5
	}
	b := make([]byte, 0, n)
	for i, name := range names {
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `": `...)
		b = append(b, values[i]...)
		b = append(b, '\n')
	}
	b = append(b, `"@signature-params": `...)
	b = append(b, params...)
	return b, nil
}

// BaseComponents reads a signature base back: the value of each covered component,
// by name (e.g. "@path" -> "/intents/…/proposal", "content-digest" -> "sha-256=:…:"),
// and the @signature-params value. An offline verifier uses it to check what a
// recorded base covered. It refuses a base whose lines do not match, name for name
// and in order, the components its @signature-params lists, so that a base cannot
// claim to cover what it does not.
func BaseComponents(base []byte) (components map[string]string, params string, err error) {
	lines := strings.Split(string(base), "\n")
	last := lines[len(lines)-1]
	const sp = `"@signature-params": `
	if !strings.HasPrefix(last, sp) {
		return nil, "", errors.New(`httpsig: the base does not end with a "@signature-params" line`)
	}
	params = last[len(sp):]
	list, perr := httpsfv.UnmarshalList([]string{params})
	if perr != nil {
		return nil, "", fmt.Errorf("httpsig: the @signature-params value is not an RFC 8941 inner list: %w", perr)
	}
	if len(list) != 1 {
		return nil, "", errors.New("httpsig: the @signature-params value is not one inner list")
	}
	il, ok := list[0].(httpsfv.InnerList)
	if !ok {
		return nil, "", errors.New("httpsig: the @signature-params value is not an inner list")
	}
	lines = lines[:len(lines)-1]
	if len(il.Items) != len(lines) {
		return nil, "", fmt.Errorf("httpsig: @signature-params lists %d components but the base has %d lines before it", len(il.Items), len(lines))
	}
	components = make(map[string]string, len(lines))
	for i, line := range lines {
		name, isString := il.Items[i].Value.(string)
		// A name with a quote or backslash would be written escaped in the base;
		// no component this package signs or checks has one.
		if !isString || len(il.Items[i].Params.Names()) > 0 || strings.ContainsAny(name, `"\`) {
			return nil, "", fmt.Errorf("httpsig: component %d of @signature-params is not a plain name", i+1)
		}
		prefix := `"` + name + `": `
		if !strings.HasPrefix(line, prefix) {
			return nil, "", fmt.Errorf("httpsig: line %d of the base is not the %q component that @signature-params lists there", i+1, name)
		}
		if _, dup := components[name]; dup {
			return nil, "", fmt.Errorf("httpsig: the base covers %q twice", name)
		}
		components[name] = line[len(prefix):]
	}
	return components, params, nil
}
