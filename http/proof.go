package http

import (
	"context"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
)

// handleGetProof answers the proof bundle: the signed receipt with the authored intent,
// the proposal, the evidence and the policy bytecode it binds, enough to check it
// offline (docs/proofs.md), and, when the server keeps a transparency log (or, a member
// of a cluster that keeps none, reads one from a member that does) and the outcome is
// in it, the outcome's leaf with its inclusion proof and checkpoint. A
// malformed id is a 404, as for any GET.
func (s *Server) handleGetProof(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	b, err := s.proof(r.Context(), ps.ByName("id"))
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// proof is the proof bundle this server answers, at GET /intents/{id}/proof and by the
// MCP tool get_proof alike: the engine's, with the outcome's log inclusion added, since
// the log is the server's and not the engine's.
func (s *Server) proof(ctx context.Context, id string) (*intentd.ProofBundle, error) {
	b, err := s.engine.Proof(ctx, id)
	if err != nil {
		return nil, err
	}
	// A receipt signed with an earlier key is not shown with a checkpoint signed by
	// the current one: a verifier checks both under the key the receipt names.
	if s.opts.Log != nil && b.Receipt.Receipt.KeyID == s.opts.Info.KeyID {
		inc, witnessed, err := s.opts.Log.Inclusion(ctx, b.Receipt.Receipt.IntentID)
		if inc != nil {
			b.LogWitnesses = witnessed
		}
		switch {
		case err == nil:
		case intentd.ErrorKind(err) == intentd.KindInternal:
			// The receipt stands without its inclusion; a reader asks again.
			s.log.ErrorContext(ctx, "transparency log inclusion", "intent_id", b.Receipt.Receipt.IntentID, "err", err)
		case intentd.ErrorKind(err) == intentd.KindNotFound:
			// A cluster's member that keeps no log, in a cluster where none keeps
			// one: as a server with no log, the bundle has none.
		default:
			// No member that keeps the log answered, or could take the read, or
			// the reader left: the receipt stands without its inclusion.
			s.log.DebugContext(ctx, "transparency log inclusion", "intent_id", b.Receipt.Receipt.IntentID, "err", err)
		}
		b.Log = inc
	}
	return b, nil
}
