package http

import (
	"net/http"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/httpsig"
)

// agentSignature verifies the RFC 9421 signature of a proposal's request, when it
// carries one: nil for an unsigned request, which the engine takes or refuses as the
// intent's delegation says. A signature that is there must verify, whatever the
// intent: a request that claims an agent and is not that agent's is refused, 401.
func (s *Server) agentSignature(r *http.Request, body []byte) (*intentd.AgentSignature, error) {
	if !httpsig.Present(r.Header) {
		return nil, nil
	}
	v, err := httpsig.Verify(r, body, time.Now(), httpsig.Options{
		MaxWindow: intentd.AgentSignatureMaxWindow,
		Skew:      intentd.AgentSignatureSkew,
	})
	if err != nil {
		return nil, intentd.Errorf(intentd.KindUnauthorized, intentd.CodeAgentSignatureInvalid, "%v", err)
	}
	return &intentd.AgentSignature{
		Key: v.KeyID, Tag: v.Tag, Nonce: v.Nonce, Created: v.Created, Expires: v.Expires,
		Base: v.Base, Signature: v.Signature, Body: body,
	}, nil
}

// challengeSignature adds to a 401 of an agent's signature the challenge RFC 9110
// requires of every 401, and the signature an agent should send (RFC 9421, 5.1).
func challengeSignature(w http.ResponseWriter, err error) {
	switch intentd.ErrorCode(err) {
	case intentd.CodeAgentSignatureRequired, intentd.CodeAgentSignatureInvalid, intentd.CodeAgentSignatureReplayed:
		w.Header().Set("WWW-Authenticate", `Signature realm="intentd"`)
		w.Header().Set("Accept-Signature", `sig1=("@method" "@authority" "@path" "content-digest");alg="ed25519"`)
	}
}
