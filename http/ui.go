package http

import (
	"bytes"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/http/console"
)

// The console's paths. Its files share one route label, so that the metrics have one
// series for the console however many files it has.
const (
	consolePrefix       = "/ui/"
	consoleFilesPattern = "/ui/"
	consoleMinutes      = "/ui/api/minutes"
)

// chartMinutes is how many minutes the Live page's chart covers, the current one last.
const chartMinutes = 60

// consoleHeaders are sent with every console file. The content security policy lets
// the pages load only their own files and talk only to this server, so that a page
// cannot be made to send a token or an intent elsewhere, and no inline script runs.
var consoleHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	// Revalidated on every load (a 304 is cheap), so that an upgraded server never
	// runs with the pages of the previous one.
	"Cache-Control": "no-cache",
}

// routeConsole registers the console: its files under /ui/, with /ui/ itself the
// index page (and GET / a redirect to it), config.json saying whether the API wants a token, and the minutes of the
// event log for the Live page's chart. The files need no token: they hold no data,
// and the page must load to ask for one; the minutes need the read role, as the
// stream they place does.
func (s *Server) routeConsole(r *httprouter.Router) {
	files := console.Files()
	files = append(files, console.File{
		Name:        "config.json",
		ContentType: "application/json",
		// Known before any request, so the page asks for a token before it calls the
		// API rather than after a refusal.
		Body: []byte(`{"auth_required":` + map[bool]string{true: "true", false: "false"}[s.opts.Tokens != nil] + "}\n"),
	})
	filesRoute := &route{method: http.MethodGet, pattern: consoleFilesPattern}
	for _, f := range files {
		p := consolePrefix + f.Name
		if f.Name == "index.html" {
			p = consolePrefix
		}
		r.Handle(http.MethodGet, p, s.chain(filesRoute, false, func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
			serveConsoleFile(w, req, f)
		}))
	}
	r.Handle(http.MethodGet, "/ui", s.chain(filesRoute, false, func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
		http.Redirect(w, req, consolePrefix, http.StatusMovedPermanently)
	}))
	// A browser pointed at the server's address finds the console. Only GET / itself:
	// every other path the API does not serve stays a 404. 302, not 301: a browser
	// keeps a permanent redirect, and the root may serve something else one day.
	r.Handle(http.MethodGet, "/", s.chain(filesRoute, false, func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
		http.Redirect(w, req, consolePrefix, http.StatusFound)
	}))
	minutes := &route{method: http.MethodGet, pattern: consoleMinutes, role: RoleRead}
	r.Handle(http.MethodGet, consoleMinutes, s.chain(minutes, false, func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
		s.handleConsoleMinutes(w, req)
	}))
}

func serveConsoleFile(w http.ResponseWriter, r *http.Request, f console.File) {
	h := w.Header()
	for k, v := range consoleHeaders {
		h.Set(k, v)
	}
	h.Set("Content-Type", f.ContentType)
	if f.ETag != "" {
		h.Set("ETag", f.ETag)
	}
	http.ServeContent(w, r, f.Name, time.Time{}, bytes.NewReader(f.Body))
}

// consoleMinutesAnswer places the minutes of the last hour in the event log, for the
// Live page's chart: the stream's events carry no time (spec part 6), and the page
// replays every retained one when it connects, so it needs the server to say which
// minute each id belongs to. An event with id n is of minute Minute-59+i when
// Before[i] < n <= Before[i+1] (Before[60] being LastID), older than the hour when
// n <= Before[0], and newer than the answer when n > LastID.
type consoleMinutesAnswer struct {
	// Now is the server's clock, so that the page counts the events it gets later in
	// the server's minutes.
	Now time.Time `json:"now"`
	// Minute is the current minute, in minutes since the Unix epoch.
	Minute int64    `json:"minute"`
	Before []uint64 `json:"before"`
	LastID uint64   `json:"last_id"`
	// RetainedFrom is when the oldest retained event was stored, when older ones were
	// pruned: the chart knows nothing of the minutes before it.
	RetainedFrom time.Time `json:"retained_from,omitzero"`
}

// handleConsoleMinutes answers the marks of the last hour's minutes. Its cost is
// bounded whatever the traffic: the engine finds each mark by halving the event log's
// ids. An engine that cannot answers 404 not_found, and the page counts events by
// when they reached it, saying so.
func (s *Server) handleConsoleMinutes(w http.ResponseWriter, r *http.Request) {
	em, ok := s.engine.(intentd.EventMarker)
	if !ok {
		Error(w, r, s.log, intentd.Errorf(intentd.KindNotFound, CodeNotFound, "this server's engine keeps no times of events"))
		return
	}
	now := time.Now()
	minute := now.Unix() / 60
	times := make([]time.Time, chartMinutes)
	for i := range times {
		times[i] = time.Unix((minute-chartMinutes+1+int64(i))*60, 0)
	}
	m, err := em.MarkEvents(r.Context(), times)
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, consoleMinutesAnswer{Now: now.UTC(), Minute: minute, Before: m.Before, LastID: m.Last, RetainedFrom: m.RetainedFrom.UTC()})
}
