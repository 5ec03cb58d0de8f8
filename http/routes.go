package http

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
)

// route is one route of the API: the role it needs ("" for none) and its handler. Its
// pattern is the route label of its metrics and request logs.
type route struct {
	method, pattern string
	role            Role
	handle          func(s *Server, w http.ResponseWriter, r *http.Request, ps httprouter.Params)
}

// routes is the one list of what the server serves: NewServer registers each with
// httprouter behind the request chain, and a test checks it against the OpenAPI
// document, so that no route goes without a role.
var routes = []route{
	{"GET", "/healthz", "", (*Server).handleHealth},
	{"GET", "/readyz", "", (*Server).handleReady},
	{"GET", "/openapi.json", RoleRead, (*Server).handleOpenAPI},
	{"GET", "/info", RoleRead, (*Server).handleInfo},
	{"GET", "/metrics", RoleMetrics, (*Server).handleMetrics},
	{"POST", "/policies", RoleAdmin, (*Server).handlePostPolicy},
	{"POST", "/policy-analysis", RoleAdmin, (*Server).handlePostPolicyAnalysis},
	{"GET", "/policies/:id", RoleRead, (*Server).handleGetPolicy},
	{"DELETE", "/policies/:id", RoleAdmin, (*Server).handleDeletePolicy},
	{"POST", "/intents", RoleSubmit, (*Server).handlePostIntent},
	{"GET", "/intents/:id", RoleRead, (*Server).handleGetIntent},
	{"GET", "/intents/:id/status", RoleRead, (*Server).handleGetStatus},
	{"GET", "/intents/:id/timeline", RoleRead, (*Server).handleGetTimeline},
	{"GET", "/intents/:id/requirements", RoleRead, (*Server).handleGetRequirements},
	{"POST", "/intents/:id/proposal", RolePropose, (*Server).handlePostProposal},
	{"POST", "/intents/:id/preview", RolePropose, (*Server).handlePostPreview},
	{"GET", "/intents/:id/proof", RoleRead, (*Server).handleGetProof},
	{"POST", "/mandates", RoleSubmit, (*Server).handlePostMandate},
	{"GET", "/mandates/:id", RoleRead, (*Server).handleGetMandate},
	{"GET", "/mandates/:id/status", RoleRead, (*Server).handleGetMandateStatus},
	{"POST", "/mandates/:id/purchases", RolePropose, (*Server).handlePostPurchase},
	{"POST", "/mandates/:id/revocation", RoleSubmit, (*Server).handlePostRevocation},
	{"GET", "/events", RoleRead, (*Server).handleEvents},
	{"GET", "/log/checkpoint", RoleRead, (*Server).handleLogCheckpoint},
	{"GET", "/log/tile/*path", RoleRead, (*Server).handleLogTile},
	{"GET", "/log/witnesses", RoleRead, (*Server).handleLogWitnesses},
	{"POST", "/mcp", RoleRead, (*Server).handleMCP},
	{"POST", "/admin/backup", RoleAdmin, (*Server).handleBackup},
	{"POST", "/webhooks", RoleAdmin, (*Server).handlePostWebhook},
	{"GET", "/webhooks", RoleAdmin, (*Server).handleGetWebhooks},
	{"GET", "/webhooks/:id", RoleAdmin, (*Server).handleGetWebhook},
	{"DELETE", "/webhooks/:id", RoleAdmin, (*Server).handleDeleteWebhook},
	{"POST", "/webhooks/:id/enable", RoleAdmin, (*Server).handleEnableWebhook},
	{"POST", "/webhooks/:id/disable", RoleAdmin, (*Server).handleDisableWebhook},
	{"POST", "/webhooks/:id/redeliver", RoleAdmin, (*Server).handleRedeliverWebhook},
	{"POST", "/webhooks/:id/send", RoleAdmin, (*Server).handleSendWebhook},
}

// unmatchedRoute is the route label of every request no route serves: a path that is
// none, a method its path does not serve, an OPTIONS request that is not an answered
// CORS preflight (which is counted under its pattern), a path with an empty id.
// One label for all of them keeps what a caller can send from growing the metrics.
const unmatchedRoute = "unmatched"

// newRouter registers every route, and the answers to requests that match none, each
// behind its own chain.
func (s *Server) newRouter() *httprouter.Router {
	r := httprouter.New()
	// Clients of an API are better told 404 than redirected: a redirected POST is
	// resent by some clients and dropped by others.
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	notFound := s.unmatched(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		Error(w, r, s.log, intentd.Errorf(intentd.KindNotFound, CodeNotFound, "no route %s", clip(r.URL.Path)))
	})
	r.NotFound = notFound
	for i := range routes {
		rt := &routes[i]
		h := s.chain(rt, false, func(w http.ResponseWriter, req *http.Request, ps httprouter.Params) {
			rt.handle(s, w, req, ps)
		})
		r.Handle(rt.method, rt.pattern, func(w http.ResponseWriter, req *http.Request, ps httprouter.Params) {
			// httprouter gives an empty segment to a parameter (/intents//status); an
			// id is never empty, so such a path is no route, answered and checked as
			// one, rather than by a handler behind a role it was not asked for.
			if emptyParam(ps) {
				notFound.ServeHTTP(w, req)
				return
			}
			h(w, req, ps)
		})
	}
	if s.opts.Console {
		s.routeConsole(r)
	}
	// httprouter sets Allow before calling this.
	r.MethodNotAllowed = s.unmatched(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		Error(w, r, s.log, intentd.Errorf(intentd.KindMethodNotAllowed, CodeMethodNotAllowed, "%s is not allowed on %s (allowed: %s)",
			r.Method, clip(r.URL.Path), w.Header().Get("Allow")))
	})
	// httprouter answers an OPTIONS request itself, with Allow and no body; through the
	// chain, it needs a token as any other unmatched request does, and is counted.
	options := s.unmatched(func(http.ResponseWriter, *http.Request, httprouter.Params) {})
	r.GlobalOPTIONS = options
	// Every pattern has an OPTIONS route, for the CORS preflights a browser sends before
	// calling it from another origin's page. A browser never sends a token with one, so
	// the preflight of an allowed origin is answered without; any other OPTIONS request
	// (another origin, no Origin, an empty id) is answered as httprouter would.
	patterns, preflights := newPreflights()
	for _, pattern := range patterns {
		p := preflights[pattern]
		answer := s.chain(&route{method: http.MethodOptions, pattern: pattern}, true,
			func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
				methods, origin := p.methods(s.cors, req.Header.Get("Origin"), s.authRequired)
				p.answer(w, methods, origin)
			})
		r.Handle(http.MethodOptions, pattern, func(w http.ResponseWriter, req *http.Request, ps httprouter.Params) {
			if isPreflight(req) && !emptyParam(ps) {
				if methods, _ := p.methods(s.cors, req.Header.Get("Origin"), s.authRequired); methods != "" {
					answer(w, req, ps)
					return
				}
			}
			w.Header().Set("Allow", p.allow)
			options.ServeHTTP(w, req)
		})
	}
	return r
}

// unmatched is the chain of the requests no route serves.
func (s *Server) unmatched(h httprouter.Handle) http.Handler {
	c := s.chain(nil, false, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c(w, r, nil) })
}

// chain wraps the handler of rt (nil: of the requests no route serves; preflight: of
// the CORS preflights of rt's pattern) in what every request goes through: its span
// (trace.go), the CORS headers of its origin, its token checked against the route's
// role, then the handler, then its count in the metrics and its log line. Everything the labels, the CORS
// headers and the log level depend on is known here, once, rather than looked up per
// request. Health checks are logged at debug, since load balancers ask every few
// seconds; every other request is logged at info when it failed, and when it did not
// only with Options.LogRequests (at debug otherwise).
func (s *Server) chain(rt *route, preflight bool, h httprouter.Handle) httprouter.Handle {
	pattern, method, idKey, level := unmatchedRoute, "", "", slog.LevelInfo
	name := spanName(rt)
	if rt != nil {
		pattern, method, idKey = rt.pattern, rt.method, idLogKey(rt.pattern)
		if rt.role == "" && !preflight {
			level = slog.LevelDebug
		}
	}
	okLevel := level // of a request answered without an error
	if !s.opts.LogRequests {
		okLevel = min(level, slog.LevelDebug)
	}
	// A request no route serves needs a token, as authorize has it.
	needsToken := s.authRequired && (rt == nil || rt.role != "")
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		start := time.Now()
		ri := &requestInfo{}
		ctx, span := s.tracing.start(r, name, pattern)
		r = r.WithContext(contextWithInfo(ctx, ri))
		rec := &statusRecorder{ResponseWriter: w}
		s.metrics.inFlight.Inc()

		// Before the token is checked, so that a page can read why it was refused. A
		// preflight's handler writes its own.
		if preflight {
			rec.Header().Add("Vary", "Origin")
		} else {
			s.cors.header(rec.Header(), r, needsToken)
		}
		c, err := s.authorize(r, rt)
		if err != nil {
			// Allow, which httprouter set for a 405 or an OPTIONS answer, would tell a
			// caller without a valid token which methods a path serves.
			rec.Header().Del("Allow")
			rec.Header().Set("WWW-Authenticate", challenge(intentd.ErrorCode(err), r.Header.Get("Authorization") != ""))
			Error(rec, r, s.log, err)
		} else {
			ri.caller = c
			s.call(h, rec, r, ps)
		}

		status := rec.status
		if status == 0 {
			status = http.StatusOK // net/http answers 200 for a handler that wrote nothing
		}
		elapsed := time.Since(start)
		s.tracing.end(span, status, ri.code, idKey, ps.ByName("id"))
		s.metrics.inFlight.Dec()
		m := method
		if rt == nil {
			m = methodLabel(r.Method)
		}
		s.metrics.requests.WithLabelValues(m, pattern, strconv.Itoa(status)).Inc()
		s.metrics.requestSeconds.WithLabelValues(m, pattern).Observe(elapsed.Seconds())
		if ri.code != "" {
			s.metrics.errors.WithLabelValues(pattern, errorCodeLabel(ri.code)).Inc()
			if ri.code == intentd.CodeCapacityExceeded {
				s.metrics.capacityRefused.Inc()
			}
		}

		level := level
		if status < 400 {
			level = okLevel
		}
		if !s.log.Enabled(ctx, level) {
			return
		}
		// Never the path's query, the headers or the body: they may hold tokens,
		// signatures or evidence. The route pattern and the id are enough to find a
		// request again.
		attrs := make([]slog.Attr, 0, 8)
		attrs = append(attrs, slog.String("method", r.Method), slog.String("route", pattern),
			slog.Int("status", status), slog.Duration("duration", elapsed))
		if id := ps.ByName("id"); idKey != "" && id != "" {
			attrs = append(attrs, slog.String(idKey, clip(id)))
		}
		if ri.code != "" {
			attrs = append(attrs, slog.String("code", ri.code))
		}
		if c.name != "" {
			attrs = append(attrs, slog.String("caller", c.name))
		}
		s.log.LogAttrs(ctx, level, "request", attrs...)
	}
}

// call runs a handler, answering 500 if it panics: the panic ends there, so that the
// chain still counts and logs the request.
func (s *Server) call(h httprouter.Handle, w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v) // a response already begun, ended broken on purpose (backup.go)
			}
			s.log.ErrorContext(r.Context(), "handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
			Error(w, r, s.log, intentd.Errorf(intentd.KindInternal, intentd.CodeInternal, "internal error"))
		}
	}()
	h(w, r, ps)
}

// emptyParam reports whether a parameter of a matched route is empty.
func emptyParam(ps httprouter.Params) bool {
	for _, p := range ps {
		if p.Value == "" {
			return true
		}
	}
	return false
}

// idLogKey is the request log's name for the :id of a pattern: what it identifies.
func idLogKey(pattern string) string {
	switch {
	case strings.HasPrefix(pattern, "/intents/:id"):
		return "intent_id"
	case strings.HasPrefix(pattern, "/policies/:id"):
		return "policy_id"
	case strings.HasPrefix(pattern, "/mandates/:id"):
		return "mandate_id"
	case strings.HasPrefix(pattern, "/webhooks/:id"):
		return "webhook_id"
	}
	return ""
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	serveOpenAPI(w, r)
}
