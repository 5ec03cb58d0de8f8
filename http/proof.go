package http

import (
	"context"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd/actors"
)

// ProofSource is what GET /intents/{id}/proof needs of the engine. It is apart from
// Engine so that a wrapper of the engine made for other routes keeps compiling; an
// engine without it answers that route with an internal error. *actors.Engine has it.
type ProofSource interface {
	// Proof returns the proof bundle of a decided intent; its errors are those of
	// actors.Engine.Proof (404 intent_not_found, proof_not_ready, no_proof).
	Proof(ctx context.Context, id string) (*actors.ProofBundle, error)
}

var _ ProofSource = (*actors.Engine)(nil)

func (s *Server) registerProofRoutes(r *httprouter.Router) {
	r.GET("/intents/:id/proof", s.handleGetProof)
}

// handleGetProof answers the proof bundle: the signed receipt with the authored intent,
// the proposal, the evidence and the policy bytecode it binds, enough to check it
// offline (docs/proofs.md). A malformed id is a 404, as for any GET.
func (s *Server) handleGetProof(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	src, ok := s.engine.(ProofSource)
	if !ok {
		Error(w, r, s.log, actors.Errorf(actors.KindInternal, actors.CodeInternal, "the engine serves no proofs"))
		return
	}
	b, err := src.Proof(r.Context(), ps.ByName("id"))
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}
