package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/intentd/intentd/crypto"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/policy"
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

// bodyCases: what is wrong is the body as a whole, on every endpoint that takes one.
func (f *hostileFixture) bodyCases() []hostileCase {
	valid := f.signed(f.intent(uuid.NewString(), hostileAttrs))
	cs := []hostileCase{
		hostilePost("empty body", []byte{}, 400, "invalid_json"),
		hostilePost("whitespace only", []byte(" \n\t "), 400, "invalid_json"),
		hostilePost("not JSON", []byte(`intent=1&authorship=Unsigned`), 400, "invalid_json"),
		hostilePost("single quotes", []byte(`{'intent':{},'authorship':'Unsigned'}`), 400, "invalid_json"),
		hostilePost("trailing comma", []byte(`{"intent":{},"authorship":"Unsigned",}`), 400, "invalid_json"),
		hostilePost("comment", []byte(`{"intent":{} /* x */,"authorship":"Unsigned"}`), 400, "invalid_json"),
		hostilePost("two values", append(append([]byte{}, valid...), valid...), 400, "invalid_json"),
		hostilePost("trailing garbage", append(append([]byte{}, valid...), 'x'), 400, "invalid_json"),
		hostilePost("NaN", []byte(`{"intent":NaN,"authorship":"Unsigned"}`), 400, "invalid_json"),
		hostilePost("hex number", []byte(`{"intent":0x10,"authorship":"Unsigned"}`), 400, "invalid_json"),
		hostilePost("unescaped control byte", []byte("{\"intent\":{},\"authorship\":\"Uns\x01igned\"}"), 400, "invalid_json"),
		hostilePost("raw NUL byte", []byte("{\"intent\":{},\"authorship\":\"Unsigned\"}\x00"), 400, "invalid_json"),
		hostilePost("byte order mark", append([]byte("\xef\xbb\xbf"), valid...), 400, "invalid_json"),
		hostilePost("UTF-16 body", hostileUTF16(string(valid)), 400, "invalid_json"),
		hostilePost("bad escape", []byte(`{"intent":{},"authorship":"\x41"}`), 400, "invalid_json"),
		hostilePost("short unicode escape", []byte(`{"intent":{},"authorship":"\u12"}`), 400, "invalid_json"),
		hostilePost("nested 100000 arrays", []byte(strings.Repeat("[", 100000)+strings.Repeat("]", 100000)), 400, "invalid_json"),
		hostilePost("body is null", []byte(`null`), 422, "invalid_intent"),
		hostilePost("body is an array", []byte(`[{"intent":{},"authorship":"Unsigned"}]`), 422, "invalid_intent"),
		hostilePost("body is a string", []byte(`"Unsigned"`), 422, "invalid_intent"),
		hostilePost("body is a number", []byte(`1e999`), 422, "invalid_intent"),
		hostilePost("body is true", []byte(`true`), 422, "invalid_intent"),
		hostilePost("over the body limit", hostilePad(valid, hostileMaxBody+1), 413, "body_too_large"),
		{name: "intents/over the body limit, chunked", method: "POST", path: "/intents", ctype: hostileJSON, body: hostilePad(valid, hostileMaxBody+1), chunked: true, status: 413, code: "body_too_large"},
		// Every prefix of a valid body is refused as not JSON, never half stored.
	}
	for _, n := range []int{1, 2, 10, len(valid) / 4, len(valid) / 2, len(valid) - 2, len(valid) - 1} {
		cs = append(cs, hostilePost(fmt.Sprintf("truncated to %d bytes", n), valid[:n], 400, "invalid_json"))
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/jsonx", "application/json-patch+json",
		"application/json; charset=latin1", "application/json; charset=utf-16", "application/json; charset", "json", "*/*", "application/"} {
		c := hostilePost("content type "+ct, valid, 400, "unsupported_content_type")
		c.ctype = ct
		cs = append(cs, c)
	}
	cs = append(cs, hostileCase{name: "intents/no content type", method: "POST", path: "/intents", body: valid, status: 400, code: "unsupported_content_type"})
	return cs
}

// padJSON pads a JSON body with spaces to n bytes: still valid, only too long.
func hostilePad(b []byte, n int) []byte {
	return append(bytes.Repeat([]byte{' '}, n-len(b)), b...)
}

func hostileUTF16(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return b
}

// intentCases: the AuthoredIntent and intent objects, field by field.
func (f *hostileFixture) intentCases() []hostileCase {
	id := uuid.NewString()
	in := f.intent(id, hostileAttrs)
	sig := `{"Signed":` + hostileEdSig(f.keys[0], hostileCanon(in)) + `}`
	withIntent := func(intent string) []byte { return hostileBody([]byte(intent), sig) }
	pid := f.s.policy
	return []hostileCase{
		hostilePost("empty object", []byte(`{}`), 422, "invalid_intent"),
		hostilePost("missing intent", []byte(`{"authorship":`+sig+`}`), 422, "invalid_intent"),
		hostilePost("missing authorship", []byte(`{"intent":`+string(in)+`}`), 422, "malformed_authorship"),
		hostilePost("unknown member", []byte(`{"intent":`+string(in)+`,"authorship":`+sig+`,"ttl":5}`), 422, "invalid_intent"),
		hostilePost("duplicate intent", []byte(`{"intent":`+string(in)+`,"intent":`+string(in)+`,"authorship":`+sig+`}`), 422, "invalid_intent"),
		hostilePost("duplicate through an escape", []byte(`{"intent":`+string(in)+`,"\u0069ntent":`+string(in)+`,"authorship":`+sig+`}`), 422, "invalid_intent"),
		hostilePost("intent null", withIntent(`null`), 422, "invalid_intent"),
		hostilePost("intent array", withIntent(`[]`), 422, "invalid_intent"),
		hostilePost("intent string", withIntent(`"`+id+`"`), 422, "invalid_intent"),
		hostilePost("intent empty object", withIntent(`{}`), 422, "invalid_intent"),
		hostilePost("intent unknown field", withIntent(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s,"expires":1}`, id, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("intent duplicate id", withIntent(fmt.Sprintf(`{"id":%q,"id":%q,"policy_id":%q,"attrs":%s}`, id, uuid.NewString(), pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id missing", withIntent(fmt.Sprintf(`{"policy_id":%q,"attrs":%s}`, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id null", withIntent(fmt.Sprintf(`{"id":null,"policy_id":%q,"attrs":%s}`, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id number", withIntent(fmt.Sprintf(`{"id":12345,"policy_id":%q,"attrs":%s}`, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id object", withIntent(fmt.Sprintf(`{"id":{"uuid":%q},"policy_id":%q,"attrs":%s}`, id, pid, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id not a UUID", f.signed(f.intent("not-a-uuid", hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id empty", f.signed(f.intent("", hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id without hyphens", f.signed(f.intent(strings.ReplaceAll(uuid.NewString(), "-", ""), hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id in braces", f.signed(f.intent("{"+uuid.NewString()+"}", hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id as URN", f.signed(f.intent("urn:uuid:"+uuid.NewString(), hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id one short", f.signed(f.intent(uuid.NewString()[:35], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id with a trailing space", f.signed(f.intent(uuid.NewString()+" ", hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id with a non-hex digit", f.signed(f.intent("g"+uuid.NewString()[1:], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id with fullwidth digits", f.signed(f.intent("０"+uuid.NewString()[3:], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("id with NUL", f.signed(f.intent(`\u0000`+uuid.NewString()[1:], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("policy_id missing", withIntent(fmt.Sprintf(`{"id":%q,"attrs":%s}`, id, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("policy_id number", withIntent(fmt.Sprintf(`{"id":%q,"policy_id":1,"attrs":%s}`, id, hostileAttrs)), 422, "invalid_intent"),
		hostilePost("policy_id bad Base58", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":"0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl","attrs":%s}`, uuid.NewString(), hostileAttrs))), 422, "invalid_intent"),
		hostilePost("policy_id 31 bytes", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s}`, uuid.NewString(), crypto.EncodeBase58(bytes.Repeat([]byte{7}, 31)), hostileAttrs))), 422, "invalid_intent"),
		hostilePost("policy_id 33 bytes", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s}`, uuid.NewString(), "1"+pid, hostileAttrs))), 422, "invalid_intent"),
		hostilePost("policy_id hex", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s}`, uuid.NewString(), strings.Repeat("ab", 32), hostileAttrs))), 422, "invalid_intent"),
		hostilePost("policy_id unknown", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":%s}`, uuid.NewString(), hostileNoPolicy, hostileAttrs))), 400, "policy_not_found"),
		hostilePost("attrs null", withIntent(fmt.Sprintf(`{"id":%q,"policy_id":%q,"attrs":null}`, id, pid)), 422, "invalid_intent"),
		hostilePost("id taken", f.signed(f.intent(f.open, hostileAttrs)), 409, "intent_exists"),
		hostilePost("id taken in upper case", f.signed(f.intent(strings.ToUpper(f.open), hostileAttrs)), 409, "intent_exists"),
		hostilePost("id of a decided intent", f.signed(f.intent(f.decided, hostileAttrs)), 409, "intent_exists"),
		hostilePost("unsigned not permitted", hostileBody(f.intent(uuid.NewString(), hostileAttrs), `"Unsigned"`), 400, "unsigned_not_permitted"),
		// Superseded shapes of spec part 9.
		hostilePost("superseded intent and signature", []byte(`{"intent":`+string(in)+`,"signature":`+hostileEdSig(f.keys[0], hostileCanon(in))+`}`), 422, "superseded_shape"),
		hostilePost("superseded payload and signature", []byte(fmt.Sprintf(`{"payload":{"id":%q,"template_id":%q},"signature":%s}`, id, pid, hostileEdSig(f.keys[0], []byte("x")))), 422, "superseded_shape"),
		hostilePost("superseded payload alone", []byte(fmt.Sprintf(`{"payload":{"id":%q,"template_id":%q}}`, id, pid)), 422, "superseded_shape"),
		hostilePost("superseded template_id", withIntent(fmt.Sprintf(`{"id":%q,"template_id":%q,"attrs":%s}`, id, pid, hostileAttrs)), 422, "superseded_shape"),
		hostilePost("superseded signature beside authorship", []byte(`{"intent":`+string(in)+`,"authorship":`+sig+`,"signature":`+hostileEdSig(f.keys[0], hostileCanon(in))+`}`), 422, "superseded_shape"),
	}
}

// attrsCases: the attribute values, their types and limits.
func (f *hostileFixture) attrsCases() []hostileCase {
	attrs := func(size, colors, price string) string {
		return fmt.Sprintf(`{"fields":{"size":%s,"colors":%s,"max_price_cents":%s}}`, size, colors, price)
	}
	const size, colors, price = `{"String":"M"}`, `{"Set":{"String":["navy","white"]}}`, `{"Int":3000}`
	withPrice := func(p string) []byte { return f.signedAttrs(attrs(size, colors, p)) }
	withSize := func(sz string) []byte { return f.signedAttrs(attrs(sz, colors, price)) }
	withColors := func(c string) []byte { return f.signedAttrs(attrs(size, c, price)) }
	manyFields := make([]string, 0, 129)
	for i := range 129 {
		manyFields = append(manyFields, fmt.Sprintf(`"f%d":{"Int":%d}`, i, i))
	}
	bigSet := make([]string, 1025)
	for i := range bigSet {
		bigSet[i] = fmt.Sprintf(`"c%d"`, i)
	}
	return []hostileCase{
		hostilePost("attrs not an object", f.signedAttrs(`"size=M"`), 422, "invalid_intent"),
		hostilePost("attrs without fields", f.signedAttrs(`{}`), 422, "invalid_intent"),
		hostilePost("attrs fields null", f.signedAttrs(`{"fields":null}`), 422, "invalid_intent"),
		hostilePost("attrs fields array", f.signedAttrs(`{"fields":[]}`), 422, "invalid_intent"),
		hostilePost("attrs unknown key", f.signedAttrs(`{"fields":{},"extra":{}}`), 422, "invalid_intent"),
		hostilePost("attrs duplicate field", f.signedAttrs(`{"fields":{"size":{"String":"M"},"size":{"String":"L"},"colors":`+colors+`,"max_price_cents":`+price+`}}`), 422, "invalid_intent"),
		hostilePost("Int as a string", withPrice(`{"Int":"3000"}`), 422, "invalid_intent"),
		hostilePost("Int with a fraction", withPrice(`{"Int":3000.5}`), 422, "invalid_intent"),
		hostilePost("Int written 3000.0", withPrice(`{"Int":3000.0}`), 422, "invalid_intent"),
		hostilePost("Int with an exponent", withPrice(`{"Int":3e3}`), 422, "invalid_intent"),
		hostilePost("Int 1e400", withPrice(`{"Int":1e400}`), 422, "invalid_intent"),
		hostilePost("Int above int64", withPrice(`{"Int":9223372036854775808}`), 422, "invalid_intent"),
		hostilePost("Int below int64", withPrice(`{"Int":-9223372036854775809}`), 422, "invalid_intent"),
		hostilePost("Int of 400 digits", withPrice(`{"Int":`+strings.Repeat("9", 400)+`}`), 422, "invalid_intent"),
		hostilePost("Int beyond 2^53", withPrice(`{"Int":9007199254740993}`), 422, "invalid_intent"),
		hostilePost("Int below -2^53", withPrice(`{"Int":-9007199254740993}`), 422, "invalid_intent"),
		hostilePost("Int null", withPrice(`{"Int":null}`), 422, "invalid_intent"),
		hostilePost("value with no variant", withPrice(`{}`), 422, "invalid_intent"),
		hostilePost("value with two variants", withPrice(`{"Int":1,"String":"1"}`), 422, "invalid_intent"),
		hostilePost("unknown variant Float", withPrice(`{"Float":30.5}`), 422, "invalid_intent"),
		hostilePost("variant in lower case", withPrice(`{"int":3000}`), 422, "invalid_intent"),
		hostilePost("bare value", withPrice(`3000`), 422, "invalid_intent"),
		hostilePost("String as a number", withSize(`{"String":5}`), 422, "invalid_intent"),
		hostilePost("Set of mixed elements", withColors(`{"Set":{"String":["navy",1]}}`), 422, "invalid_intent"),
		hostilePost("Set of Bool", withColors(`{"Set":{"Bool":[true]}}`), 422, "invalid_intent"),
		hostilePost("Set of Sets", withColors(`{"Set":{"Set":[{"String":["a"]}]}}`), 422, "invalid_intent"),
		hostilePost("Set not an array", withColors(`{"Set":{"String":"navy"}}`), 422, "invalid_intent"),
		hostilePost("Set with two element types", withColors(`{"Set":{"String":["a"],"Int":[1]}}`), 422, "invalid_intent"),
		hostilePost("Set nested 5000 deep", withColors(strings.Repeat(`{"Set":`, 5000)+`1`+strings.Repeat(`}`, 5000)), 422, "invalid_intent"),
		hostilePost("parameter missing", f.signedAttrs(`{"fields":{"size":`+size+`,"colors":`+colors+`}}`), 422, "attrs_mismatch"),
		hostilePost("parameter of the wrong type", withSize(`{"Int":5}`), 422, "attrs_mismatch"),
		hostilePost("set parameter given a string", withColors(`{"String":"navy"}`), 422, "attrs_mismatch"),
		hostilePost("set of the wrong element type", withColors(`{"Set":{"Int":[1,2]}}`), 422, "attrs_mismatch"),
		hostilePost("undeclared parameter", f.signedAttrs(`{"fields":{"size":`+size+`,"colors":`+colors+`,"max_price_cents":`+price+`,"discount":{"Int":5}}}`), 422, "attrs_mismatch"),
		hostilePost("parameter named with NUL", f.signedAttrs(`{"fields":{"size":`+size+`,"colors":`+colors+`,"max_price_cents":`+price+`,"\u0000":{"Int":5}}}`), 422, "attrs_mismatch"),
		hostilePost("attrs left out", f.signed([]byte(fmt.Sprintf(`{"id":%q,"policy_id":%q}`, uuid.NewString(), f.s.policy))), 422, "attrs_mismatch"),
		hostilePost("129 attrs fields", f.signedAttrs(`{"fields":{`+strings.Join(manyFields, ",")+`}}`), 422, intenthttp.CodeLimitExceeded),
		hostilePost("set of 1025 elements", withColors(`{"Set":{"String":[`+strings.Join(bigSet, ",")+`]}}`), 422, intenthttp.CodeLimitExceeded),
		hostilePost("string of 4097 bytes", withSize(`{"String":"`+strings.Repeat("M", 4097)+`"}`), 422, intenthttp.CodeLimitExceeded),
		hostilePost("set element of 4097 bytes", withColors(`{"Set":{"String":["`+strings.Repeat("n", 4097)+`"]}}`), 422, intenthttp.CodeLimitExceeded),
	}
}

// authorshipCases: the authorship's shape and its Base58 fields.
func (f *hostileFixture) authorshipCases() []hostileCase {
	in := f.intent(uuid.NewString(), hostileAttrs)
	c := hostileCanon(in)
	pub := crypto.EncodeBase58(hostilePub(f.keys[0]))
	sig := crypto.EncodeBase58(ed25519.Sign(f.keys[0], c))
	with := func(auth string) []byte { return hostileBody(in, auth) }
	ed := func(pubKey, signature string) []byte {
		return with(fmt.Sprintf(`{"Signed":{"Ed25519":{"pub_key":%s,"signature":%s}}}`, pubKey, signature))
	}
	q := func(s string) string { return `"` + s + `"` }
	b58 := func(n int) string { return q(crypto.EncodeBase58(bytes.Repeat([]byte{9}, n))) }
	const ma = "malformed_authorship"
	return []hostileCase{
		hostilePost("authorship null", with(`null`), 422, ma),
		hostilePost("authorship number", with(`1`), 422, ma),
		hostilePost("authorship array", with(`[]`), 422, ma),
		hostilePost("authorship unsigned in lower case", with(`"unsigned"`), 422, ma),
		hostilePost("authorship Signed as a string", with(`"Signed"`), 422, ma),
		hostilePost("authorship empty object", with(`{}`), 422, ma),
		hostilePost("authorship Signed and Unsigned", with(`{"Signed":{},"Unsigned":{}}`), 422, ma),
		hostilePost("Signed null", with(`{"Signed":null}`), 422, ma),
		hostilePost("Signed empty", with(`{"Signed":{}}`), 422, ma),
		hostilePost("Signed two schemes", with(`{"Signed":{"Ed25519":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`},"Passkey":{}}}`), 422, ma),
		hostilePost("Signed unknown scheme", with(`{"Signed":{"Secp256k1":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`}}}`), 422, ma),
		hostilePost("Signed duplicate scheme", with(`{"Signed":{"Ed25519":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`},"Ed25519":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`}}}`), 422, ma),
		hostilePost("Ed25519 missing signature", with(`{"Signed":{"Ed25519":{"pub_key":`+q(pub)+`}}}`), 422, ma),
		hostilePost("Ed25519 unknown field", with(`{"Signed":{"Ed25519":{"pub_key":`+q(pub)+`,"signature":`+q(sig)+`,"alg":"EdDSA"}}}`), 422, ma),
		hostilePost("Ed25519 pub_key number", ed(`12345`, q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key array of bytes", ed(`[1,2,3]`, q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key empty", ed(`""`, q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key bad Base58 0", ed(q("0"+pub[1:]), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key bad Base58 O", ed(q("O"+pub[1:]), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key bad Base58 I", ed(q("I"+pub[1:]), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key bad Base58 l", ed(q("l"+pub[1:]), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key Base64", ed(q("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key with a space", ed(q(" "+pub), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key 31 bytes", ed(b58(31), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key 33 bytes", ed(b58(33), q(sig)), 422, ma),
		hostilePost("Ed25519 pub_key with a leading zero byte", ed(q("1"+pub), q(sig)), 422, ma),
		hostilePost("Ed25519 signature 63 bytes", ed(q(pub), b58(63)), 422, ma),
		hostilePost("Ed25519 signature 65 bytes", ed(q(pub), b58(65)), 422, ma),
		hostilePost("Ed25519 signature 10000 bytes", ed(q(pub), b58(10000)), 422, ma),
		hostilePost("Ed25519 signature null", ed(q(pub), `null`), 422, ma),
		// Base58 decodes in time quadratic in its length: a value of a whole body's
		// length must be refused by its length, not decoded first.
		{name: "intents/Ed25519 pub_key of 1000000 Base58 characters", method: "POST", path: "/intents", ctype: hostileJSON,
			body: ed(q(strings.Repeat("z", 1_000_000)), q(sig)), status: 422, code: ma},
		{name: "intents/passkey authenticator_data of 1000000 Base58 characters", method: "POST", path: "/intents", ctype: hostileJSON,
			body: with(fmt.Sprintf(`{"Signed":{"Passkey":{"pub_key":%q,"signature":%q,"client_data":"{}","authenticator_data":%q}}}`,
				crypto.EncodeBase58(append([]byte{2}, bytes.Repeat([]byte{1}, 32)...)), crypto.EncodeBase58(bytes.Repeat([]byte{1}, 64)), strings.Repeat("z", 1_000_000))),
			status: 422, code: ma},
	}
}

// signatureCases: well-formed signatures that do not sign this intent's canonical bytes.
func (f *hostileFixture) signatureCases() []hostileCase {
	in := f.intent(uuid.NewString(), hostileAttrs)
	c := hostileCanon(in)
	k := f.keys[0]
	good := ed25519.Sign(k, c)
	flipped := append([]byte(nil), good...)
	flipped[10] ^= 1
	// S + L: the same signature written with a scalar out of range, the malleable form.
	const order = "7237005577332262213973186563042994240857116359379907606001950938285454250989"
	l, _ := new(big.Int).SetString(order, 10)
	sLE := append([]byte(nil), good[32:]...)
	hostileReverse(sLE)
	s := new(big.Int).SetBytes(sLE)
	s.Add(s, l)
	malleable := append([]byte(nil), good[:32]...)
	sBytes := s.FillBytes(make([]byte, 32))
	hostileReverse(sBytes)
	malleable = append(malleable, sBytes...)
	other := f.intent(uuid.NewString(), hostileAttrs)
	pretty, _ := json.MarshalIndent(json.RawMessage(in), "", "  ")
	prehash := sha256.Sum256(c)
	signedWith := func(sig string) []byte { return hostileBody(in, `{"Signed":`+sig+`}`) }
	const ai = "authorship_invalid"
	return []hostileCase{
		hostilePost("signature of another intent", signedWith(hostileEdSig(k, hostileCanon(other))), 400, ai),
		hostilePost("signature of the bytes as sent, not JCS", hostileBody(pretty, `{"Signed":`+hostileEdSig(k, pretty)+`}`), 400, ai),
		hostilePost("signature of SHA-256 of JCS", signedWith(hostileEdSig(k, prehash[:])), 400, ai),
		hostilePost("signature of the whole body", signedWith(hostileEdSig(k, hostileBody(c, `"Unsigned"`))), 400, ai),
		hostilePost("signature of JCS with a newline", signedWith(hostileEdSig(k, append(append([]byte(nil), c...), '\n'))), 400, ai),
		hostilePost("signature by another key", signedWith(hostileEdSigRaw(hostilePub(k), ed25519.Sign(f.keys[1], c))), 400, ai),
		hostilePost("signature with one bit flipped", signedWith(hostileEdSigRaw(hostilePub(k), flipped)), 400, ai),
		hostilePost("signature of zeros", signedWith(hostileEdSigRaw(hostilePub(k), make([]byte, 64))), 400, ai),
		hostilePost("signature with S above the group order", signedWith(hostileEdSigRaw(hostilePub(k), malleable)), 400, ai),
		hostilePost("public key not on the curve", signedWith(hostileEdSigRaw(bytes.Repeat([]byte{0xff}, 32), good)), 400, ai),
		// Under a key of small order a signature of S = 0 verifies for any intent by
		// crypto/ed25519's rules: no private key is needed.
		hostilePost("public key the identity, signature forged", signedWith(hostileEdSigRaw(append([]byte{1}, make([]byte, 31)...), append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))), 400, ai),
		hostilePost("public key of order 2, signature forged", signedWith(hostileEdSigRaw(append(append([]byte{0xec}, bytes.Repeat([]byte{0xff}, 30)...), 0x7f), append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))), 400, ai),
		hostilePost("public key the identity spelled y = p + 1, signature forged", signedWith(hostileEdSigRaw(append(append([]byte{0xee}, bytes.Repeat([]byte{0xff}, 30)...), 0x7f), append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))), 400, ai),
		hostilePost("signature over an attr changed after signing", hostileBody(bytes.Replace(in, []byte(`3000`), []byte(`3001`), 1), `{"Signed":`+hostileEdSig(k, c)+`}`), 400, ai),
		// JCS sorts keys and drops whitespace: the same intent sent differently is the
		// same signed bytes, and is stored.
		{name: "intents/keys reordered and spaced, signed over JCS", method: "POST", path: "/intents", ctype: hostileJSON,
			body: hostileBody(pretty, `{"Signed":`+hostileEdSig(k, c)+`}`), status: 200, stores: true},
	}
}

func hostileReverse(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}

// multisigCases: thresholds, weights, signers and nesting.
func (f *hostileFixture) multisigCases() []hostileCase {
	in := f.intent(uuid.NewString(), hostileAttrs)
	c := hostileCanon(in)
	k0, k1, k2, k3 := f.keys[0], f.keys[1], f.keys[2], f.keys[3]
	s0, s1, s2 := hostileEdSig(k0, c), hostileEdSig(k1, c), hostileEdSig(k2, c)
	two := []string{hostileSigner(hostilePub(k0), "1"), hostileSigner(hostilePub(k1), "1")}
	with := func(auth string) []byte { return hostileBody(in, auth) }
	ms := func(signers []string, threshold string, sigs ...string) []byte {
		return with(hostileMultisig(signers, threshold, sigs))
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(hostileMultisig(two, "1", []string{s0}), `{"Signed":`), "}")
	innerOf := func(sigs string) string {
		return strings.TrimSuffix(strings.TrimPrefix(hostileMultisig(two, "1", []string{sigs}), `{"Signed":`), "}")
	}
	manySigners := make([]string, 65)
	for i := range manySigners {
		manySigners[i] = hostileSigner(bytes.Repeat([]byte{byte(i + 1)}, 32), "1")
	}
	manySigs := make([]string, 65)
	for i := range manySigs {
		manySigs[i] = s0
	}
	p := f.passkey
	p.Compressed = false
	pkU := p.PublicKey()
	p.Compressed = true
	pkC := p.PublicKey()
	p.Compressed = false
	const maxU64 = "18446744073709551615"
	const ai, ma = "authorship_invalid", "malformed_authorship"
	// Weights and thresholds beyond 2^53-1 are refused, as every other number the
	// service reads past the JSON-safe range: a reader of another language would see
	// other numbers, and no sum of 64 of them can wrap.
	const max53, past53 = "9007199254740991", "9007199254740992"
	// One point, the identity, in two spellings: it must not count as two signers.
	identity := append([]byte{1}, make([]byte, 31)...)
	identity2 := append(append([]byte{0xee}, bytes.Repeat([]byte{0xff}, 30)...), 0x7f)
	forged := hostileEdSigRaw(identity, append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))
	forged2 := hostileEdSigRaw(identity2, append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...))
	return []hostileCase{
		hostilePost("multisig threshold 0", ms(two, "0", s0), 400, ai),
		hostilePost("multisig threshold -1", ms(two, "-1", s0), 422, ma),
		hostilePost("multisig threshold 1.0", ms(two, "1.0", s0), 422, ma),
		hostilePost("multisig threshold 1e0", ms(two, "1e0", s0), 422, ma),
		hostilePost("multisig threshold as a string", ms(two, `"1"`, s0), 422, ma),
		hostilePost("multisig threshold null", ms(two, `null`, s0), 422, ma),
		hostilePost("multisig threshold 2^64", ms(two, "18446744073709551616", s0), 422, ma),
		hostilePost("multisig threshold of 400 digits", ms(two, strings.Repeat("9", 400), s0), 422, ma),
		hostilePost("multisig threshold above the weights", ms(two, "3", s0, s1), 400, ai),
		hostilePost("multisig weight 0", ms([]string{hostileSigner(hostilePub(k0), "0"), hostileSigner(hostilePub(k1), "1")}, "1", s1), 400, ai),
		hostilePost("multisig weight negative", ms([]string{hostileSigner(hostilePub(k0), "-1")}, "1", s0), 422, ma),
		hostilePost("multisig weight 2^64", ms([]string{hostileSigner(hostilePub(k0), "18446744073709551616")}, "1", s0), 422, ma),
		hostilePost("multisig weights overflow, one bad signature", ms([]string{hostileSigner(hostilePub(k0), maxU64), hostileSigner(hostilePub(k1), maxU64)}, maxU64, s0, hostileEdSigRaw(hostilePub(k1), make([]byte, 64))), 400, ai),
		hostilePost("multisig weights of 2^64-1 that would wrap", ms([]string{hostileSigner(hostilePub(k0), maxU64), hostileSigner(hostilePub(k1), "1")}, maxU64, s0, s1), 400, ai),
		hostilePost("multisig weight 2^53", ms([]string{hostileSigner(hostilePub(k0), past53), hostileSigner(hostilePub(k1), "1")}, "1", s0), 400, ai),
		hostilePost("multisig threshold 2^53", ms([]string{hostileSigner(hostilePub(k0), max53), hostileSigner(hostilePub(k1), max53)}, past53, s0, s1), 400, ai),
		hostilePost("multisig one small-order point in two spellings", ms([]string{hostileSigner(identity, "1"), hostileSigner(identity2, "1")}, "2", forged, forged2), 400, ai),
		{name: "intents/multisig weights of 2^53-1 reach a threshold of 2^53-1", method: "POST", path: "/intents", ctype: hostileJSON,
			body: ms([]string{hostileSigner(hostilePub(k0), max53), hostileSigner(hostilePub(k1), max53)}, max53, s0, s1), status: 200, stores: true},
		hostilePost("multisig no signers", ms(nil, "1", s0), 400, ai),
		hostilePost("multisig no signatures", ms(two, "1"), 400, ai),
		hostilePost("multisig 65 signers", ms(manySigners, "1", s0), 400, ai),
		hostilePost("multisig 65 signatures", ms(two, "1", manySigs...), 400, ai),
		hostilePost("multisig signer listed twice in the object", ms([]string{hostileSigner(hostilePub(k0), "1"), hostileSigner(hostilePub(k0), "1")}, "1", s0), 422, ma),
		hostilePost("multisig P-256 signer listed in both forms", ms([]string{hostileSigner(pkU, "1"), hostileSigner(pkC, "1")}, "1", s0), 400, ai),
		hostilePost("multisig same signer signs twice", ms(two, "2", s0, s0), 400, ai),
		hostilePost("multisig unknown signer", ms(two, "1", s2), 400, ai),
		hostilePost("multisig unknown signer beside a good one", ms(two, "1", s0, s2), 400, ai),
		hostilePost("multisig signer key 31 bytes", ms([]string{hostileSigner(bytes.Repeat([]byte{3}, 31), "1")}, "1", s0), 422, ma),
		hostilePost("multisig signer key bad Base58", ms([]string{`"0OIl":1`}, "1", s0), 422, ma),
		hostilePost("multisig signers an array", with(strings.Replace(hostileMultisig(nil, "1", []string{s0}), `"signers":{}`, `"signers":[]`, 1)), 422, ma),
		hostilePost("multisig signatures an object", with(strings.Replace(hostileMultisig(two, "1", nil), `"signatures":[]`, `"signatures":{}`, 1)), 422, ma),
		hostilePost("multisig missing threshold", with(strings.Replace(hostileMultisig(two, "1", []string{s0}), `,"threshold":1`, ``, 1)), 422, ma),
		hostilePost("multisig unknown field", with(strings.Replace(hostileMultisig(two, "1", []string{s0}), `"signatures"`, `"m":1,"signatures"`, 1)), 422, ma),
		hostilePost("multisig nested one level", ms(two, "1", inner), 400, ai),
		hostilePost("multisig nested two levels", ms(two, "1", innerOf(inner)), 422, ma),
		hostilePost("multisig nested 40 levels", ms(two, "1", hostileNestMultisig(two, s0, 40)), 422, ma),
		hostilePost("multisig signature by an unlisted key over another intent", ms([]string{hostileSigner(hostilePub(k3), "1")}, "1", hostileEdSig(k3, hostileCanon(f.intent(uuid.NewString(), hostileAttrs)))), 400, ai),
	}
}

func hostileNestMultisig(signers []string, leaf string, depth int) string {
	s := leaf
	for range depth {
		s = strings.TrimSuffix(strings.TrimPrefix(hostileMultisig(signers, "1", []string{s}), `{"Signed":`), "}")
	}
	return s
}

// passkeyCases: WebAuthn assertions wrong in one way each.
func (f *hostileFixture) passkeyCases() []hostileCase {
	t := f.t
	p := f.passkey
	in := f.intent(uuid.NewString(), hostileAttrs)
	challenge, err := crypto.PasskeyChallenge(in)
	if err != nil {
		t.Fatal(err)
	}
	otherChallenge, _ := crypto.PasskeyChallenge(f.intent(uuid.NewString(), hostileAttrs))
	ad := p.AuthenticatorData(0x01)
	cd := p.ClientData("webauthn.get", challenge)
	signedWith := func(sig string) []byte { return hostileBody(in, `{"Signed":`+sig+`}`) }
	assert := func(ad []byte, cd string) []byte {
		ps, err := p.AssertRaw(ad, cd)
		return signedWith(hostilePasskeySig(t, ps, err))
	}
	good, err := p.AssertRaw(ad, cd)
	if err != nil {
		t.Fatal(err)
	}
	tampered := *good
	tampered.ClientData = strings.Replace(cd, `"crossOrigin":false`, `"crossOrigin":true`, 1)
	offCurve := *good
	offCurve.PubKey = append([]byte{0x04}, bytes.Repeat([]byte{1}, 64)...)
	wire := hostilePasskeySig(t, good, nil)
	const ai, ma = "authorship_invalid", "malformed_authorship"
	return []hostileCase{
		hostilePost("passkey create, not get", assert(ad, p.ClientData("webauthn.create", challenge)), 400, ai),
		hostilePost("passkey challenge of another intent", assert(ad, p.ClientData("webauthn.get", otherChallenge)), 400, ai),
		hostilePost("passkey challenge with padding", assert(ad, p.ClientData("webauthn.get", challenge+"=")), 400, ai),
		hostilePost("passkey client data not JSON", assert(ad, "type=webauthn.get"), 400, ai),
		hostilePost("passkey client data with duplicate type", assert(ad, `{"type":"webauthn.create","type":"webauthn.get","challenge":"`+challenge+`"}`), 400, ai),
		hostilePost("passkey without user presence", assert(p.AuthenticatorData(0x00), cd), 400, ai),
		hostilePost("passkey authenticator data 36 bytes", assert(ad[:36], cd), 400, ai),
		hostilePost("passkey client data changed after signing", signedWith(hostilePasskeySig(t, &tampered, nil)), 400, ai),
		hostilePost("passkey key not on the curve", signedWith(hostilePasskeySig(t, &offCurve, nil)), 400, ai),
		hostilePost("passkey key 32 bytes", signedWith(strings.Replace(wire, crypto.EncodeBase58(good.PubKey), crypto.EncodeBase58(good.PubKey[:32]), 1)), 422, ma),
		hostilePost("passkey signature 7 bytes", signedWith(strings.Replace(wire, crypto.EncodeBase58(good.Signature), crypto.EncodeBase58(good.Signature[:7]), 1)), 422, ma),
		hostilePost("passkey signature 73 bytes", signedWith(strings.Replace(wire, crypto.EncodeBase58(good.Signature), crypto.EncodeBase58(append(bytes.Repeat([]byte{1}, 72), 1)), 1)), 422, ma),
		hostilePost("passkey client data an object", signedWith(fmt.Sprintf(`{"Passkey":{"pub_key":%q,"signature":%q,"client_data":{"type":"webauthn.get"},"authenticator_data":%q}}`,
			crypto.EncodeBase58(good.PubKey), crypto.EncodeBase58(good.Signature), crypto.EncodeBase58(ad))), 422, ma),
		hostilePost("passkey authenticator data bad Base58", signedWith(fmt.Sprintf(`{"Passkey":{"pub_key":%q,"signature":%q,"client_data":%q,"authenticator_data":"0OIl"}}`,
			crypto.EncodeBase58(good.PubKey), crypto.EncodeBase58(good.Signature), cd)), 422, ma),
	}
}

// unicodeCases: strings at the edges of Unicode, in the body and in what JCS signs.
func (f *hostileFixture) unicodeCases() []hostileCase {
	withSize := func(size string) []byte {
		return f.signedAttrs(fmt.Sprintf(`{"fields":{"size":{"String":%s},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}}}`, size))
	}
	// A body whose signature is over the JCS of the intent with U+FFFD where the
	// sender wrote a lone surrogate or a byte that is not UTF-8: what a lenient
	// decoder would make of it. It must be refused, not stored as other text.
	replaced := func(size string) []byte {
		in := f.intent(uuid.NewString(), fmt.Sprintf(`{"fields":{"size":{"String":%s},"colors":{"Set":{"String":["navy","white"]}},"max_price_cents":{"Int":3000}}}`, size))
		clean := bytes.ReplaceAll(in, []byte(size), []byte(`"\ufffd"`))
		return hostileBody(in, `{"Signed":`+hostileEdSig(f.keys[0], hostileCanon(clean))+`}`)
	}
	// JSON text is UTF-8 (RFC 8259, section 8.1): bytes that are not are no JSON.
	return []hostileCase{
		hostilePost("lone high surrogate", withSize(`"\ud800"`), 400, "invalid_json"),
		hostilePost("lone low surrogate", withSize(`"\udc00"`), 400, "invalid_json"),
		hostilePost("reversed surrogate pair", withSize(`"\udc00\ud800"`), 400, "invalid_json"),
		hostilePost("lone surrogate signed as U+FFFD", replaced(`"\ud800"`), 400, "invalid_json"),
		hostilePost("lone surrogate in the id", f.signed(f.intent(`\ud800`+uuid.NewString()[1:], hostileAttrs)), 422, "invalid_intent"),
		hostilePost("lone surrogate in a field name", f.signedAttrs(`{"fields":{"\ud800":{"Int":1}}}`), 400, "invalid_json"),
		hostilePost("overlong slash", withSize("\"\xc0\xaf\""), 400, "invalid_json"),
		hostilePost("overlong NUL", withSize("\"\xc0\x80\""), 400, "invalid_json"),
		hostilePost("overlong slash signed as U+FFFD", replaced("\"\xc0\xaf\""), 400, "invalid_json"),
		hostilePost("UTF-8 encoded surrogate", withSize("\"\xed\xa0\x80\""), 400, "invalid_json"),
		hostilePost("byte 0xff in a string", withSize("\"M\xff\""), 400, "invalid_json"),
		hostilePost("truncated UTF-8 sequence", withSize("\"M\xe2\x82\""), 400, "invalid_json"),
		hostilePost("code point above U+10FFFF", withSize("\"\xf4\x90\x80\x80\""), 400, "invalid_json"),
		hostilePost("byte 0xff in a key", []byte("{\"intent\xff\":{},\"authorship\":\"Unsigned\"}"), 400, "invalid_json"),
		// Valid Unicode the policy does not accept as a size: stored as sent, signed
		// over its JCS form (NUL and U+2028 escaped or not, a BOM inside a string).
		{name: "intents/NUL inside a string is valid", method: "POST", path: "/intents", ctype: hostileJSON, body: withSize(`"M\u0000"`), status: 200, stores: true},
		{name: "intents/BOM inside a string is valid", method: "POST", path: "/intents", ctype: hostileJSON, body: withSize("\"\ufeffM\""), status: 200, stores: true},
		{name: "intents/escaped and raw astral characters", method: "POST", path: "/intents", ctype: hostileJSON, body: withSize(`"\ud83d\ude00😀\u2028"`), status: 200, stores: true},
	}
}

// proposalCases: POST /intents/{id}/proposal. The bodies go to the decided intent:
// the body is checked before the intent's state, so each refusal is the same as for an
// open one, and a body wrongly let through gets 409 instead of spoiling the open
// intent the other cases need.
func (f *hostileFixture) proposalCases() []hostileCase {
	to := func(name, id string, b []byte, status int, code string) hostileCase {
		return hostileCase{name: "proposal/" + name, method: "POST", path: "/intents/" + id + "/proposal", ctype: hostileJSON, body: b, status: status, code: code}
	}
	open, decided := f.open, f.decided
	good := []byte(`{"solution":"` + solutionPasses + `"}`)
	const ip = "invalid_proposal"
	cs := []hostileCase{
		to("id not a UUID", "nope", good, 400, "invalid_id"),
		to("id of 37 characters", open+"0", good, 400, "invalid_id"),
		to("id without hyphens", strings.ReplaceAll(open, "-", ""), good, 400, "invalid_id"),
		to("id with an encoded NUL", "%00", good, 400, "invalid_id"),
		to("id a policy id", f.s.policy, good, 400, "invalid_id"),
		to("id not a UUID and the body not JSON", "nope", []byte(`{`), 400, "invalid_id"),
		to("unknown intent", hostileUnknownID, good, 404, "intent_not_found"),
		to("empty body", decided, []byte{}, 400, "invalid_json"),
		to("not JSON", decided, []byte(`solution=x`), 400, "invalid_json"),
		to("truncated", decided, good[:len(good)-2], 400, "invalid_json"),
		to("trailing garbage", decided, append(append([]byte{}, good...), "}"...), 400, "invalid_json"),
		to("overlong UTF-8 in the solution", f.victim, []byte("{\"solution\":\"https://shop.example/\xc0\xaf\"}"), 400, "invalid_json"),
		to("lone surrogate escaped in the solution", f.victim, []byte(`{"solution":"https://shop.example/\ud800"}`), 400, "invalid_json"),
		to("body null", decided, []byte(`null`), 422, ip),
		to("body array", decided, []byte(`["x"]`), 422, ip),
		to("body string", decided, []byte(`"x"`), 422, ip),
		to("missing solution", decided, []byte(`{}`), 422, ip),
		to("solution null", decided, []byte(`{"solution":null}`), 422, ip),
		to("solution number", decided, []byte(`{"solution":42}`), 422, ip),
		to("solution array", decided, []byte(`{"solution":["x"]}`), 422, ip),
		to("solution object", decided, []byte(`{"solution":{"url":"x"}}`), 422, ip),
		to("solution empty", decided, []byte(`{"solution":""}`), 422, ip),
		to("solution of 16385 bytes", decided, []byte(`{"solution":"`+strings.Repeat("s", 16385)+`"}`), 422, ip),
		to("solution of 16386 bytes in escapes", decided, []byte(`{"solution":"`+strings.Repeat(`\u00e9`, 8193)+`"}`), 422, ip),
		to("duplicate solution", decided, []byte(`{"solution":"a","solution":"b"}`), 422, ip),
		to("unknown field", decided, []byte(`{"solution":"x","price":1}`), 422, ip),
		to("superseded metadata", decided, []byte(`{"solution":"x","metadata":{"a":1}}`), 422, "superseded_shape"),
		to("superseded metadata alone", decided, []byte(`{"metadata":null}`), 422, "superseded_shape"),
		to("over the body limit", decided, hostilePad(good, hostileMaxBody+1), 413, "body_too_large"),
		to("lone surrogate solution to a decided intent", decided, []byte(`{"solution":"\ud800"}`), 400, "invalid_json"),
		to("second proposal", decided, good, 409, "proposal_exists"),
		to("second proposal in upper case", strings.ToUpper(decided), good, 409, "proposal_exists"),
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset=iso-8859-1", "multipart/form-data; boundary=x"} {
		c := to("content type "+ct, decided, good, 400, "unsupported_content_type")
		c.ctype = ct
		cs = append(cs, c)
	}
	c := to("no content type", decided, good, 400, "unsupported_content_type")
	c.ctype = ""
	return append(cs, c)
}

// policyCases: POST /policies with sources that are not policies.
func (f *hostileFixture) policyCases() []hostileCase {
	post := func(name, src string, status int, code string) hostileCase {
		return hostileCase{name: "policies/" + name, method: "POST", path: "/policies", ctype: hostileText, body: []byte(src), status: status, code: code}
	}
	const pi = "policy_invalid"
	deep := strings.Repeat("(", 30000) + "1" + strings.Repeat(")", 30000)
	padded := demoPolicy + "#" + strings.Repeat("x", policy.MaxSourceBytes-len(demoPolicy)-2) + "\n"
	cs := []hostileCase{
		post("empty", "", 400, pi),
		post("only a comment", "# nothing\n", 400, pi),
		post("JSON", `{"name":"x","requires":["evidence.a == 1"]}`, 400, pi),
		post("no requires", "name x\n", 400, pi),
		post("empty requires", "name x\nrequires { }\n", 400, pi),
		post("unterminated string", "name x\nrequires { evidence.a == \"abc; }\n", 400, pi),
		post("lone surrogate escape", "name x\nrequires { evidence.a == \"\\ud800\"; }\n", 400, pi),
		post("NUL byte", "name x\nrequires { evidence.a == 1;\x00 }\n", 400, pi),
		post("not UTF-8", "name x\nrequires { evidence.a == \"\xc0\xaf\"; }\n", 400, pi),
		post("byte order mark", "\ufeff"+"name x\nrequires { evidence.a == 1; }\n", 400, pi),
		post("integer above int64", "name x\nrequires { evidence.a == 9223372036854775808; }\n", 400, pi),
		post("unknown type", "name x\nparameters { a: integer }\nrequires { parameters.a == 1; }\n", 400, pi),
		post("type error", "name x\nrequires { evidence.a == 1 and evidence.a == \"s\"; }\n", 400, pi),
		post("parentheses 30000 deep", "name x\nrequires { evidence.a == "+deep+"; }\n", 400, pi),
		post("over the source limit", padded+"#", 413, intenthttp.CodePolicyTooLarge),
		post("over the body limit", demoPolicy+"#"+strings.Repeat("x", hostileMaxBody), 413, "body_too_large"),
		// At the size limit, with the padding a comment: the demo policy's id, which is
		// stored already, so nothing changes.
		{name: "policies/at the source limit, the demo policy again", method: "POST", path: "/policies", ctype: hostileText, body: []byte(padded), status: 200},
		{name: "policies/media type in upper case", method: "POST", path: "/policies", ctype: "TEXT/PLAIN; charset=UTF-8", body: []byte(demoPolicy), status: 200},
	}
	for _, ct := range []string{"application/json", "text/html", "text/plain; charset=utf-16", "text/plain; charset=latin1", "text/plain;;", "application/octet-stream"} {
		c := post("content type "+ct, demoPolicy, 400, "unsupported_content_type")
		c.ctype = ct
		cs = append(cs, c)
	}
	c := post("no content type", demoPolicy, 400, "unsupported_content_type")
	c.ctype = ""
	return append(cs, c)
}

// compilerLimitCases: policies one past each limit of docs/policy-language.md, and
// exactly at it, which are stored.
func (f *hostileFixture) compilerLimitCases() []hostileCase {
	post := func(name, src string, status int, code string) hostileCase {
		c := hostileCase{name: "policies/" + name, method: "POST", path: "/policies", ctype: hostileText, body: []byte(src), status: status, code: code}
		c.stores = status == http.StatusOK
		return c
	}
	constraints := func(n int) string {
		var b strings.Builder
		b.WriteString("name many_constraints\nrequires {\n")
		for i := range n {
			fmt.Fprintf(&b, "  evidence.a != %d;\n", i)
		}
		b.WriteString("}\n")
		return b.String()
	}
	parameters := func(n int) string {
		var b strings.Builder
		b.WriteString("name many_parameters\nparameters {\n")
		for i := range n {
			fmt.Fprintf(&b, "  p%d: int\n", i)
		}
		b.WriteString("}\nrequires { parameters.p0 == 1; }\n")
		return b.String()
	}
	declared := func(n int) string {
		var b strings.Builder
		b.WriteString("name many_evidence\nevidence {\n")
		for i := range n {
			fmt.Fprintf(&b, "  e%d: int\n", i)
		}
		b.WriteString("}\nrequires { evidence.e0 == 1; }\n")
		return b.String()
	}
	inferred := func(n int) string {
		terms := make([]string, n)
		for i := range terms {
			terms[i] = fmt.Sprintf("evidence.e%d == 1", i)
		}
		return "name inferred_evidence\nrequires { " + strings.Join(terms, " or ") + "; }\n"
	}
	depth := func(n int) string {
		return "name deep\nrequires { " + strings.Repeat("not (", n) + "evidence.b" + strings.Repeat(")", n) + "; }\n"
	}
	str := func(n int) string {
		return fmt.Sprintf("name long_string\nrequires { evidence.s == %q; }\n", strings.Repeat("s", n))
	}
	set := func(n int) string {
		elems := make([]string, n)
		for i := range elems {
			elems[i] = fmt.Sprint(i)
		}
		return "name big_set\nrequires { evidence.n in {" + strings.Join(elems, ", ") + "}; }\n"
	}
	const pi = "policy_invalid"
	return []hostileCase{
		post("257 constraints", constraints(policy.MaxConstraints+1), 400, pi),
		post("129 parameters", parameters(policy.MaxParameters+1), 400, pi),
		post("257 declared evidence fields", declared(policy.MaxEvidence+1), 400, pi),
		post("257 inferred evidence fields", inferred(policy.MaxEvidence+1), 400, pi),
		post("nesting 65 deep", depth(policy.MaxDepth+1), 400, pi),
		post("nesting 10000 deep", depth(10000), 400, pi),
		post("string literal of 4097 bytes", str(policy.MaxStringBytes+1), 400, pi),
		post("set literal of 1025 elements", set(policy.MaxSetElements+1), 400, pi),
		post("256 constraints", constraints(policy.MaxConstraints), 200, ""),
		post("128 parameters", parameters(policy.MaxParameters), 200, ""),
		post("256 declared evidence fields", declared(policy.MaxEvidence), 200, ""),
		post("256 inferred evidence fields", inferred(policy.MaxEvidence), 200, ""),
		post("string literal of 4096 bytes", str(policy.MaxStringBytes), 200, ""),
		post("set literal of 1024 elements", set(policy.MaxSetElements), 200, ""),
	}
}

// readCases: GET and DELETE with ids that name nothing or are not ids.
func (f *hostileFixture) readCases() []hostileCase {
	get := func(name, path string, status int, code string) hostileCase {
		return hostileCase{name: "get/" + name, method: "GET", path: path, status: status, code: code}
	}
	del := func(name, path string, status int, code string) hostileCase {
		return hostileCase{name: "delete/" + name, method: "DELETE", path: path, status: status, code: code}
	}
	const inf, pnf = "intent_not_found", "policy_not_found"
	return []hostileCase{
		get("intent unknown", "/intents/"+hostileUnknownID, 404, inf),
		get("intent not a UUID", "/intents/nope", 404, inf),
		get("intent id with NUL", "/intents/%00", 404, inf),
		get("intent id dot-dot", "/intents/..", 404, inf),
		get("intent id of 10000 characters", "/intents/"+strings.Repeat("a", 10000), 404, inf),
		get("intent id lone surrogate escaped", "/intents/%ED%A0%80", 404, inf),
		get("status unknown", "/intents/"+hostileUnknownID+"/status", 404, inf),
		get("status not a UUID", "/intents/%20/status", 404, inf),
		get("proof unknown", "/intents/"+hostileUnknownID+"/proof", 404, inf),
		get("proof not a UUID", "/intents/nope/proof", 404, inf),
		get("proof of an open intent", "/intents/"+f.open+"/proof", 404, "proof_not_ready"),
		get("policy unknown", "/policies/"+hostileNoPolicy, 404, pnf),
		get("policy bad Base58", "/policies/0OIl", 404, pnf),
		get("policy hex digest", "/policies/"+strings.Repeat("ab", 32), 404, pnf),
		get("policy with a leading 1", "/policies/1"+f.s.policy, 404, pnf),
		get("policy of 10000 characters", "/policies/"+strings.Repeat("z", 10000), 404, pnf),
		del("policy unknown", "/policies/"+hostileNoPolicy, 404, pnf),
		del("policy bad Base58", "/policies/0OIl", 404, pnf),
		del("policy an intent id", "/policies/"+f.open, 404, pnf),
		del("policy in use", "/policies/"+f.s.policy, 409, "policy_in_use"),
		del("policy in lower case", "/policies/"+strings.ToLower(f.spare), 404, pnf),
	}
}

// eventCases: GET /events with bad resume points and filters. The ones that are
// fine open a stream, which the check closes at once.
func (f *hostileFixture) eventCases() []hostileCase {
	var cs []hostileCase
	const bad = "invalid_last_event_id"
	for _, v := range []string{"-1", "1.5", "1e3", "+1", "0x10", "abc", "9223372036854775808", "18446744073709551616",
		strings.Repeat("9", 400), "١", "1,2", "-0", "NaN"} {
		cs = append(cs, hostileCase{name: fmt.Sprintf("events/header last-event-id %q", hostileClipName(v)), method: "GET", path: "/events",
			header: []string{"Last-Event-ID", v}, status: 400, code: bad})
	}
	for _, v := range []string{"-1", "1.5", "1e3", "%2B1", "abc", "9223372036854775808", "", "%00", "1%2C2", "%201", "1%20", "%zz", "5%", "5;6"} {
		cs = append(cs, hostileCase{name: fmt.Sprintf("events/query last-event-id %q", v), method: "GET", path: "/events?last-event-id=" + v,
			status: 400, code: bad})
	}
	cs = append(cs,
		hostileCase{name: "events/header last-event-id empty", method: "GET", path: "/events", header: []string{"Last-Event-ID", ""}, status: 400, code: bad},
		hostileCase{name: "events/bad header wins over a good query", method: "GET", path: "/events?last-event-id=5", header: []string{"Last-Event-ID", "x"}, status: 400, code: bad},
		hostileCase{name: "events/good header wins over a bad query", method: "GET", path: "/events?last-event-id=x", header: []string{"Last-Event-ID", "5"}, status: 200},
		hostileCase{name: "events/largest last-event-id", method: "GET", path: "/events?last-event-id=9223372036854775807", status: 200},
		hostileCase{name: "events/type unknown", method: "GET", path: "/events?type=opened", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/type in upper case", method: "GET", path: "/events?type=SUCCESS", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/type empty", method: "GET", path: "/events?type=", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/type empty in a list", method: "GET", path: "/events?type=success,,failure", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id not a UUID", method: "GET", path: "/events?intent_id=42", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id empty", method: "GET", path: "/events?intent_id=", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id one bad in a list", method: "GET", path: "/events?intent_id=" + f.open + ",x", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id with NUL", method: "GET", path: "/events?intent_id=%00", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/intent_id that does not decode", method: "GET", path: "/events?intent_id=%zz", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/a name that does not decode", method: "GET", path: "/events?%zz=1", status: 400, code: "invalid_filter"},
		hostileCase{name: "events/last-event-id that does not decode after a good filter", method: "GET", path: "/events?type=success&last-event-id=%zz", status: 400, code: bad},
		hostileCase{name: "events/pairs split by a semicolon", method: "GET", path: "/events?type=success;last-event-id=5", status: 400, code: "invalid_filter"},
	)
	return cs
}

func hostileClipName(s string) string {
	if len(s) > 24 {
		return s[:24] + "..."
	}
	return s
}

// routeCases: paths that are no route and methods a route does not serve.
func (f *hostileFixture) routeCases() []hostileCase {
	notAllowed := []struct{ method, path string }{
		{"GET", "/intents"}, {"PUT", "/intents"}, {"DELETE", "/intents"}, {"PATCH", "/intents"},
		{"POST", "/intents/" + f.open}, {"PUT", "/intents/" + f.open}, {"DELETE", "/intents/" + f.open},
		{"POST", "/intents/" + f.open + "/status"}, {"GET", "/intents/" + f.open + "/proposal"}, {"PUT", "/intents/" + f.open + "/proposal"},
		{"GET", "/policies"}, {"PUT", "/policies/" + f.s.policy}, {"POST", "/policies/" + f.s.policy}, {"PATCH", "/policies/" + f.s.policy},
		{"POST", "/events"}, {"DELETE", "/events"}, {"POST", "/info"}, {"DELETE", "/healthz"},
		{"BREW", "/intents"}, {"get", "/info"},
	}
	var cs []hostileCase
	for _, m := range notAllowed {
		cs = append(cs, hostileCase{name: fmt.Sprintf("route/%s %s", m.method, m.path), method: m.method, path: m.path, ctype: hostileJSON,
			body: []byte(`{}`), status: 405, code: "method_not_allowed"})
	}
	for _, p := range []string{"/nowhere", "/intents/", "/policies/", "/intents/" + f.open + "/", "/intents/" + f.open + "/status/x",
		"/v1/intents", "/INTENTS", "/events/", "//intents", "/templates", "/validate", "/config"} {
		cs = append(cs, hostileCase{name: "route/GET " + p, method: "GET", path: p, status: 404, code: "not_found"})
	}
	// The superseded operations of spec part 9 are gone, whatever their paths were.
	cs = append(cs,
		hostileCase{name: "route/POST /templates", method: "POST", path: "/templates", ctype: hostileText, body: []byte(demoPolicy), status: 404, code: "not_found"},
		hostileCase{name: "route/POST /config", method: "POST", path: "/config", ctype: hostileJSON, body: []byte(`{"evidence_extractor_url":""}`), status: 404, code: "not_found"},
	)
	return cs
}

// rawCases: requests only a raw connection can send.
func (f *hostileFixture) rawCases() []hostileCase {
	host := "Host: " + f.addr + "\r\n"
	valid := string(f.signed(f.intent(uuid.NewString(), hostileAttrs)))
	post := func(path, ctype, head, b string) string {
		return "POST " + path + " HTTP/1.1\r\n" + host + "Content-Type: " + ctype + "\r\n" + head + "\r\n" + b
	}
	return []hostileCase{
		{name: "raw/intent body shorter than its Content-Length", raw: post("/intents", hostileJSON, fmt.Sprintf("Content-Length: %d\r\n", len(valid)), valid[:len(valid)/2]),
			halfClose: true, status: 400, code: "invalid_json"},
		{name: "raw/proposal body shorter than its Content-Length", raw: post("/intents/"+f.decided+"/proposal", hostileJSON, "Content-Length: 100\r\n", `{"solution":"`),
			halfClose: true, status: 400, code: "invalid_json"},
		{name: "raw/policy body shorter than its Content-Length", raw: post("/policies", hostileText, "Content-Length: 100\r\n", "name x\nrequires {"),
			halfClose: true, status: 400, code: "invalid_json"},
		{name: "raw/chunked intent cut inside a chunk", raw: post("/intents", hostileJSON, "Transfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s", len(valid), valid[:20])),
			halfClose: true, status: 400, code: "invalid_json"},
		{name: "raw/chunked intent with a bad chunk size", raw: post("/intents", hostileJSON, "Transfer-Encoding: chunked\r\n", "zz\r\n"+valid+"\r\n0\r\n\r\n"),
			status: 400, code: "invalid_json"},
		{name: "raw/Content-Length over the limit, no body sent", raw: post("/intents", hostileJSON, fmt.Sprintf("Content-Length: %d\r\n", hostileMaxBody+1), ""),
			status: 413, code: "body_too_large"},
		{name: "raw/Content-Length of 2^63-1", raw: post("/intents", hostileJSON, "Content-Length: 9223372036854775807\r\n", ""),
			status: 413, code: "body_too_large"},
		{name: "raw/Content-Length negative", raw: post("/intents", hostileJSON, "Content-Length: -1\r\n", ""), status: 400, protocol: true},
		{name: "raw/Content-Length not a number", raw: post("/intents", hostileJSON, "Content-Length: ten\r\n", ""), status: 400, protocol: true},
		{name: "raw/two Content-Lengths", raw: post("/intents", hostileJSON, "Content-Length: 2\r\nContent-Length: 3\r\n", "{}"), status: 400, protocol: true},
		{name: "raw/no Host", raw: "GET /info HTTP/1.1\r\n\r\n", status: 400, protocol: true},
		{name: "raw/header without a colon", raw: "GET /info HTTP/1.1\r\n" + host + "Last-Event-ID 5\r\n\r\n", status: 400, protocol: true},
		{name: "raw/header of 70000 bytes", raw: "GET /events HTTP/1.1\r\n" + host + "Last-Event-ID: " + strings.Repeat("9", 70000) + "\r\n\r\n", status: 431, protocol: true},
		{name: "raw/NUL in the path", raw: "GET /intents/\x00 HTTP/1.1\r\n" + host + "\r\n", status: 400, protocol: true},
		{name: "raw/unknown HTTP version", raw: "GET /info HTTP/9.9\r\n" + host + "\r\n", status: 505, protocol: true},
	}
}
