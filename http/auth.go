package http

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/intentd/intentd"
)

// Role is what a bearer token allows (decisions.md, "Caller authentication and
// limits"). A token carries any number of roles; none implies another.
type Role string

// The roles.
const (
	// RoleAdmin writes policies: POST and DELETE /policies.
	RoleAdmin Role = "admin"
	// RoleSubmit submits intents: POST /intents.
	RoleSubmit Role = "submit"
	// RolePropose proposes solutions: POST /intents/{id}/proposal.
	RolePropose Role = "propose"
	// RoleRead reads: policies, intents, statuses, proofs, the event stream, /info and
	// /openapi.json.
	RoleRead Role = "read"
	// RoleMetrics scrapes GET /metrics. It is a role of its own so that a monitoring
	// system's token reads counts, not intents and their evidence.
	RoleMetrics Role = "metrics"
)

var allRoles = []Role{RoleAdmin, RoleSubmit, RolePropose, RoleRead, RoleMetrics}

// The codes of the authentication errors.
const (
	CodeUnauthorized = "unauthorized" // 401: no token, or one that is not known
	CodeForbidden    = "forbidden"    // 403: a known token without the route's role
)

// TokenHashPrefix starts each hash in a tokens file: the hash function, so that
// another can be added without misreading old files.
const TokenHashPrefix = "sha256:"

// Tokens are the bearer tokens the server accepts, kept as SHA-256 hashes only: a copy
// of the file or of the process's memory does not give the tokens away.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	hash  [sha256.Size]byte
	roles []Role
	name  string
}

// HashToken returns the line prefix a tokens file stores for token:
// "sha256:" and the lower-case hex of SHA-256 of its bytes.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return TokenHashPrefix + hex.EncodeToString(sum[:])
}

// LoadTokens reads a tokens file; see ParseTokens for its format.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	defer f.Close()
	t, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return t, nil
}

// maxTokenLines bounds a tokens file, which is read whole and scanned on every request.
const maxTokenLines = 10_000

// ParseTokens reads tokens, one a line: `sha256:<64 hex digits> <roles> [name]`, where
// roles is a comma-separated list of admin, submit, propose, read and metrics, and the
// optional name (no spaces) is what request logs call the caller. Blank lines and lines
// starting with # are skipped. A hash given twice, an unknown role or a malformed line
// is an error naming the line; a file with no token is an error too, since it would
// lock every caller out.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(t.entries) == maxTokenLines {
			return nil, fmt.Errorf("line %d: more than %d tokens", n, maxTokenLines)
		}
		e, err := parseTokenLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		for _, o := range t.entries {
			if o.hash == e.hash {
				return nil, fmt.Errorf("line %d: the hash is given twice", n)
			}
		}
		t.entries = append(t.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("no token (want lines of %s<hex> <roles> [name])", TokenHashPrefix)
	}
	return t, nil
}

func parseTokenLine(line string) (tokenEntry, error) {
	var e tokenEntry
	fields := strings.Fields(line)
	if len(fields) < 2 || len(fields) > 3 {
		return e, fmt.Errorf("%d fields, want %s<hex> <roles> [name]", len(fields), TokenHashPrefix)
	}
	hexHash, ok := strings.CutPrefix(fields[0], TokenHashPrefix)
	if !ok {
		// The token itself, pasted by mistake, must not end up in an error message.
		return e, fmt.Errorf("the first field does not start with %s (the file holds hashes of tokens, not tokens)", TokenHashPrefix)
	}
	raw, err := hex.DecodeString(hexHash)
	if err != nil || len(raw) != sha256.Size {
		return e, fmt.Errorf("the hash is not %d hex digits", 2*sha256.Size)
	}
	copy(e.hash[:], raw)
	for _, name := range strings.Split(fields[1], ",") {
		role := Role(name)
		if !slices.Contains(allRoles, role) {
			return e, fmt.Errorf("unknown role %q (want admin, submit, propose, read or metrics)", clip(name))
		}
		if !slices.Contains(e.roles, role) {
			e.roles = append(e.roles, role)
		}
	}
	if len(fields) == 3 {
		e.name = fields[2]
	}
	return e, nil
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// caller is who made a request, as far as request logs need to know.
type caller struct {
	name  string
	roles []Role
	// cert says the caller was authenticated by a client certificate, not a token.
	cert bool
}

// authenticate finds the token of an Authorization header. Every stored hash is
// compared, each in constant time, whether or not one matched already: how long it
// takes says nothing about which hash, or how much of it, matched.
func (t *Tokens) authenticate(header string) (caller, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return caller{}, false
	}
	token = strings.TrimLeft(token, " ")
	if token == "" {
		return caller{}, false
	}
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], t.entries[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return caller{}, false
	}
	e := t.entries[found]
	name := e.name
	if name == "" {
		// Enough of the hash to tell callers apart in logs, not enough to matter.
		name = TokenHashPrefix + hex.EncodeToString(e.hash[:4])
	}
	return caller{name: name, roles: e.roles}, true
}

// authorize checks a request's caller against the role of its route rt. Routes that
// need no role (the health checks) and servers that authenticate no caller (neither
// tokens nor a client CA) let every request through. A request that matches no route
// (rt nil) needs a caller but no role, so that the routes of a server cannot be listed
// by probing without one.
func (s *Server) authorize(r *http.Request, rt *route) (caller, error) {
	if !s.authRequired || (rt != nil && rt.role == "") {
		return caller{}, nil
	}
	c, err := s.authenticate(r)
	if err != nil {
		return caller{}, err
	}
	if rt != nil && !slices.Contains(c.roles, rt.role) {
		what := "this token"
		if c.cert {
			what = "this client certificate (its roles are its subject's OU values)"
		}
		return c, intentd.Errorf(intentd.KindForbidden, CodeForbidden, "%s %s needs the role %s, which %s does not have", r.Method, rt.pattern, rt.role, what)
	}
	return c, nil
}

// authenticate finds a request's caller: the token of its Authorization header when it
// carries one, else the client certificate its connection presented, when the server
// takes client certificates (clientcert.go).
func (s *Server) authenticate(r *http.Request) (caller, error) {
	header := r.Header.Get("Authorization")
	certs := s.opts.TLS != nil && s.opts.TLS.ClientCertificates()
	if header == "" && certs && presentsCertificate(r) {
		return s.certCaller(r)
	}
	if s.opts.Tokens != nil {
		if c, ok := s.opts.Tokens.authenticate(header); ok {
			return c, nil
		}
	}
	var msg string
	switch {
	case s.opts.Tokens == nil && header != "":
		msg = "this server takes no bearer token: present a client certificate signed by the CA it trusts for callers"
	case s.opts.Tokens == nil:
		msg = "a client certificate signed by the CA this server trusts for callers is required"
	case header != "":
		msg = "the bearer token is not valid"
	case certs:
		msg = "a bearer token (Authorization: Bearer <token>) or a client certificate is required"
	default:
		msg = "a bearer token is required (Authorization: Bearer <token>)"
	}
	return caller{}, intentd.Errorf(intentd.KindUnauthorized, CodeUnauthorized, "%s", msg)
}

// challenge is the WWW-Authenticate header of a 401 or 403 (RFC 6750, section 3).
func challenge(code string, hadToken bool) string {
	switch {
	case code == CodeForbidden:
		return `Bearer realm="intentd", error="insufficient_scope"`
	case hadToken:
		return `Bearer realm="intentd", error="invalid_token"`
	default:
		return `Bearer realm="intentd"`
	}
}
