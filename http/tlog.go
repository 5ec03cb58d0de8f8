package http

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/tlog"
)

// The Cache-Control of the log's resources, as C2SP tlog-tiles asks. Tiles and entry
// bundles, full and partial alike, are "immutable, so [their] caching headers SHOULD be
// long-lived": what a path names never changes (a partial one grown is another path,
// .p/<W+1>), and this log never deletes a partial one once the full one exists, which
// the spec allows. The checkpoint "is mutable, so its headers SHOULD prevent caching
// beyond a few seconds": it changes each second while outcomes come, and a cache must
// ask again each time. A tile or bundle the log does not hold yet may exist a moment
// later, so that answer is not to be kept at all.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheCheckpoint = "no-cache"
	cacheMissing    = "no-store"
)

// handleLogCheckpoint answers the newest signed checkpoint, a C2SP signed note.
func (s *Server) handleLogCheckpoint(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if s.opts.Log == nil {
		Error(w, r, s.log, intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "this server keeps no transparency log"))
		return
	}
	cp, err := s.opts.Log.Checkpoint(r.Context())
	if err != nil {
		w.Header().Set("Cache-Control", cacheMissing)
		Error(w, r, s.log, err)
		return
	}
	writeLog(w, cacheCheckpoint, "text/plain; charset=utf-8", cp)
}

// handleLogTile answers a tile of hashes or an entry bundle. A path the layout does
// not spell is a 404, as a malformed id in any GET path.
func (s *Server) handleLogTile(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if s.opts.Log == nil {
		Error(w, r, s.log, intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "this server keeps no transparency log"))
		return
	}
	p := ps.ByName("path")
	t, err := tlog.ParseTilePath(p[1:]) // the catch-all keeps its leading slash
	if err != nil {
		Error(w, r, s.log, intentd.Errorf(intentd.KindNotFound, CodeNotFound, "no route %s: %v", clip(r.URL.Path), err))
		return
	}
	var body []byte
	if t.Entries {
		body, err = s.opts.Log.Entries(r.Context(), t.Index, t.Width)
	} else {
		body, err = s.opts.Log.Tile(r.Context(), t.Level, t.Index, t.Width)
	}
	if err != nil {
		w.Header().Set("Cache-Control", cacheMissing)
		Error(w, r, s.log, err)
		return
	}
	if t.Entries {
		// "Entry bundles SHOULD be compressed at the HTTP layer" (tlog-tiles), by
		// Accept-Encoding: the entries' JSON names and punctuation repeat, and gzip
		// halves a bundle (their ids and digests are random and do not compress). Tiles
		// of hashes do not compress at all.
		w.Header().Set("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Values("Accept-Encoding")) {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
			_, _ = zw.Write(body)
			if err := zw.Close(); err != nil {
				Error(w, r, s.log, intentd.Internal("gzip an entry bundle: %w", err))
				return
			}
			body = buf.Bytes()
			w.Header().Set("Content-Encoding", "gzip")
		}
	}
	writeLog(w, cacheImmutable, "application/octet-stream", body)
}

// acceptsGzip reports whether Accept-Encoding values accept gzip: named with a quality
// above zero, or not named and "*" accepted so.
func acceptsGzip(values []string) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
					if err != nil {
						f = 0
					}
					q = f
				}
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				gzipQ = max(gzipQ, q)
			case "*":
				starQ = max(starQ, q)
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

func writeLog(w http.ResponseWriter, cache, contentType string, body []byte) {
	h := w.Header()
	h.Set("Cache-Control", cache)
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
