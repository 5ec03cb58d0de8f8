package http

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/intentd/intentd/mcpserver"
)

// mcpMaxWait bounds the MCP tool await_outcome on this server.
const mcpMaxWait = 60 * time.Second

// newMCPHandler is the MCP endpoint over the server's engine (docs/agents.md). The
// route's chain has authenticated the caller, by token or client certificate, and
// checked the read role already; when callers are authenticated, the SDK's bearer
// middleware then hands the caller's roles to the tools, each of which checks its own
// (propose for preview_solution, propose_solution and purchase). Credentials carry no
// expiry here, hence AllowMissingExpiration.
func (s *Server) newMCPHandler() http.Handler {
	srv := mcpserver.New(mcpBackend{mcpserver.LocalFromInfo(s.engine, s.opts.Info), s}, mcpserver.Options{
		Version:      APIVersion,
		Logger:       s.log.With("component", "mcp"),
		RequireRoles: s.authRequired,
		MaxWait:      mcpMaxWait,
	})
	h := srv.HTTPHandler(s.opts.MaxBodyBytes)
	if !s.authRequired {
		return h
	}
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		ri, ok := r.Context().Value(requestInfoKey{}).(*requestInfo)
		if !ok || ri.caller.name == "" {
			return nil, auth.ErrInvalidToken
		}
		c := ri.caller
		scopes := make([]string, len(c.roles))
		for i, r := range c.roles {
			scopes[i] = string(r)
		}
		// UserID makes the SDK refuse a session's requests from another caller; a
		// token's name and a certificate's live apart.
		user := "token:" + c.name
		if c.cert {
			user = c.name
		}
		return &auth.TokenInfo{Scopes: scopes, UserID: user}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// certBearer stands in the Authorization header of an MCP request whose caller a client
// certificate authenticated: the SDK's middleware, which hands the caller's roles to
// the tools, reads a bearer token before anything else. Its verifier takes the caller
// the chain found and never reads the value; a caller who sends this value as a
// token is refused by the chain first, as any unknown token is.
const certBearer = "Bearer client-certificate"

// mcpBackend is the tools' backend over the server's engine, except that get_proof
// gets the bundle GET /intents/{id}/proof answers: the engine's bundle lacks the log
// inclusion, which the server adds.
type mcpBackend struct {
	mcpserver.Backend
	s *Server
}

func (b mcpBackend) Proof(ctx context.Context, id string) (json.RawMessage, error) {
	pb, err := b.s.proof(ctx, id)
	if err != nil {
		return nil, err
	}
	return json.Marshal(pb)
}

// handleMCP serves one request of the MCP streamable HTTP transport. The body is read
// here, within --max-body, so that one too large is refused with the 413 every route
// answers rather than with the MCP handler's text. await_outcome may hold its answer
// for up to mcpMaxWait, beyond the server's write time-out, so the deadline of this
// one answer is moved past it.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	body, err := readBody(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if ri, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok && ri.caller.cert {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", certBearer)
	}
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(mcpMaxWait + s.opts.WriteTimeout))
	s.mcp.ServeHTTP(w, r)
}
