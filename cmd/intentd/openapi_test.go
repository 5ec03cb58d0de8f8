package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	intenthttp "github.com/intentd/intentd/http"
)

// apiCheck validates every answer that a test server gives to http.DefaultClient
// against the OpenAPI document, so that the document cannot drift from what the
// server does: a status, a header or a body the document does not allow fails the test
// that made the request.
var apiCheck = installOpenAPIValidator()

// installOpenAPIValidator puts the validator under http.DefaultClient, which the test
// helpers and client.Client use. It runs at package initialization, so that every
// test has it without a TestMain.
func installOpenAPIValidator() *openAPIValidator {
	v, err := newOpenAPIValidator(intenthttp.OpenAPI, http.DefaultTransport)
	if err != nil {
		panic("openapi.json: " + err.Error())
	}
	http.DefaultClient.Transport = v
	return v
}

// openAPIValidator is an http.RoundTripper that checks the answers of the servers
// registered with it.
type openAPIValidator struct {
	next      http.RoundTripper
	doc       *openapi3.T
	router    routers.Router
	validated atomic.Int64

	mu      sync.Mutex
	servers map[string]*testing.T // by host:port
}

func newOpenAPIValidator(spec []byte, next http.RoundTripper) (*openAPIValidator, error) {
	doc, err := openapi3.NewLoader().LoadFromData(spec)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	// A backup (POST /admin/backup) is a gzip file, checked as bytes.
	openapi3filter.RegisterBodyDecoder("application/gzip", openapi3filter.FileBodyDecoder)
	// The test servers listen on free ports, not on the document's server address.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &openAPIValidator{next: next, doc: doc, router: router, servers: map[string]*testing.T{}}, nil
}

// watch validates the answers of the server at baseURL until the test ends; a
// validation failure fails t.
func (v *openAPIValidator) watch(t *testing.T, baseURL string) {
	host := strings.TrimPrefix(baseURL, "http://")
	v.mu.Lock()
	v.servers[host] = t
	v.mu.Unlock()
	t.Cleanup(func() {
		v.mu.Lock()
		// A server of a test running beside this one may have its port by now.
		if v.servers[host] == t {
			delete(v.servers, host)
		}
		v.mu.Unlock()
	})
}

func (v *openAPIValidator) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := v.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	v.mu.Lock()
	t := v.servers[req.URL.Host]
	v.mu.Unlock()
	if t == nil {
		return resp, nil
	}
	if err := v.check(req, resp); err != nil {
		t.Errorf("OpenAPI: %s %s answered %d, which the document does not allow: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, err)
	}
	return resp, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport.
func (v *openAPIValidator) CloseIdleConnections() {
	if c, ok := v.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// check validates one answer. The body is read and put back for the caller, except an
// event stream's, which does not end: its status and headers are checked.
func (v *openAPIValidator) check(req *http.Request, resp *http.Response) error {
	v.validated.Add(1)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	stream := mt == "text/event-stream"
	var body []byte
	if !stream {
		var err error
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("reading the body: %w", err)
		}
	}
	route, params, err := v.router.FindRoute(tileRouted(req))
	if err != nil {
		return v.checkUnrouted(resp, body, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: stream, MultiError: true},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(req.Context(), in)
}

// tileRouted is req with the tile path of /log/tile/ as one path segment: OpenAPI has
// no path parameter that spans segments, so the document names the whole path after
// tile/ {tile_path}, and the router is given it with its slashes replaced.
func tileRouted(req *http.Request) *http.Request {
	rest, ok := strings.CutPrefix(req.URL.Path, "/log/tile/")
	if !ok {
		return req
	}
	r := req.Clone(req.Context())
	r.URL.Path = "/log/tile/" + strings.ReplaceAll(rest, "/", "|")
	r.URL.RawPath = ""
	return r
}

// checkUnrouted checks an answer to a request the document has no operation for: it
// must be the 404 of an unknown path or the 405 of an unserved method, as
// components/responses describe them.
func (v *openAPIValidator) checkUnrouted(resp *http.Response, body []byte, routeErr error) error {
	var name string
	switch {
	case resp.StatusCode == http.StatusNotFound:
		name = "NotFound"
	case resp.StatusCode == http.StatusUnauthorized:
		name = "Unauthorized"
		if resp.Header.Get("WWW-Authenticate") == "" {
			return errors.New("a 401 without WWW-Authenticate")
		}
	case resp.StatusCode == http.StatusMethodNotAllowed && errors.Is(routeErr, routers.ErrMethodNotAllowed):
		name = "MethodNotAllowed"
		if resp.Header.Get("Allow") == "" {
			return errors.New("a 405 without Allow")
		}
	default:
		return fmt.Errorf("no operation in the document (%v)", routeErr)
	}
	mt := v.doc.Components.Responses[name].Value.Content.Get("application/json")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("Content-Type %q, want application/json", ct)
	}
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		return err
	}
	return v.doc.ValidateSchemaJSON(mt.Schema.Value, value, openapi3.EnableJSONSchema2020())
}
