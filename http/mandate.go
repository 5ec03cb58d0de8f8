package http

import (
	"encoding/json"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/strictjson"
)

// The routes of mandates (docs/mandates.md), served over an engine that implements
// intentd.MandateEngine; over any other they answer 404 not_found.

// mandates is the server's engine of mandates, or an error for an engine without.
func (s *Server) mandates() (intentd.MandateEngine, error) {
	me, ok := s.engine.(intentd.MandateEngine)
	if !ok {
		return nil, intentd.Errorf(intentd.KindNotFound, CodeNotFound, "this server's engine keeps no mandates")
	}
	return me, nil
}

// handlePostMandate stores a new mandate once the engine has verified its authorship
// and its policy. The 200 means it is stored.
func (s *Server) handlePostMandate(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	me, err := s.mandates()
	var body []byte
	if err == nil {
		body, err = s.jsonBody(w, r)
	}
	var sub intentd.MandateSubmission
	if err == nil {
		sub, err = DecodeAuthoredMandate(body)
	}
	if err == nil {
		err = me.CreateMandate(r.Context(), sub)
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleGetMandate answers the stored AuthoredMandate, the mandate in the canonical
// form its signature covers.
func (s *Server) handleGetMandate(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	me, err := s.mandates()
	var raw json.RawMessage
	if err == nil {
		raw, err = me.GetMandate(r.Context(), ps.ByName("id"))
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeRawJSON(w, raw)
}

// handleGetMandateStatus answers the mandate's status and totals.
func (s *Server) handleGetMandateStatus(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	me, err := s.mandates()
	var st intentd.MandateStatus
	if err == nil {
		st, err = me.MandateStatus(r.Context(), ps.ByName("id"))
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// handlePostPurchase takes a purchase under a mandate: its intent is created and its
// proposal made. The 200 means the proposal is accepted, durably, as a proposal's 200
// does; the outcome follows on the intent.
func (s *Server) handlePostPurchase(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	me, err := s.mandates()
	var body []byte
	if err == nil {
		body, err = s.jsonBody(w, r)
	}
	var pu intentd.Purchase
	if err == nil {
		pu, err = DecodePurchase(body)
	}
	if err == nil {
		err = s.opts.Limits.CheckSolution(intentd.Proposal{Solution: pu.Solution})
	}
	var by *intentd.AgentSignature
	if err == nil {
		by, err = s.agentSignature(r, body)
	}
	if err == nil {
		err = me.Purchase(r.Context(), ps.ByName("id"), pu, by)
	}
	if err != nil {
		challengeSignature(w, err)
		Error(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handlePostRevocation takes the author's revocation of a mandate.
func (s *Server) handlePostRevocation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	me, err := s.mandates()
	var body []byte
	if err == nil {
		body, err = s.jsonBody(w, r)
	}
	var rv intentd.Revocation
	if err == nil {
		rv, err = DecodeAuthoredRevocation(body, ps.ByName("id"))
	}
	if err == nil {
		err = me.RevokeMandate(r.Context(), ps.ByName("id"), rv)
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// DecodeAuthoredMandate decodes the body of POST /mandates strictly: exactly
// {"mandate": Mandate, "authorship": Authorship}. Text that is not JSON is KindInvalid
// (invalid_json); an authorship that does not decode is KindUnprocessable
// (malformed_authorship); anything else it refuses, of the body or of the mandate
// (intentd.DecodeMandate), is KindUnprocessable (invalid_mandate), named in the message.
func DecodeAuthoredMandate(body []byte) (intentd.MandateSubmission, error) {
	raw, auth, err := authoredBody(body, "mandate", intentd.CodeInvalidMandate)
	if err != nil {
		return intentd.MandateSubmission{}, err
	}
	md, err := intentd.DecodeMandate(raw)
	if err != nil {
		return intentd.MandateSubmission{}, err
	}
	return intentd.NewMandateSubmission(md, raw, auth)
}

// DecodeAuthoredRevocation decodes the body of POST /mandates/{id}/revocation
// strictly: exactly {"revocation": {"mandate_id": id}, "authorship": Authorship}, id in
// any case. Text that is not JSON is KindInvalid (invalid_json); an authorship that does
// not decode is KindUnprocessable (malformed_authorship); anything else it refuses, a
// revocation of another mandate among them, is KindUnprocessable (invalid_revocation).
func DecodeAuthoredRevocation(body []byte, id string) (intentd.Revocation, error) {
	raw, auth, err := authoredBody(body, "revocation", intentd.CodeInvalidRevocation)
	if err != nil {
		return intentd.Revocation{}, err
	}
	canon, err := intentd.DecodeRevocation(raw, id)
	if err != nil {
		return intentd.Revocation{}, err
	}
	return intentd.Revocation{Canonical: canon, Authorship: auth}, nil
}

// authoredBody reads a body of exactly an object under name and its authorship, as
// an AuthoredIntent is: the object's JSON as sent, and the authorship decoded.
func authoredBody(body []byte, name, code string) (json.RawMessage, crypto.Authorship, error) {
	shape := `a body has exactly "` + name + `" and "authorship"`
	ms, err := bodyMembers(body, "body", code, shape)
	if err != nil {
		return nil, crypto.Authorship{}, err
	}
	obj, rawAuth, unknown := ms.get(name), ms.get("authorship"), ms.other(name, "authorship")
	switch {
	case unknown != "":
		return nil, crypto.Authorship{}, intentd.Errorf(intentd.KindUnprocessable, code, "%s: unknown field (%s)", unknown, shape)
	case obj == nil:
		return nil, crypto.Authorship{}, intentd.Errorf(intentd.KindUnprocessable, code, "%s: missing", name)
	case rawAuth == nil:
		return nil, crypto.Authorship{}, intentd.Errorf(intentd.KindUnprocessable, CodeMalformedAuthorship, "authorship: missing")
	}
	auth, err := decodeAuthorship(rawAuth)
	if err != nil {
		return nil, crypto.Authorship{}, err
	}
	return json.RawMessage(obj), auth, nil
}

// DecodePurchase decodes the body of POST /mandates/{id}/purchases strictly: exactly
// {"intent_id": string, "solution": string}. Whether the id is a UUID and the
// solution fits is the engine's to say. Text that is not JSON is KindInvalid
// (invalid_json); anything else it refuses is KindUnprocessable (invalid_purchase).
func DecodePurchase(body []byte) (intentd.Purchase, error) {
	ms, err := bodyMembers(body, "body", intentd.CodeInvalidPurchase, `a purchase has exactly "intent_id" and "solution"`)
	if err != nil {
		return intentd.Purchase{}, err
	}
	if unknown := ms.other("intent_id", "solution"); unknown != "" {
		return intentd.Purchase{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidPurchase,
			"%s: unknown field (a purchase has exactly \"intent_id\" and \"solution\")", unknown)
	}
	var pu intentd.Purchase
	for _, f := range []struct {
		name string
		to   *string
	}{{"intent_id", &pu.IntentID}, {"solution", &pu.Solution}} {
		raw := ms.get(f.name)
		switch {
		case raw == nil:
			return intentd.Purchase{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidPurchase, "%s: missing", f.name)
		case raw.Kind() != '"':
			return intentd.Purchase{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidPurchase,
				"%s: must be a string, got a JSON %s", f.name, strictjson.KindName(raw.Kind()))
		}
		s, err := jsontext.AppendUnquote(nil, raw)
		if err != nil {
			return intentd.Purchase{}, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidPurchase, "%s: %v", f.name, err)
		}
		*f.to = string(s)
	}
	return pu, nil
}
