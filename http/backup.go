package http

import (
	"io"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/intentd/intentd"
)

// Backup is one online backup of the store, prepared (a checkpoint taken) and ready to be
// written to the caller of POST /admin/backup.
type Backup interface {
	// WriteTo writes the whole backup; an error means what was written is not whole.
	io.WriterTo
	// Close releases what the backup holds (a checkpoint's folder), written or not.
	Close() error
	// Name is the file name the answer suggests, e.g. intentd-backup-20261129T070000Z.tar.gz.
	Name() string
}

// handleBackup answers POST /admin/backup with a backup of the store, a gzip-compressed
// tar (internal/backup) streamed as it is read. Errors met before the first byte are
// answered as errors; one met after cannot be, since the status is sent, so the
// connection is broken off instead of ended: the caller sees an incomplete answer, and
// the backup's missing list of files tells it so even if it kept the bytes.
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if s.opts.Backup == nil {
		Error(w, r, s.log, intentd.Errorf(intentd.KindNotFound, CodeNotFound, "this server takes no backups"))
		return
	}
	if !s.backingUp.CompareAndSwap(false, true) {
		Error(w, r, s.log, intentd.Errorf(intentd.KindBusy, intentd.CodeBackupInProgress, "a backup is being taken: one at a time; try again when it is done"))
		return
	}
	defer s.backingUp.Store(false)
	start := time.Now()
	b, err := s.opts.Backup(r.Context())
	if err != nil {
		Error(w, r, s.log, err)
		return
	}
	defer b.Close()
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", `attachment; filename="`+b.Name()+`"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The server's WriteTimeout counts from the request, and a checkpoint may have
	// taken some of it.
	_ = rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	// The status at once: the caller knows the backup began, and a failure from here
	// on is a broken answer, not a server that never answered.
	_ = rc.Flush()
	dw := &deadlineWriter{w: w, rc: rc, every: s.opts.WriteTimeout}
	n, err := b.WriteTo(dw)
	if err != nil {
		s.log.ErrorContext(r.Context(), "backup failed while it was sent: the answer is broken off", "err", err, "bytes", n)
		panic(http.ErrAbortHandler)
	}
	s.log.InfoContext(r.Context(), "backup taken", "bytes", n, "duration", time.Since(start).Round(time.Millisecond))
}

// deadlineWriter moves the connection's write deadline ahead of each write: the
// server's WriteTimeout bounds a whole answer, and a backup of some GiB takes longer,
// while a caller that stops reading must still be let go.
type deadlineWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	every time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.every))
	return d.w.Write(p)
}
