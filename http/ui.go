package http

import (
	"bytes"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd/http/console"
)

// The console's paths. Its files share one route label, so that the metrics have one
// series for the console however many files it has.
const (
	consolePrefix       = "/ui/"
	consoleFilesPattern = "/ui/"
)

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
// index page, and config.json saying whether the API wants a token. The files need no
// token: they hold no data, and the page must load to ask for one.
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
