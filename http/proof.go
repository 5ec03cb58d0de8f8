package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// handleGetProof answers the proof bundle: the signed receipt with the authored intent,
// the proposal, the evidence and the policy bytecode it binds, enough to check it
// offline (docs/proofs.md). A malformed id is a 404, as for any GET.
func (s *Server) handleGetProof(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	b, err := s.engine.Proof(r.Context(), ps.ByName("id"))
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}
