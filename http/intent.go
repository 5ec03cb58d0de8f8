package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
)

// handlePostIntent stores a new intent once the engine has verified its authorship and
// its policy. The 200 means it is on disk.
func (s *Server) handlePostIntent(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	body, err := s.jsonBody(w, r)
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	in, raw, auth, err := DecodeAuthoredIntent(body)
	if err == nil {
		// The limits are checked before the engine spends a signature check and a
		// policy lookup on the intent.
		err = s.opts.Limits.CheckIntent(in)
	}
	var sub intentd.Submission
	if err == nil {
		sub, err = intentd.NewSubmission(in, raw, auth)
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	if err := s.engine.SubmitIntent(r.Context(), sub); err != nil {
		Error(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleGetIntent answers the stored AuthoredIntent, the intent in the canonical form
// its signature covers. A malformed id is a 404 (the engine says so).
func (s *Server) handleGetIntent(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	raw, err := s.engine.GetIntent(r.Context(), ps.ByName("id"))
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeRawJSON(w, raw)
}

// handleGetStatus answers the intent's IntentStatus.
func (s *Server) handleGetStatus(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	st, err := s.engine.Status(r.Context(), ps.ByName("id"))
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// handleGetRequirements answers what the evidence about a solution must satisfy for
// the intent: its policy partially evaluated on its parameters. It is a read like the
// status, of what GET /intents/{id} and GET /policies/{id} read.
func (s *Server) handleGetRequirements(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	req, err := intentd.IntentRequirements(r.Context(), s.engine, ps.ByName("id"))
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

// handleGetTimeline answers the times of an intent, an extension of the API: the
// status and the event bodies are fixed by the spec and carry none, and an agent
// needs the deadline, a person the story. An engine that keeps no times answers 404
// not_found, which a caller tells from intent_not_found.
func (s *Server) handleGetTimeline(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	tr, ok := s.engine.(intentd.TimelineReader)
	if !ok {
		Error(w, r, s.log, intentd.Errorf(intentd.KindNotFound, CodeNotFound, "this server's engine keeps no times of intents"))
		return
	}
	t, err := tr.Timeline(r.Context(), ps.ByName("id"))
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// handlePostProposal accepts the one proposal of an open intent.
func (s *Server) handlePostProposal(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, p, body, err := s.proposalRequest(w, r, ps)
	var by *intentd.AgentSignature
	if err == nil {
		by, err = s.agentSignature(r, body)
	}
	if err == nil {
		err = s.engine.Propose(r.Context(), id, p, by)
	}
	if err != nil {
		challengeSignature(w, err)
		Error(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handlePostPreview answers what a proposal of the body would decide, and changes
// nothing. It takes the body of a proposal, checked the same way, so that a preview
// that passes is a proposal that will be accepted.
func (s *Server) handlePostPreview(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, p, _, err := s.proposalRequest(w, r, ps)
	var pv intentd.Preview
	if err == nil {
		pv, err = s.engine.Preview(r.Context(), id, p)
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, pv)
}

// proposalRequest reads the intent id and the Proposal body of a proposal or a
// preview, and returns the body as sent, which an agent's signature covers. The id is
// checked before the body, so that a malformed path is a 400 whatever the body holds.
func (s *Server) proposalRequest(w http.ResponseWriter, r *http.Request, ps httprouter.Params) (string, intentd.Proposal, []byte, error) {
	id := ps.ByName("id")
	if _, ok := intentd.CanonicalIntentID(id); !ok {
		return "", intentd.Proposal{}, nil, intentd.Errorf(intentd.KindInvalid, intentd.CodeInvalidID, "intent id %q is not a UUID (want the 36-character hyphenated form)", clip(id))
	}
	body, err := s.jsonBody(w, r)
	if err != nil {
		return "", intentd.Proposal{}, nil, err
	}
	p, err := DecodeProposal(body)
	if err == nil {
		err = s.opts.Limits.CheckSolution(p)
	}
	return id, p, body, err
}

// jsonBody checks the content type and reads the body within the limit.
func (s *Server) jsonBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := requireContentType(r, "application/json"); err != nil {
		return nil, err
	}
	return readBody(w, r, s.opts.MaxBodyBytes)
}

func writeRawJSON(w http.ResponseWriter, raw []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(raw)
	w.Write([]byte{'\n'})
}
