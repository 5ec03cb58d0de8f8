package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/httpsig"
	"github.com/intentd/intentd/policy"
)

// maxClientBody bounds what the client reads of one answer that is not a stream. The
// largest answers are proof bundles, which hold a policy's bytecode (at most a few
// hundred KiB) and evidence that came through a request-size limit; 16 MiB is far
// above both and still stops a misbehaving server from exhausting memory.
const maxClientBody = 16 << 20

// Client speaks the API of an intentd server. Its methods turn error answers into
// *APIError values carrying the server's status, code and message; errors.As also
// finds an *intentd.Error in them, so that intentd.ErrorKind and intentd.ErrorCode work on
// client errors as on the engine's. A failure to reach the server is returned as the
// underlying transport error, never as an *APIError.
//
// A Client is safe for concurrent use once its fields are set.
type Client struct {
	// HTTPClient sends the requests; when nil, http.DefaultClient, or a client of its
	// own when TLSConfig is set. Its Timeout applies to event streams too, so leave it
	// 0 and bound calls with their context instead.
	HTTPClient *http.Client
	// TLSConfig, when set and HTTPClient is nil, is the TLS configuration of the
	// client's connections to an https:// server: RootCAs to trust a server whose
	// certificate a private CA signs, Certificates to present a client certificate
	// (NewTLSConfig reads both from PEM files). The client then sends through a
	// transport of its own, made at the first request with http.DefaultTransport's
	// settings, HTTP/2 included.
	TLSConfig *tls.Config
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// UserAgent, when set, is sent as the User-Agent header.
	UserAgent string
	// AgentKey, when set, is the agent's Ed25519 key: Propose signs its request with
	// it (RFC 9421, with a Content-Digest of the body, a fresh nonce and a window of
	// AgentWindow), as an intent that delegates to agents requires. See docs/agents.md.
	// The signature covers the method, the authority and the path the client sends:
	// a proxy in between that rewrites the host or strips a path prefix makes the
	// server see another request, whose signature does not verify.
	AgentKey ed25519.PrivateKey
	// AgentTag is the tag of the agent's signatures; "" sends none.
	AgentTag string
	// AgentWindow is how long a signature holds, from now; 0 means 5 minutes. The
	// server takes at most 8.
	AgentWindow time.Duration

	base *url.URL
	// own holds the clients made for TLSConfig. A pointer, shared by copies of the
	// Client, so that a copy (with another agent key, say) is still a plain value.
	own *tlsClients
}

// tlsClients are the http.Clients made for each TLSConfig a Client was given, so that
// its requests share one transport and its connections.
type tlsClients struct {
	mu      sync.Mutex
	clients map[*tls.Config]*http.Client
}

// NewClient returns a client of the server at baseURL, such as
// "http://127.0.0.1:8080". The URL must be absolute http or https; a path in it is kept
// as a prefix of every route, for a server behind a proxy that mounts it there.
func NewClient(baseURL string) (*Client, error) {
	if !strings.Contains(baseURL, "://") {
		// Without a scheme, "host:port" parses as an opaque URL or fails oddly.
		return nil, fmt.Errorf("server URL %q: want an http:// or https:// URL, such as http://127.0.0.1:8080", baseURL)
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %v", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("server URL %q: want an http:// or https:// URL", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("server URL %q: no host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server URL %q: want no query or fragment", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return &Client{base: u, own: &tlsClients{}}, nil
}

// BaseURL returns the server's URL as NewClient read it.
func (c *Client) BaseURL() string { return c.base.String() }

// IntentStatus is an intent's status as GET /intents/{id}/status answers it (spec
// 2.10, with failure_kind), and the outcome an event carries.
type IntentStatus struct {
	State    intentd.State     `json:"status"`
	IntentID string            `json:"intent_id,omitempty"`
	Proposal *intentd.Proposal `json:"proposal,omitempty"`
	// Evidence is set on success, and on a failure once evidence was extracted.
	Evidence    json.RawMessage     `json:"evidence,omitempty"`
	Reason      string              `json:"reason,omitempty"`
	FailureKind intentd.FailureKind `json:"failure_kind,omitempty"`
	Failures    []policy.Failure    `json:"constraint_failures,omitempty"`
	// EvidenceMissing names, on a failure, the evidence fields the policy read and found
	// absent or ill-typed; every one of them for failure_kind "evidence".
	EvidenceMissing []string `json:"evidence_missing,omitempty"`
	// Agent is the agent whose signed proposal the intent took; nil when unsigned.
	Agent *intentd.Agent `json:"agent,omitempty"`
	// MandateID names the mandate the intent is a purchase of; empty for an intent of
	// its own.
	MandateID string `json:"mandate_id,omitempty"`
}

// Info calls GET /info: the server's version, settings and receipt key.
func (c *Client) Info(ctx context.Context) (*intentd.Info, error) {
	var info intentd.Info
	if err := c.getJSON(ctx, "/info", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// PublicKey returns the server's receipt key from GET /info, checked against the key
// id it is served with. Fetch it once over a channel you trust and pin it: it is what
// makes a verified proof the server's word (docs/proofs.md).
func (c *Client) PublicKey(ctx context.Context) ([]byte, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return nil, err
	}
	if info.PublicKey == "" {
		return nil, errors.New("the server reports no public key: it signs no receipts")
	}
	pub, err := crypto.DecodeBase58(info.PublicKey)
	if err != nil || len(pub) != 32 {
		return nil, fmt.Errorf("the server's public_key %q is not the Base58 of a 32-byte Ed25519 key", info.PublicKey)
	}
	if id := crypto.KeyID(pub); id != info.KeyID {
		return nil, fmt.Errorf("the server's key_id %q is not the id of its public key (%s)", info.KeyID, id)
	}
	return pub, nil
}

// PutPolicy calls POST /policies with the policy's source and returns its id. A source
// that does not compile is an *APIError with code policy_invalid whose message lists
// the errors with their positions.
func (c *Client) PutPolicy(ctx context.Context, source string) (string, error) {
	var id string
	if err := c.do(ctx, "POST", "/policies", "text/plain; charset=utf-8", []byte(source), &id); err != nil {
		return "", err
	}
	return id, nil
}

// Policy calls GET /policies/{id} and returns the policy's pretty-printed source, which
// compiles to the same id.
func (c *Client) Policy(ctx context.Context, id string) (string, error) {
	var buf bytes.Buffer
	if err := c.do(ctx, "GET", "/policies/"+url.PathEscape(id), "", nil, &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// DeletePolicy calls DELETE /policies/{id}; code policy_in_use while open intents name it.
func (c *Client) DeletePolicy(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/policies/"+url.PathEscape(id), "", nil, nil)
}

// SubmitIntent calls POST /intents with the intent's JSON and its authorship. The
// intent's bytes are sent as given, so that a signature made over them (through JCS)
// is checked over the same value.
func (c *Client) SubmitIntent(ctx context.Context, intent json.RawMessage, auth crypto.Authorship) error {
	body, err := AuthoredIntentJSON(intent, auth)
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/intents", "application/json", body, nil)
}

// AuthoredIntentJSON is the body of POST /intents: {"intent": intent, "authorship": auth}.
func AuthoredIntentJSON(intent json.RawMessage, auth crypto.Authorship) ([]byte, error) {
	return authoredJSON("intent", intent, auth)
}

// authoredJSON is {"<name>": object, "authorship": auth}, the object's bytes compacted.
func authoredJSON(name string, object json.RawMessage, auth crypto.Authorship) ([]byte, error) {
	a, err := auth.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("authorship: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"` + name + `":`)
	if err := json.Compact(&buf, object); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", name, err)
	}
	buf.WriteString(`,"authorship":`)
	buf.Write(a)
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Intent calls GET /intents/{id}: the intent as stored (in its JCS form) with its
// authorship.
func (c *Client) Intent(ctx context.Context, id string) (*intentd.AuthoredIntent, error) {
	var ai intentd.AuthoredIntent
	if err := c.getJSON(ctx, "/intents/"+url.PathEscape(id), &ai); err != nil {
		return nil, err
	}
	return &ai, nil
}

// Propose calls POST /intents/{id}/proposal. A 503 (capacity_exceeded) changes
// nothing; its APIError carries the advised RetryAfter.
func (c *Client) Propose(ctx context.Context, id, solution string) error {
	body, err := json.Marshal(intentd.Proposal{Solution: solution})
	if err != nil {
		return err
	}
	return c.do(ctx, "POST", "/intents/"+url.PathEscape(id)+"/proposal", "application/json", body, nil, c.signAgent)
}

// signAgent signs a proposal's request with the agent's key, when the client has one.
func (c *Client) signAgent(req *http.Request, body []byte) error {
	if c.AgentKey == nil {
		return nil
	}
	window := c.AgentWindow
	if window == 0 {
		window = 5 * time.Minute
	}
	now := time.Now()
	return httpsig.Sign(req, body, c.AgentKey, httpsig.Params{Created: now, Expires: now.Add(window), Tag: c.AgentTag})
}

// Preview is the answer of POST /intents/{id}/preview: what a proposal of the solution
// would decide, with nothing stored, sent or signed.
type Preview struct {
	// Outcome has the fields of a terminal status; its State is success or failure.
	Outcome IntentStatus
	// Note says in words that the preview is not a proof.
	Note string
	// PreviewsLeft is how many more previews the intent may have; nil when the server
	// sets no bound.
	PreviewsLeft *int
}

// UnmarshalJSON reads the preview's body, whose outcome is under "outcome" where a
// status has "status".
func (p *Preview) UnmarshalJSON(data []byte) error {
	var w struct {
		IntentStatus
		Outcome      intentd.State `json:"outcome"`
		Note         string        `json:"note"`
		PreviewsLeft *int          `json:"previews_left"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if w.Outcome != intentd.StateSuccess && w.Outcome != intentd.StateFailure {
		return fmt.Errorf("preview: outcome %q, want success or failure", w.Outcome)
	}
	w.IntentStatus.State = w.Outcome
	*p = Preview{Outcome: w.IntentStatus, Note: w.Note, PreviewsLeft: w.PreviewsLeft}
	return nil
}

// Preview calls POST /intents/{id}/preview: the outcome a proposal of solution would
// get, decided now and changing nothing; the intent's one proposal stays unspent. Codes
// of note: preview_limit (429) when the intent has had all its previews,
// capacity_exceeded (503, with RetryAfter) when the previews' share of proving is full.
func (c *Client) Preview(ctx context.Context, id, solution string) (*Preview, error) {
	body, err := json.Marshal(intentd.Proposal{Solution: solution})
	if err != nil {
		return nil, err
	}
	var p Preview
	if err := c.do(ctx, "POST", "/intents/"+url.PathEscape(id)+"/preview", "application/json", body, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Status calls GET /intents/{id}/status.
func (c *Client) Status(ctx context.Context, id string) (*IntentStatus, error) {
	var st IntentStatus
	if err := c.getJSON(ctx, "/intents/"+url.PathEscape(id)+"/status", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Timeline calls GET /intents/{id}/timeline, an extension of the API: when the intent
// was created, proposed and ended, and its deadline (ExpiresAt), by the server's clock.
// An agent deciding how long it may search reads the deadline here, since the status
// carries none. Codes of its 404s: intent_not_found, and not_found from a server whose
// engine keeps no times.
func (c *Client) Timeline(ctx context.Context, id string) (*intentd.Timeline, error) {
	var t intentd.Timeline
	if err := c.getJSON(ctx, "/intents/"+url.PathEscape(id)+"/timeline", &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Requirements calls GET /intents/{id}/requirements, an extension of the API: what the
// evidence about a solution must satisfy, the intent's policy partially evaluated on
// its parameters, each constraint holding, failing, or left as a residual over the
// evidence, and a JSON Schema of the evidence. Codes of its 404s: intent_not_found, and
// policy_not_found when the policy of a decided intent was deleted since.
func (c *Client) Requirements(ctx context.Context, id string) (*intentd.Requirements, error) {
	var r intentd.Requirements
	if err := c.getJSON(ctx, "/intents/"+url.PathEscape(id)+"/requirements", &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Proof calls GET /intents/{id}/proof and returns the bundle's JSON as the server sent
// it, ready for proof.Verify or for a file. Codes of its 404s: intent_not_found,
// proof_not_ready (ask again once the intent is decided), no_proof (there will be none).
func (c *Client) Proof(ctx context.Context, id string) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := c.do(ctx, "GET", "/intents/"+url.PathEscape(id)+"/proof", "", nil, &buf); err != nil {
		return nil, err
	}
	if !json.Valid(buf.Bytes()) {
		return nil, errors.New("GET proof: the answer is not JSON")
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	return c.do(ctx, "GET", path, "", nil, v)
}

// do sends one request. out receives a 200's body: decoded as JSON into a value, or
// copied into a *bytes.Buffer; nil discards it.
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any, prepare ...func(*http.Request, []byte) error) error {
	resp, err := c.send(ctx, method, path, nil, contentType, body, prepare...)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeAPIError(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxClientBody+1))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if len(data) > maxClientBody {
		return fmt.Errorf("%s %s: the answer is larger than %d bytes", method, path, maxClientBody)
	}
	switch o := out.(type) {
	case nil:
	case *bytes.Buffer:
		o.Write(data)
	default:
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: the answer is not what the API describes: %w", method, path, err)
		}
	}
	return nil
}

// send makes and sends a request; each of prepare may change it last, a signer
// among them.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, contentType string, body []byte, prepare ...func(*http.Request, []byte) error) (*http.Response, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	for _, p := range prepare {
		if err := p(req, body); err != nil {
			return nil, err
		}
	}
	return c.HTTP().Do(req)
}

// HTTP is the http.Client the client sends its requests through: HTTPClient, the
// client made for TLSConfig, or http.DefaultClient. A caller that fetches what no method
// covers (the transparency log's tiles) uses it to reach the server as the client does.
func (c *Client) HTTP() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	if c.TLSConfig == nil {
		return http.DefaultClient
	}
	own := c.own
	if own == nil {
		own = &tlsClients{} // a Client not made by NewClient: nothing is shared
	}
	own.mu.Lock()
	defer own.mu.Unlock()
	if hc := own.clients[c.TLSConfig]; hc != nil {
		return hc
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = c.TLSConfig.Clone()
	// A transport given a TLS configuration of its own speaks HTTP/1.1 only unless
	// told to try HTTP/2.
	t.ForceAttemptHTTP2 = true
	hc := &http.Client{Transport: t}
	if own.clients == nil {
		own.clients = map[*tls.Config]*http.Client{}
	}
	own.clients[c.TLSConfig] = hc
	return hc
}
