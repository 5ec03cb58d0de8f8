package evidence

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// evidenceService is a fake evidence service whose answer a test sets per path.
func evidenceService(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPExtractWireContract(t *testing.T) {
	var got map[string]any
	var gotPath, gotType, gotMethod string
	srv := evidenceService(t, func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotType, gotMethod = r.URL.Path, r.Header.Get("Content-Type"), r.Method
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &got); err != nil {
			t.Errorf("request body %s: %v", body, err)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"price_cents": 1999, "color": "navy", "in_stock": true, "tags": ["cotton"], "extra": null}`)
	})
	x := NewHTTP(srv.URL + "/") // a trailing slash on the base is ignored
	ev, err := x.Extract(context.Background(), Request{
		Solution:   "https://shop.example/products/tshirt-navy-m",
		Attributes: map[string]Attribute{"price_cents": {Type: TypeInteger}, "color": {Type: TypeString}},
		IntentID:   "5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e",
		PolicyID:   "8wBzcY1H7mZ",
		Extractor:  "http",
	})
	if err != nil {
		t.Fatal(err)
	}
	if gotMethod != http.MethodPost || gotPath != "/extract" || gotType != "application/json" {
		t.Errorf("request: %s %s (%s), want POST /extract (application/json)", gotMethod, gotPath, gotType)
	}
	wantBody := map[string]any{
		"solution":   "https://shop.example/products/tshirt-navy-m",
		"attributes": map[string]any{"price_cents": map[string]any{"type": "integer"}, "color": map[string]any{"type": "string"}},
		"intent_id":  "5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e",
		"policy_id":  "8wBzcY1H7mZ",
	}
	if !reflect.DeepEqual(got, wantBody) {
		t.Errorf("request body = %v, want %v", got, wantBody)
	}
	// The extractor returns what the service said; reducing it to the asked
	// fields and checking types is the router's.
	want := Evidence{"price_cents": n("1999"), "color": "navy", "in_stock": true, "tags": []any{"cotton"}, "extra": nil}
	if !reflect.DeepEqual(ev, want) {
		t.Errorf("evidence = %#v, want %#v", ev, want)
	}
}

func TestHTTPExtractNoAttributes(t *testing.T) {
	srv := evidenceService(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"attributes":{}`) {
			t.Errorf("body %s: want attributes as an empty object, never null", body)
		}
		io.WriteString(w, `{}`)
	})
	if _, err := NewHTTP(srv.URL).Extract(context.Background(), Request{Solution: "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPExtractFailures(t *testing.T) {
	other := evidenceService(t, func(w http.ResponseWriter, r *http.Request) {
		t.Error("the extractor followed a redirect to another host")
		io.WriteString(w, `{}`)
	})
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		opts     []Option
		wantKind Kind
		wantMsg  string
	}{
		{name: "not found", wantKind: KindNotFound, wantMsg: "does not know solution",
			handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }},
		{name: "server error", wantKind: KindBadStatus, wantMsg: "status 500 Internal Server Error, want 200",
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }},
		{name: "201 is not 200", wantKind: KindBadStatus, wantMsg: "status 201",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201); io.WriteString(w, `{}`) }},
		{name: "not JSON", wantKind: KindBadBody, wantMsg: "not JSON",
			handler: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>oops</html>") }},
		{name: "empty body", wantKind: KindBadBody, wantMsg: "not JSON",
			handler: func(w http.ResponseWriter, r *http.Request) {}},
		{name: "array", wantKind: KindBadBody, wantMsg: "want a JSON object, got an array",
			handler: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `[{"price_cents": 1}]`) }},
		{name: "duplicate name", wantKind: KindBadBody, wantMsg: `duplicate object member name "price_cents"`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"price_cents": 1999, "price_cents": 1}`)
			}},
		{name: "invalid UTF-8", wantKind: KindBadBody, wantMsg: `invalid UTF-8 within "/color"`,
			handler: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{\"color\": \"na\xffvy\"}") }},
		{name: "nested object", wantKind: KindBadBody, wantMsg: `field "offer": nested objects`,
			handler: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"offer": {"price": 1}}`) }},
		{name: "too large by Content-Length", wantKind: KindTooLarge, wantMsg: "larger than 64 bytes", opts: []Option{WithMaxBytes(64)},
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"description": "`+strings.Repeat("x", 100)+`"}`)
			}},
		{name: "too large, streamed", wantKind: KindTooLarge, opts: []Option{WithMaxBytes(1024)},
			handler: func(w http.ResponseWriter, r *http.Request) {
				for i := 0; i < 100; i++ {
					io.WriteString(w, strings.Repeat(" ", 100))
					w.(http.Flusher).Flush()
				}
			}},
		{name: "time-out before the headers", wantKind: KindTimeout, wantMsg: "no answer within the time limit (100ms)", opts: []Option{WithTimeout(100 * time.Millisecond)},
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // so the server notices the client leave
				select {
				case <-r.Context().Done():
				case <-time.After(3 * time.Second):
				}
			}},
		{name: "time-out in the body", wantKind: KindTimeout, opts: []Option{WithTimeout(100 * time.Millisecond)},
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				io.WriteString(w, `{"price_cents": `)
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-time.After(3 * time.Second):
				}
			}},
		{name: "redirect to another host", wantKind: KindRedirect, wantMsg: "another host",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/extract", http.StatusTemporaryRedirect)
			}},
		{name: "redirect loop", wantKind: KindRedirect, wantMsg: "more than 5 redirects",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/extract", http.StatusTemporaryRedirect)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := evidenceService(t, tt.handler)
			_, err := NewHTTP(srv.URL, tt.opts...).Extract(context.Background(), Request{Solution: "sku:TS-NAVY-M"})
			if KindOf(err) != tt.wantKind {
				t.Fatalf("err = %v (kind %q), want kind %q", err, KindOf(err), tt.wantKind)
			}
			if !strings.HasPrefix(err.Error(), "http: POST "+srv.URL+"/extract: ") || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want the endpoint and %q", err, tt.wantMsg)
			}
		})
	}
}

func TestHTTPRedirectSameHost(t *testing.T) {
	srv := evidenceService(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/extract" {
			http.Redirect(w, r, "/v2/extract", http.StatusPermanentRedirect)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !strings.Contains(string(body), `"solution":"sku:A"`) {
			t.Errorf("after the redirect: %s with body %s", r.Method, body)
		}
		io.WriteString(w, `{"in_stock": true}`)
	})
	ev, err := NewHTTP(srv.URL).Extract(context.Background(), Request{Solution: "sku:A"})
	if err != nil || ev["in_stock"] != true {
		t.Fatalf("Extract = %v, %v", ev, err)
	}
}

func TestHTTPUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	_, err := NewHTTP(url).Extract(context.Background(), Request{Solution: "sku:A"})
	if KindOf(err) != KindUnreachable {
		t.Fatalf("err = %v (kind %q), want unreachable", err, KindOf(err))
	}
	// The reason names the service and says what happened, without the socket's
	// addresses that the transport's message carries.
	if msg := err.Error(); !strings.HasSuffix(msg, url+"/extract: the connection was refused") || strings.Contains(msg, "dial") {
		t.Fatalf("reason %q, want the URL and \"the connection was refused\"", msg)
	}
}

// TestUnreachableReasons: a failed connection's reason says what happened and never
// shows what is the operator's alone (the resolver, the local address).
func TestUnreachableReasons(t *testing.T) {
	dial := func(err error) error {
		return &neturl.Error{Op: "Post", URL: "http://shop.example/extract", Err: &net.OpError{Op: "dial", Net: "tcp",
			Source: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 40000}, Addr: &net.TCPAddr{IP: net.IPv4(10, 9, 9, 9), Port: 80}, Err: err}}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"host not found", dial(&net.DNSError{Err: "no such host", Name: "shop.example", Server: "10.255.255.53:53", IsNotFound: true}), "the host shop.example was not found"},
		{"lookup timed out", dial(&net.DNSError{Err: "i/o timeout", Name: "shop.example", Server: "10.255.255.53:53", IsTimeout: true}), "looking up the host shop.example timed out"},
		{"lookup failed", dial(&net.DNSError{Err: "server misbehaving", Name: "shop.example", Server: "10.255.255.53:53"}), "the host shop.example could not be looked up"},
		{"refused", dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "the connection was refused"},
		{"reset", dial(os.NewSyscallError("read", syscall.ECONNRESET)), "the connection was reset"},
		{"no route", dial(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), "the host cannot be reached"},
		{"closed early", &neturl.Error{Op: "Post", URL: "http://shop.example/extract", Err: io.ErrUnexpectedEOF}, "the connection was closed before the answer was complete"},
		{"not TLS", dial(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), "the TLS handshake failed: the server does not speak TLS"},
		{"other", dial(errors.New("socket: too many open files")), "the connection failed (dial)"},
		{"a malformed answer", &neturl.Error{Op: "Post", URL: "http://shop.example/extract", Err: errors.New(`malformed HTTP response "x"`)}, `malformed HTTP response "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unreachable(tt.err)
			if got != tt.want {
				t.Fatalf("unreachable(%v) = %q, want %q", tt.err, got, tt.want)
			}
			for _, secret := range []string{"10.255.255.53", "10.1.2.3", "10.9.9.9"} {
				if strings.Contains(got, secret) {
					t.Fatalf("%q shows %s", got, secret)
				}
			}
		})
	}
}

func FuzzHTTPResponse(f *testing.F) {
	for _, s := range []string{
		`{"price_cents": 1999, "color": "navy", "in_stock": true, "tags": ["a", 1, null]}`,
		`{}`, `[]`, `null`, `{"a": {"b": 1}}`, `{"a": [[1]]}`, `{"a": 1} x`, `{"a": 1e999999}`,
		`{"a": "\ud800"}`, `{"a":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	attrs := map[string]Attribute{"a": {Type: TypeInteger}, "price_cents": {Type: TypeInteger}, "color": {Type: TypeString}, "tags": {Type: TypeAny}}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeHTTPResponse(data)
		if err != nil {
			return
		}
		if err := checkFlat(ev); err != nil {
			t.Fatalf("accepted a body that is not flat: %v", err)
		}
		out, err := Check(ev, attrs)
		if err != nil {
			if KindOf(err) != KindWrongType {
				t.Fatalf("Check failed with kind %q: %v", KindOf(err), err)
			}
			return
		}
		for k := range out {
			if _, asked := attrs[k]; !asked {
				t.Fatalf("Check kept unasked field %q", k)
			}
		}
		if v, ok := out["price_cents"]; ok {
			if _, err := v.(json.Number).Int64(); err != nil {
				t.Fatalf("an accepted integer is not an int64: %v", v)
			}
		}
	})
}
