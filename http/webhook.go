package http

import (
	"encoding/json"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
)

// The routes of webhook endpoints (docs/webhooks.md), all an admin's: an endpoint's URL
// says where the service's outcomes go.

// webhooks is the server's manager of webhooks, or the error of a server without.
func (s *Server) webhooks() (intentd.WebhookManager, error) {
	if s.opts.Webhooks == nil {
		return nil, intentd.Errorf(intentd.KindBusy, intentd.CodeWebhooksUnavailable, "this server delivers no webhooks")
	}
	return s.opts.Webhooks, nil
}

// handlePostWebhook registers an endpoint and answers it with its secret, this once.
func (s *Server) handlePostWebhook(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	wm, err := s.webhooks()
	var body []byte
	if err == nil {
		body, err = s.jsonBody(w, r)
	}
	var spec intentd.WebhookSpec
	if err == nil {
		spec, err = DecodeWebhookSpec(body)
	}
	var wh intentd.Webhook
	if err == nil {
		wh, err = wm.CreateWebhook(r.Context(), spec)
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, wh)
}

// webhookList is the body of GET /webhooks.
type webhookList struct {
	Webhooks []intentd.Webhook `json:"webhooks"`
	// PublicKey is the whpk_ key of v1a signatures, as GET /info gives it.
	PublicKey string `json:"public_key,omitempty"`
}

// handleGetWebhooks lists the endpoints.
func (s *Server) handleGetWebhooks(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	wm, err := s.webhooks()
	var list []intentd.Webhook
	if err == nil {
		list, err = wm.Webhooks(r.Context())
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookList{Webhooks: list, PublicKey: wm.PublicKey()})
}

// handleGetWebhook answers one endpoint and where its deliveries stand.
func (s *Server) handleGetWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	s.answerWebhook(w, r, func(wm intentd.WebhookManager) (intentd.Webhook, error) {
		return wm.Webhook(r.Context(), ps.ByName("id"))
	})
}

// handleDeleteWebhook removes an endpoint; its deliveries stop.
func (s *Server) handleDeleteWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	wm, err := s.webhooks()
	if err == nil {
		err = wm.DeleteWebhook(r.Context(), ps.ByName("id"))
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleEnableWebhook enables an endpoint again, its retry schedule from the start.
func (s *Server) handleEnableWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	s.answerWebhook(w, r, func(wm intentd.WebhookManager) (intentd.Webhook, error) {
		return wm.SetWebhookEnabled(r.Context(), ps.ByName("id"), true)
	})
}

// handleDisableWebhook stops an endpoint's deliveries, keeping its place.
func (s *Server) handleDisableWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	s.answerWebhook(w, r, func(wm intentd.WebhookManager) (intentd.Webhook, error) {
		return wm.SetWebhookEnabled(r.Context(), ps.ByName("id"), false)
	})
}

// handleRedeliverWebhook moves an endpoint back to deliver the events from an id on.
func (s *Server) handleRedeliverWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	s.answerWebhook(w, r, func(wm intentd.WebhookManager) (intentd.Webhook, error) {
		body, err := s.jsonBody(w, r)
		if err != nil {
			return intentd.Webhook{}, err
		}
		id, err := decodeEventIDBody(body, "from_event_id")
		if err != nil {
			return intentd.Webhook{}, err
		}
		return wm.Redeliver(r.Context(), ps.ByName("id"), id)
	})
}

// handleSendWebhook sends one event to an endpoint now and answers the attempt.
func (s *Server) handleSendWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	wm, err := s.webhooks()
	var body []byte
	if err == nil {
		body, err = s.jsonBody(w, r)
	}
	var id uint64
	if err == nil {
		id, err = decodeEventIDBody(body, "event_id")
	}
	var a intentd.WebhookAttempt
	if err == nil {
		a, err = wm.SendEvent(r.Context(), ps.ByName("id"), id)
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) answerWebhook(w http.ResponseWriter, r *http.Request, fn func(intentd.WebhookManager) (intentd.Webhook, error)) {
	wm, err := s.webhooks()
	var wh intentd.Webhook
	if err == nil {
		wh, err = fn(wm)
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, wh)
}

// webhookShape is what a webhook body may hold, for messages.
const webhookShape = `a webhook has "url" and optionally "types", "policy_ids", "mandate_ids", "asymmetric" and "max_in_flight"`

// DecodeWebhookSpec decodes the body of POST /webhooks strictly: "url" (a string), and
// optionally "types", "policy_ids", "mandate_ids" (arrays of strings), "asymmetric" (a
// boolean) and "max_in_flight" (an integer). Text that is not JSON is KindInvalid;
// anything else it refuses is KindUnprocessable (invalid_webhook) naming the member.
func DecodeWebhookSpec(body []byte) (intentd.WebhookSpec, error) {
	var spec intentd.WebhookSpec
	ms, err := bodyMembers(body, "body", intentd.CodeInvalidWebhook, webhookShape)
	if err != nil {
		return spec, err
	}
	bad := func(format string, args ...any) error {
		return intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidWebhook, format, args...)
	}
	if unknown := ms.other("url", "types", "policy_ids", "mandate_ids", "asymmetric", "max_in_flight"); unknown != "" {
		return spec, bad("%s: unknown field (%s)", unknown, webhookShape)
	}
	raw := ms.get("url")
	if raw == nil {
		return spec, bad("url: missing")
	}
	if raw.Kind() != '"' || json.Unmarshal(raw, &spec.URL) != nil {
		return spec, bad("url: must be a string")
	}
	var types []string
	for _, f := range []struct {
		name string
		to   *[]string
	}{{"types", &types}, {"policy_ids", &spec.PolicyIDs}, {"mandate_ids", &spec.MandateIDs}} {
		raw := ms.get(f.name)
		if raw == nil {
			continue
		}
		if raw.Kind() != '[' || json.Unmarshal(raw, f.to) != nil {
			return spec, bad("%s: must be an array of strings", f.name)
		}
	}
	for _, t := range types {
		spec.Types = append(spec.Types, intentd.State(t))
	}
	if raw := ms.get("asymmetric"); raw != nil {
		if k := raw.Kind(); k != 't' && k != 'f' {
			return spec, bad("asymmetric: must be true or false")
		}
		spec.Asymmetric = raw.Kind() == 't'
	}
	if raw := ms.get("max_in_flight"); raw != nil {
		if raw.Kind() != '0' || json.Unmarshal(raw, &spec.MaxInFlight) != nil {
			return spec, bad("max_in_flight: must be an integer")
		}
		if spec.MaxInFlight < 1 {
			return spec, bad("max_in_flight: %d, want 1 to 32", spec.MaxInFlight)
		}
	}
	return spec, nil
}

// decodeEventIDBody decodes a body of exactly {name: integer}, an event id.
func decodeEventIDBody(body []byte, name string) (uint64, error) {
	shape := `a body of exactly {"` + name + `": event id}`
	ms, err := bodyMembers(body, "body", intentd.CodeInvalidWebhook, shape)
	if err != nil {
		return 0, err
	}
	if unknown := ms.other(name); unknown != "" {
		return 0, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidWebhook, "%s: unknown field (%s)", unknown, shape)
	}
	raw := ms.get(name)
	var id uint64
	if raw == nil {
		return 0, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidWebhook, "%s: missing", name)
	}
	if raw.Kind() != '0' || json.Unmarshal(raw, &id) != nil || id == 0 {
		return 0, intentd.Errorf(intentd.KindUnprocessable, intentd.CodeInvalidWebhook, "%s: must be an event id, an integer from 1", name)
	}
	return id, nil
}
