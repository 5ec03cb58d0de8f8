package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/syncbuf"
)

// testCA is a CA made for a test, which issues the server's and the clients'
// certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
}

// newTestCA makes a CA named name and writes its certificate in dir.
func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, name+".pem")}
	writeFile(t, ca.file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	return ca
}

// leaf is what a certificate the CA issues says.
type leaf struct {
	cn  string
	ous []string
	// usage is the certificate's one extended key usage; 0: server authentication for
	// a certificate naming 127.0.0.1, else client authentication.
	usage    x509.ExtKeyUsage
	notAfter time.Time // zero: in a day
}

// issue makes a certificate and its key, as PEM.
func (ca *testCA) issue(t *testing.T, l leaf) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: l.cn, OrganizationalUnit: l.ous},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     l.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if l.usage != 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{l.usage}
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})
}

// serverLeaf is the server's certificate, named cn, for 127.0.0.1.
func (ca *testCA) serverLeaf(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})
}

// pair is a client certificate the CA issues, for tls.Config.Certificates.
func (ca *testCA) pair(t *testing.T, l leaf) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(ca.issue(t, l))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // the file may have been there
		t.Fatal(err)
	}
}

// tlsSetup is a CA, the server's certificate and key files it issued, and a spare CA
// that the server does not trust.
type tlsSetup struct {
	dir               string
	ca, other         *testCA
	certFile, keyFile string
}

func newTLSSetup(t *testing.T) *tlsSetup {
	t.Helper()
	dir := t.TempDir()
	ts := &tlsSetup{dir: dir, ca: newTestCA(t, dir, "ca"), other: newTestCA(t, dir, "other-ca"),
		certFile: filepath.Join(dir, "server.pem"), keyFile: filepath.Join(dir, "server.key")}
	ts.writeServer(t, "server-1")
	return ts
}

// writeServer writes a new server certificate named cn, and its key.
func (ts *tlsSetup) writeServer(t *testing.T, cn string) {
	t.Helper()
	c, k := ts.ca.serverLeaf(t, cn)
	writeFile(t, ts.certFile, c, 0o644)
	writeFile(t, ts.keyFile, k, 0o600)
}

// args are the server's TLS flags.
func (ts *tlsSetup) args(more ...string) []string {
	return append([]string{"--tls-cert", ts.certFile, "--tls-key", ts.keyFile}, more...)
}

// client is an HTTP client that trusts the CA, offers h2 and presents the first of
// certs, if any. It presents it whichever CAs the server names as the ones it takes
// (a Go client that holds none of theirs sends none), as a client that does not look
// does.
func (ts *tlsSetup) client(certs ...tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(ts.ca.cert)
	c := &tls.Config{RootCAs: pool}
	if len(certs) > 0 {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: c, ForceAttemptHTTP2: true}}
}

// servedName dials the server and returns the common name of the certificate it
// presents.
func (ts *tlsSetup) servedName(t *testing.T, url string) string {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ts.ca.cert)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", url, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLSServes checks the API over TLS: the URL is https, every route answers, the
// health checks and metrics included, a client that offers HTTP/2 gets it and one that
// does not gets HTTP/1.1, the event stream beats and delivers an outcome over HTTP/2
// after an idle spell past the server's time-outs, and a plain HTTP request to the port
// is refused.
func TestTLSServes(t *testing.T) {
	t.Parallel()
	ts := newTLSSetup(t)
	hc := ts.client()
	s := startServerClient(t, t.TempDir(), hc, ts.args(), func(m *Main) {
		// The event stream must outlive both time-outs over HTTP/2 as over HTTP/1.1.
		m.HTTP.Heartbeat = 50 * time.Millisecond
		m.HTTP.ReadTimeout = time.Second
		m.HTTP.WriteTimeout = time.Second
	})
	if !strings.HasPrefix(s.url, "https://127.0.0.1:") {
		t.Fatalf("URL() = %s, want https://127.0.0.1:PORT", s.url)
	}

	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/info", "/openapi.json"} {
		t.Run(path, func(t *testing.T) {
			resp, err := hc.Get(s.url + path)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
				t.Fatalf("GET %s: %d over %s, want 200 over HTTP/2.0", path, resp.StatusCode, resp.Proto)
			}
		})
	}

	t.Run("HTTP/1.1 client", func(t *testing.T) {
		pool := x509.NewCertPool()
		pool.AddCert(ts.ca.cert)
		h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}}}
		resp, err := h1.Get(s.url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 {
			t.Fatalf("GET /healthz: %d over %s, want 200 over HTTP/1.1", resp.StatusCode, resp.Proto)
		}
	})

	t.Run("events over HTTP/2", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		st := s.openStream(ctx, "")
		if st.resp.ProtoMajor != 2 {
			t.Fatalf("GET /events over %s, want HTTP/2.0", st.resp.Proto)
		}
		time.Sleep(2500 * time.Millisecond) // idle past both time-outs
		id := s.submit()
		if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
			t.Fatalf("propose: %s", r)
		}
		ev, err := st.next()
		if err != nil {
			t.Fatal(err)
		}
		if o := decodeOutcome(t, ev); o.IntentID != id || o.Type != "success" {
			t.Fatalf("event %+v, want success of %s", o, id)
		}
		beats := 0
		for _, c := range st.comments {
			if c == "heartbeat" {
				beats++
			}
		}
		if beats < 10 {
			t.Fatalf("%d heartbeats in 2.5s at a 50ms interval; comments %q", beats, st.comments)
		}
	})

	t.Run("plain HTTP refused", func(t *testing.T) {
		resp, err := http.Get("http://" + strings.TrimPrefix(s.url, "https://") + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the TLS port: %d, want 400", resp.StatusCode)
		}
	})

	t.Run("untrusted by default", func(t *testing.T) {
		_, err := http.Get(s.url + "/healthz")
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("GET without the CA: %v, want a certificate error", err)
		}
	})
}

// TestTLSReload checks that the certificate is read again on SIGHUP (Reload, which
// main calls on the signal) and when the files change, and that a new pair that
// cannot be used leaves the one in use served, with the error logged.
func TestTLSReload(t *testing.T) {
	t.Parallel()
	t.Run("SIGHUP", func(t *testing.T) {
		t.Parallel()
		ts := newTLSSetup(t)
		// No watch in this test: only Reload reads the files.
		s := startServerClient(t, t.TempDir(), ts.client(), ts.args(), func(m *Main) { m.tlsWatchEvery = time.Hour })
		if got := ts.servedName(t, s.url); got != "server-1" {
			t.Fatalf("served %q, want server-1", got)
		}
		ts.writeServer(t, "server-2")
		if got := ts.servedName(t, s.url); got != "server-1" {
			t.Fatalf("before the reload: served %q, want server-1", got)
		}
		s.m.Reload()
		if got := ts.servedName(t, s.url); got != "server-2" {
			t.Fatalf("after the reload: served %q, want server-2", got)
		}
		if !strings.Contains(s.logs.String(), "TLS files read again") {
			t.Errorf("no log of the reload:\n%s", s.logs)
		}

		// A key of another certificate: refused, server-2 stays.
		_, otherKey := ts.ca.serverLeaf(t, "server-3")
		writeFile(t, ts.keyFile, otherKey, 0o600)
		s.m.Reload()
		if got := ts.servedName(t, s.url); got != "server-2" {
			t.Fatalf("after a bad reload: served %q, want server-2", got)
		}
		if !strings.Contains(s.logs.String(), "TLS reload failed; the certificate in use stays") {
			t.Errorf("no log of the failed reload:\n%s", s.logs)
		}
		// The requests go on.
		if r := s.do("GET", "/info", "", nil); r.status != http.StatusOK {
			t.Fatalf("GET /info after a bad reload: %s", r)
		}
	})

	t.Run("file change", func(t *testing.T) {
		t.Parallel()
		ts := newTLSSetup(t)
		s := startServerClient(t, t.TempDir(), ts.client(), ts.args(), func(m *Main) { m.tlsWatchEvery = 10 * time.Millisecond })
		ts.writeServer(t, "server-2")
		waitServed(t, ts, s.url, "server-2")

		// A certificate that is not PEM: logged, server-2 stays until a good pair.
		writeFile(t, ts.certFile, []byte("not a certificate\n"), 0o644)
		waitLog(t, s, "TLS files changed but cannot be used")
		if got := ts.servedName(t, s.url); got != "server-2" {
			t.Fatalf("after a bad change: served %q, want server-2", got)
		}
		ts.writeServer(t, "server-3")
		waitServed(t, ts, s.url, "server-3")
	})
}

// TestTLSReloadSignal sends SIGHUP to intentd run as a process of its own, as
// systemctl reload does: a key of another certificate is refused with the reload's own
// log line, the pair in use still served, and a good pair is then served.
func TestTLSReloadSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds intentd and runs it as a process (-short)")
	}
	t.Parallel()
	ts := newTLSSetup(t)
	cmd := exec.Command(intentdBinary(t), append(ts.args("--listen", "127.0.0.1:0", "--data", t.TempDir()), "--tlog=false")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	logs := &syncbuf.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("intentd's logs:\n%s", logs)
		}
	})
	listening := regexp.MustCompile(`msg=listening url=(https://127\.0\.0\.1:[0-9]+)`)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatal("intentd did not log that it listens within 30s")
		}
	}
	if got := ts.servedName(t, url); got != "server-1" {
		t.Fatalf("served %q, want server-1", got)
	}

	_, otherKey := ts.ca.serverLeaf(t, "server-2")
	writeFile(t, ts.keyFile, otherKey, 0o600)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "TLS reload failed"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no log of the refused reload after SIGHUP")
		}
	}
	if got := ts.servedName(t, url); got != "server-1" {
		t.Fatalf("after a refused reload: served %q, want server-1", got)
	}

	ts.writeServer(t, "server-3")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitServed(t, ts, url, "server-3")
}

// intentdBinary builds intentd in a folder of the test's, for a test that runs it as a
// process of its own to send it signals.
func intentdBinary(t *testing.T) string {
	t.Helper()
	return buildCommand(t, ".", "intentd")
}

// buildCommand builds the command of the package in dir into a folder of the test's.
func buildCommand(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", path, dir).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, out)
	}
	return path
}

// TestTLSIntentctl runs intentctl, built as users run it, against intentd over TLS:
// --ca trusts the server's CA, --cert and --cert-key present a client certificate, and
// the demo (policies, intents, the event stream over HTTP/2, proofs) runs through.
func TestTLSIntentctl(t *testing.T) {
	if testing.Short() {
		t.Skip("builds intentctl and runs it as a process (-short)")
	}
	t.Parallel()
	ts := newTLSSetup(t)
	all := ts.ca.pair(t, leaf{cn: "ops", ous: []string{"admin", "submit", "propose", "read", "metrics"}})
	s := startServerClient(t, t.TempDir(), ts.client(all), ts.args("--tls-client-ca", ts.ca.file))
	certPEM, keyPEM := ts.ca.issue(t, leaf{cn: "cli", ous: []string{"admin", "submit", "propose", "read"}})
	certFile, keyFile := filepath.Join(ts.dir, "cli.pem"), filepath.Join(ts.dir, "cli.key")
	writeFile(t, certFile, certPEM, 0o644)
	writeFile(t, keyFile, keyPEM, 0o600)
	intentctl := buildCommand(t, "../intentctl", "intentctl")

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		output string
	}{
		{"info", []string{"--ca", ts.ca.file, "--cert", certFile, "--cert-key", keyFile, "info"}, 0, "api version"},
		{"demo", []string{"--ca", ts.ca.file, "--cert", certFile, "--cert-key", keyFile, "demo"}, 0, "two proofs verified"},
		{"no certificate", []string{"--ca", ts.ca.file, "info"}, 1, "a client certificate signed by the CA this server trusts for callers is required"},
		{"no CA", []string{"info"}, 3, "certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(intentctl, append([]string{"--server", s.url}, tc.args...)...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.output) {
				t.Fatalf("intentctl %q: exit %d\n%s\nwant exit %d and %q", tc.args, code, out, tc.code, tc.output)
			}
		})
	}
}

// waitServed waits until the server presents the certificate named cn.
func waitServed(t *testing.T, ts *tlsSetup, url, cn string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for ts.servedName(t, url) != cn {
		if time.Now().After(deadline) {
			t.Fatalf("the server still presents %q, want %q", ts.servedName(t, url), cn)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLog waits until the server's logs hold msg.
func waitLog(t *testing.T, s *testServer, msg string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.logs.String(), msg) {
		if time.Now().After(deadline) {
			t.Fatalf("no log %q:\n%s", msg, s.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTLSClientCertificates checks the callers a client certificate authenticates,
// beside tokens: a certificate of the client CA has the roles of its OU values; one of
// another CA, or not meant for clients, is refused with 401 and why; a request with a
// token is judged by its token whatever certificate comes with it; and without one
// of the two, a caller is refused.
func TestTLSClientCertificates(t *testing.T) {
	t.Parallel()
	ts := newTLSSetup(t)
	all := ts.ca.pair(t, leaf{cn: "ops", ous: []string{"admin", "submit", "propose", "read", "metrics"}})
	s := startServerClient(t, t.TempDir(), ts.client(all), ts.args("--tokens", writeTokens(t), "--tls-client-ca", ts.ca.file))
	s.token = "" // the certificate alone stored the demo policy
	if !strings.Contains(s.logs.String(), "client_certificates=true") {
		t.Errorf("the listening line does not say client certificates are taken:\n%s", s.logs)
	}

	cert := func(l leaf, ca *testCA) []tls.Certificate {
		return []tls.Certificate{ca.pair(t, l)}
	}
	reader := cert(leaf{cn: "dashboard", ous: []string{"read", "Engineering"}}, ts.ca)
	tests := []struct {
		name         string
		certs        []tls.Certificate
		token        string
		method, path string
		want         int
		msg          string // in the error's message
	}{
		{"read role reads", reader, "", "GET", "/info", 200, ""},
		{"read role may not write", reader, "", "POST", "/policies", 403, "which this client certificate (its roles are its subject's OU values) does not have"},
		{"metrics role", cert(leaf{cn: "prometheus", ous: []string{"metrics"}}, ts.ca), "", "GET", "/metrics", 200, ""},
		{"no role OU", cert(leaf{cn: "nobody", ous: []string{"Engineering"}}, ts.ca), "", "GET", "/info", 403, "needs the role read"},
		{"another CA", cert(leaf{cn: "stranger", ous: []string{"read"}}, ts.other), "", "GET", "/info", 401, "it is not signed by a trusted CA"},
		{"not for clients", cert(leaf{cn: "server", ous: []string{"read"}, usage: x509.ExtKeyUsageServerAuth}, ts.ca), "", "GET", "/info", 401, "it is not for client authentication"},
		{"expired", cert(leaf{cn: "old", ous: []string{"read"}, notAfter: time.Now().Add(-time.Minute)}, ts.ca), "", "GET", "/info", 401, "expired"},
		{"nothing", nil, "", "GET", "/info", 401, "a bearer token (Authorization: Bearer <token>) or a client certificate is required"},
		{"token alone", nil, readToken, "GET", "/info", 200, ""},
		{"token beside a refused certificate", cert(leaf{cn: "stranger", ous: []string{"read"}}, ts.other), readToken, "GET", "/info", 200, ""},
		{"token decides over a certificate", reader, metricsToken, "GET", "/info", 403, "which this token does not have"},
		{"health checks need nothing", cert(leaf{cn: "stranger"}, ts.other), "", "GET", "/healthz", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hc := ts.client(tc.certs...)
			defer hc.CloseIdleConnections()
			req, _ := http.NewRequest(tc.method, s.url+tc.path, strings.NewReader(demoPolicy))
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := response{status: resp.StatusCode, header: resp.Header, body: b}
			if r.status != tc.want {
				t.Fatalf("%s %s: %s, want %d", tc.method, tc.path, r, tc.want)
			}
			if tc.msg != "" {
				if _, msg := r.errorBody(t); !strings.Contains(msg, tc.msg) {
					t.Fatalf("message %q, want it to hold %q", msg, tc.msg)
				}
			}
		})
	}

	t.Run("caller in the request log", func(t *testing.T) {
		s.do("POST", "/policies/x", "", nil) // 405, logged at info
		waitLog(t, s, "caller=cert:ops")
	})

	t.Run("MCP tools take the certificate's roles", func(t *testing.T) {
		id := s.submit()
		if a := s.callTool("get_intent", fmt.Sprintf(`{"intent_id":%q}`, id)); a.isErr {
			t.Fatalf("get_intent with every role: %+v", a)
		}
		r := &testServer{t: t, url: s.url, client: ts.client(reader...)}
		if a := r.callTool("propose_solution", fmt.Sprintf(`{"intent_id":%q,"solution":%q}`, id, solutionPasses)); !a.isErr || a.code != "forbidden" {
			t.Fatalf("propose_solution with the read role: %+v, want forbidden", a)
		}
	})
}

// TestTLSClientCertificatesAlone checks a server with a client CA and no tokens: a
// caller needs a certificate, the health checks nothing, and GET /info says that
// callers are authenticated; a client CA read again reaches the connections made.
func TestTLSClientCertificatesAlone(t *testing.T) {
	t.Parallel()
	ts := newTLSSetup(t)
	all := ts.ca.pair(t, leaf{cn: "ops", ous: []string{"admin", "submit", "propose", "read", "metrics"}})
	s := startServerClient(t, t.TempDir(), ts.client(all), ts.args("--tls-client-ca", ts.ca.file))
	if r := s.do("GET", "/info", "", nil); r.status != 200 || !strings.Contains(string(r.body), `"auth_required":true`) {
		t.Fatalf("GET /info with a certificate: %s, want 200 with auth_required true", r)
	}
	anon := &testServer{t: t, url: s.url, client: ts.client()}
	for _, tc := range []struct {
		path, header string
		want         int
		msg          string
	}{
		{"/info", "", 401, "a client certificate signed by the CA this server trusts for callers is required"},
		{"/info", "Bearer " + helperToken, 401, "this server takes no bearer token"},
		{"/healthz", "", 200, ""},
		{"/readyz", "", 200, ""},
	} {
		r := anon.do("GET", tc.path, "", nil, "Authorization", tc.header)
		if r.status != tc.want {
			t.Fatalf("GET %s without a certificate (Authorization %q): %s, want %d", tc.path, tc.header, r, tc.want)
		}
		if tc.msg != "" {
			if _, msg := r.errorBody(t); !strings.Contains(msg, tc.msg) {
				t.Fatalf("message %q, want it to hold %q", msg, tc.msg)
			}
		}
	}

	// The client CA replaced by another: the next request on the connection already
	// made, whose certificate was accepted, is refused.
	ca, err := os.ReadFile(ts.other.file)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ts.ca.file, ca, 0o644)
	s.m.Reload()
	reused := false
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
	}), "GET", s.url+"/info", nil)
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !reused || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /info after the client CA was replaced: %d on a reused connection %v, want 401 on the connection already made", resp.StatusCode, reused)
	}
}

// TestTLSFlags checks what the TLS flags refuse: each alone where it needs another, and
// files that cannot be used, each with a message naming the flag at fault.
func TestTLSFlags(t *testing.T) {
	t.Parallel()
	ts := newTLSSetup(t)
	_, otherKey := ts.ca.serverLeaf(t, "other")
	mismatched := filepath.Join(ts.dir, "other.key")
	writeFile(t, mismatched, otherKey, 0o600)
	open := filepath.Join(ts.dir, "open.key")
	k, _ := os.ReadFile(ts.keyFile)
	writeFile(t, open, k, 0o644)
	notPEM := filepath.Join(ts.dir, "not.pem")
	writeFile(t, notPEM, []byte("hello\n"), 0o644)
	missing := filepath.Join(ts.dir, "missing.pem")

	t.Run("flags", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--tls-cert", ts.certFile}, "--tls-cert and --tls-key go together"},
			{[]string{"--tls-key", ts.keyFile}, "--tls-cert and --tls-key go together"},
			{[]string{"--tls-client-ca", ts.ca.file}, "--tls-client-ca needs TLS"},
		} {
			_, err := parseFlags(tc.args, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: %v, want an error holding %q", tc.args, err, tc.want)
			}
		}
		// The environment sets them as the flags do.
		m, err := parseFlags(nil, map[string]string{"INTENTD_TLS_CERT": ts.certFile, "INTENTD_TLS_KEY": ts.keyFile, "INTENTD_TLS_CLIENT_CA": ts.ca.file})
		if err != nil || m.Config.API.TLS.Cert != ts.certFile || m.Config.API.TLS.Key != ts.keyFile || m.Config.API.TLS.ClientCA != ts.ca.file {
			t.Errorf("from the environment: %+v, %v", m.Config.API.TLS, err)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"certificate missing", []string{"--tls-cert", missing, "--tls-key", ts.keyFile}, "--tls-cert: stat " + missing},
		{"key missing", []string{"--tls-cert", ts.certFile, "--tls-key", missing}, "--tls-key: stat " + missing},
		{"certificate not PEM", []string{"--tls-cert", notPEM, "--tls-key", ts.keyFile}, "--tls-cert " + notPEM + " and --tls-key"},
		{"key of another certificate", []string{"--tls-cert", ts.certFile, "--tls-key", mismatched}, "private key does not match public key"},
		{"key open to others", []string{"--tls-cert", ts.certFile, "--tls-key", open}, "mode 0644 lets group or others access it; run chmod 600"},
		{"client CA missing", ts.args("--tls-client-ca", missing), "--tls-client-ca: stat " + missing},
		{"client CA not PEM", ts.args("--tls-client-ca", notPEM), "--tls-client-ca " + notPEM + ": no PEM certificate in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := runRefused(t, append([]string{"--listen", "127.0.0.1:0", "--data", dir}, tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want an error holding %q", err, tc.want)
			}
			// Refused before the data folder was made.
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("the refused start left %d files in the data folder", len(entries))
			}
		})
	}
}
