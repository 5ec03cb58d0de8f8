package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
	intenthttp "github.com/intentd/intentd/http"
)

// hostileCase is one malformed (or, marked stores, deliberately odd but valid) request
// and the answer docs/api.md, docs/authorship.md and docs/policy-language.md give for it.
type hostileCase struct {
	name   string
	method string
	path   string
	ctype  string // Content-Type; "" sends none
	body   []byte
	// header holds name, value pairs; an empty value is sent as an empty header.
	header []string
	// chunked sends the body without a Content-Length.
	chunked bool
	// raw, when set, is written as is on a new connection instead of the fields above;
	// halfClose then ends the client's side of the connection after it, so that the
	// server reads an end of input where the request says more is coming.
	raw       string
	halfClose bool

	status int
	code   string // the error code; "" for an answer that is not an error
	// protocol marks a request net/http itself refuses before any handler runs: its
	// answer is net/http's plain-text one, so only the status is checked.
	protocol bool
	// stores marks a request that is meant to change the store.
	stores bool
}

// hostileFixture is the state the cases are built against.
type hostileFixture struct {
	t       *testing.T
	s       *testServer
	client  *http.Client
	addr    string
	open    string // an open intent of the demo policy
	decided string // an intent that succeeded
	spare   string // a stored policy no intent names
	victim  string // an open intent that only refused proposals are sent to
	keys    []ed25519.PrivateKey
	passkey *crypto.SoftPasskey
}

const (
	hostileJSON      = "application/json"
	hostileText      = "text/plain"
	hostileAttrs     = `{"fields":{"size":{"String":"M"},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}}}`
	hostileNoPolicy  = "11111111111111111111111111111111" // Base58 of 32 zero bytes: well-formed, never stored
	hostileMaxBody   = intenthttp.DefaultMaxBodyBytes
	hostileUnknownID = "00000000-0000-4000-8000-000000000000"
)

// TestHostileInput sends malformed requests to every endpoint of a real server and
// checks that each gets its documented status and error code and leaves the store
// byte for byte as it was (by Store.Digest before and after each request), except the
// few that are meant to store.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	var args []string
	if testNATS != "" {
		// The NATS store's digest counts every record of its stream, the transparency
		// log's entry bundles among them, which the log writes on a timer of its own
		// after an outcome, not in step with any request. (Pebble's digest leaves them
		// out.) No case here reads the log.
		args = []string{"--tlog=false"}
	}
	s := startServer(t, args)
	f := newHostileFixture(t, s)
	cases := f.cases()
	if len(cases) < 150 {
		t.Fatalf("%d cases, want at least 150", len(cases))
	}
	t.Logf("%d cases", len(cases))
	names := map[string]bool{}
	for _, c := range cases {
		if names[c.name] {
			t.Fatalf("case name %q is used twice", c.name)
		}
		names[c.name] = true
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.check(t, c)
		})
	}
	t.Run("server healthy after", func(t *testing.T) {
		r := f.send(t, hostileCase{method: "GET", path: "/healthz"})
		if r.status != http.StatusOK {
			t.Fatalf("GET /healthz: %s", r)
		}
		if st := s.status(f.open); st["status"] != "open" {
			t.Fatalf("the open intent is %v after the hostile requests", st)
		}
		logs := s.logs.String()
		for _, bad := range []string{"panic", "internal error"} {
			if strings.Contains(logs, bad) {
				t.Fatalf("the server logged %q:\n%s", bad, logs)
			}
		}
	})
}

func newHostileFixture(t *testing.T, s *testServer) *hostileFixture {
	// A client of its own: raw control over headers and bodies, and no connection
	// shared with the other tests' client.
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	f := &hostileFixture{
		t:      t,
		s:      s,
		client: &http.Client{Transport: tr, Timeout: 30 * time.Second},
		addr:   strings.TrimPrefix(s.url, "http://"),
	}
	for range 4 {
		_, k, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		f.keys = append(f.keys, k)
	}
	pk, err := crypto.GenerateSoftPasskey("shop.example", "https://shop.example")
	if err != nil {
		t.Fatal(err)
	}
	f.passkey = pk
	f.open = s.submit()
	f.victim = s.submit()
	f.decided = s.submit()
	if r := s.propose(f.decided, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal: %s", r)
	}
	s.waitStatus(f.decided, "success")
	f.spare = s.putPolicy("name spare\nrequires { evidence.n == 1; }\n")
	return f
}

func (f *hostileFixture) digest(t *testing.T) [32]byte {
	t.Helper()
	d, err := f.s.m.digest()
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

// check sends one case and checks its answer and the store.
func (f *hostileFixture) check(t *testing.T, c hostileCase) {
	before := f.digest(t)
	r := f.send(t, c)
	after := f.digest(t)

	if r.status != c.status {
		t.Errorf("status %d, want %d: %s", r.status, c.status, hostileClip(r.body))
	}
	switch {
	case c.protocol:
		// net/http's own answer: plain text, not the service's error body.
	case c.code != "":
		code, msg := hostileErrorBody(r)
		if code != c.code {
			t.Errorf("code %q, want %q (message %q)", code, c.code, msg)
		}
		if r.status == http.StatusMethodNotAllowed && r.header.Get("Allow") == "" {
			t.Errorf("405 without Allow")
		}
	case r.status == http.StatusOK && c.method == "POST" && c.path != "/policies":
		if len(r.body) != 0 {
			t.Errorf("200 with a body %q, want none", hostileClip(r.body))
		}
	}
	switch {
	case c.stores && after == before:
		t.Errorf("the store is unchanged, but this request is meant to store")
	case !c.stores && after != before:
		t.Errorf("the store changed (digest %x -> %x)", before[:6], after[:6])
	}
}

// hostileErrorBody decodes an error answer, which must be JSON holding exactly a
// non-empty message and code.
func hostileErrorBody(r response) (code, message string) {
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		return fmt.Sprintf("<Content-Type %q>", ct), string(hostileClip(r.body))
	}
	var e map[string]string
	if err := json.Unmarshal(r.body, &e); err != nil || len(e) != 2 || e["message"] == "" || e["code"] == "" {
		return "<not {message, code}>", string(hostileClip(r.body))
	}
	return e["code"], e["message"]
}

func hostileClip(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) > 300 {
		return append(b[:300:300], "..."...)
	}
	return b
}

// send makes the request of c and reads the answer; an event stream's body is not
// read, since it does not end.
func (f *hostileFixture) send(t *testing.T, c hostileCase) response {
	t.Helper()
	if c.raw != "" {
		return f.sendRaw(t, c)
	}
	var body io.Reader
	if c.body != nil {
		if c.chunked {
			body = io.MultiReader(bytes.NewReader(c.body)) // hides the length
		} else {
			body = bytes.NewReader(c.body)
		}
	}
	req, err := http.NewRequest(c.method, f.s.url+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.ctype != "" {
		req.Header.Set("Content-Type", c.ctype)
	}
	for i := 0; i+1 < len(c.header); i += 2 {
		req.Header[http.CanonicalHeaderKey(c.header[i])] = append(req.Header[http.CanonicalHeaderKey(c.header[i])], c.header[i+1])
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return response{status: resp.StatusCode, header: resp.Header}
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", c.method, c.path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (f *hostileFixture) sendRaw(t *testing.T, c hostileCase) response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, c.raw); err != nil {
		t.Fatalf("writing the request: %v", err)
	}
	if c.halfClose {
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// intent is the JSON of an intent of the demo policy with the given id and attrs.
func (f *hostileFixture) intent(id, attrs string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"policy_id":%q,"attrs":%s}`, id, f.s.policy, attrs)
}

// edSig is the wire form of an Ed25519 signature by key over msg, whatever msg is.
func hostileEdSig(key ed25519.PrivateKey, msg []byte) string {
	return hostileEdSigRaw(key.Public().(ed25519.PublicKey), ed25519.Sign(key, msg))
}

func hostileEdSigRaw(pub, sig []byte) string {
	return fmt.Sprintf(`{"Ed25519":{"pub_key":%q,"signature":%q}}`, crypto.EncodeBase58(pub), crypto.EncodeBase58(sig))
}

// canon is the JCS form of an intent, or the intent itself when it has none, so that
// a case can still be built (it is refused before any signature is checked).
func hostileCanon(intent []byte) []byte {
	c, err := crypto.Canonicalize(intent)
	if err != nil {
		return intent
	}
	return c
}

// body is an AuthoredIntent with a raw authorship.
func hostileBody(intent []byte, authorship string) []byte {
	return fmt.Appendf(nil, `{"intent":%s,"authorship":%s}`, intent, authorship)
}

// signed is an AuthoredIntent signed by the fixture's first key over JCS(intent).
func (f *hostileFixture) signed(intent []byte) []byte {
	return hostileBody(intent, `{"Signed":`+hostileEdSig(f.keys[0], hostileCanon(intent))+`}`)
}

// signedAttrs is a new signed intent with the given attrs.
func (f *hostileFixture) signedAttrs(attrs string) []byte {
	return f.signed(f.intent(uuid.NewString(), attrs))
}

// multisig is a Signed Multisig authorship.
func hostileMultisig(signers []string, threshold string, sigs []string) string {
	return fmt.Sprintf(`{"Signed":{"Multisig":{"pub_key":{"signers":{%s},"threshold":%s},"signatures":[%s]}}}`,
		strings.Join(signers, ","), threshold, strings.Join(sigs, ","))
}

func hostileSigner(pub []byte, weight string) string {
	return fmt.Sprintf("%q:%s", crypto.EncodeBase58(pub), weight)
}

func hostilePub(k ed25519.PrivateKey) []byte { return k.Public().(ed25519.PublicKey) }

// passkeySig is the wire form of a passkey signature.
func hostilePasskeySig(t *testing.T, ps *crypto.PasskeySignature, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(crypto.Signature{Passkey: ps})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (f *hostileFixture) cases() []hostileCase {
	var cs []hostileCase
	for _, part := range [][]hostileCase{
		f.bodyCases(),
		f.intentCases(),
		f.attrsCases(),
		f.authorshipCases(),
		f.signatureCases(),
		f.multisigCases(),
		f.passkeyCases(),
		f.unicodeCases(),
		f.proposalCases(),
		f.policyCases(),
		f.compilerLimitCases(),
		f.readCases(),
		f.eventCases(),
		f.routeCases(),
		f.rawCases(),
	} {
		cs = append(cs, part...)
	}
	return cs
}

// postIntent is a case of POST /intents with a JSON body.
func hostilePost(name string, b []byte, status int, code string) hostileCase {
	return hostileCase{name: "intents/" + name, method: "POST", path: "/intents", ctype: hostileJSON, body: b, status: status, code: code}
}
