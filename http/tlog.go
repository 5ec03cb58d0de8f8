package http

import (
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/tlog"
)

// TransparencyLog is the log of outcomes served under /log/ in the C2SP tlog-tiles
// layout, and asked for the inclusion proofs that proof bundles carry; *tlog.Log is
// the one the service runs.
type TransparencyLog interface {
	// Checkpoint returns the newest signed checkpoint.
	Checkpoint() []byte
	// Tile returns a tile of hashes; KindNotFound while the log lacks it.
	Tile(level, index uint64, width int) ([]byte, error)
	// Entries returns an entry bundle; KindNotFound while the log lacks it.
	Entries(index uint64, width int) ([]byte, error)
	// Inclusion returns the inclusion of an intent's outcome, or nil while it is not
	// in the log.
	Inclusion(intentID string) (*intentd.LogInclusion, error)
}

// The Cache-Control of the log's resources, as tlog-tiles advises. A full tile or
// bundle never changes, nor does a partial one (a later one has another width, so
// another path), but a partial one is soon replaced, and a cache need not keep it
// long. The checkpoint changes each second while outcomes come: a reader must not be
// served one older than that.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cachePartial    = "public, max-age=60"
	cacheCheckpoint = "no-cache"
)

// handleLogCheckpoint answers the newest signed checkpoint, a C2SP signed note.
func (s *Server) handleLogCheckpoint(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if s.opts.Log == nil {
		Error(w, r, s.log, intentd.Errorf(intentd.KindNotFound, intentd.CodeLogNotFound, "this server keeps no transparency log"))
		return
	}
	writeLog(w, cacheCheckpoint, "text/plain; charset=utf-8", s.opts.Log.Checkpoint())
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
		body, err = s.opts.Log.Entries(t.Index, t.Width)
	} else {
		body, err = s.opts.Log.Tile(t.Level, t.Index, t.Width)
	}
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	cache := cacheImmutable
	if t.Width < tlog.TileWidth {
		cache = cachePartial
	}
	writeLog(w, cache, "application/octet-stream", body)
}

func writeLog(w http.ResponseWriter, cache, contentType string, body []byte) {
	h := w.Header()
	h.Set("Cache-Control", cache)
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
