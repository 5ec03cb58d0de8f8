package http

import (
	"io"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
)

// handlePostPolicy compiles and stores a policy source (text/plain) and answers its id
// as a JSON string. A compile error is a 400 listing every error with line and column.
func (s *Server) handlePostPolicy(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	body, err := s.readPolicySource(w, r)
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	id, err := s.engine.PutPolicy(r.Context(), string(body))
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, id)
}

// readPolicySource reads a policy source: a text/plain body within the body limit and
// the policy source limit.
func (s *Server) readPolicySource(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := requireContentType(r, "text/plain"); err != nil {
		return nil, err
	}
	body, err := readBody(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	return body, s.opts.Limits.CheckPolicySource(body)
}

// handleGetPolicy answers the canonical pretty form of a policy as text/plain. An id
// that is not a policy id cannot name a policy: 404, as for any GET of a missing thing.
func (s *Server) handleGetPolicy(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id := ps.ByName("id")
	if !intentd.ValidPolicyID(id) {
		Error(w, r, s.log, policyNotFound(id))
		return
	}
	p, err := s.engine.Policy(r.Context(), id)
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, p.Pretty())
}

// handleDeletePolicy deletes a policy that no open or processing intent names.
func (s *Server) handleDeletePolicy(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id := ps.ByName("id")
	if !intentd.ValidPolicyID(id) {
		Error(w, r, s.log, policyNotFound(id))
		return
	}
	if err := s.engine.DeletePolicy(r.Context(), id); err != nil {
		Error(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func policyNotFound(id string) error {
	return intentd.Errorf(intentd.KindNotFound, intentd.CodePolicyNotFound, "policy %q not found: not a Base58 SHA-256 digest", clip(id))
}
