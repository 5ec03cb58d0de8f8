package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	intenthttp "github.com/intentd/intentd/http"
	"github.com/intentd/intentd/internal/backup"
	"github.com/intentd/intentd/internal/buildinfo"
	"github.com/intentd/intentd/natsstore"
)

// The members of a backup beside the store's own files (internal/backup gives the
// format): the signing key, when it lives in the data folder, and a NATS stream's
// records, in pieces of natsChunk bytes so that each is a tar member of known size
// without a file of its own on the server.
const (
	keyMember      = crypto.SigningKeyFile
	natsMemberDir  = "nats-stream/"
	natsChunkBytes = 8 << 20
)

// backup takes an online backup of the store for POST /admin/backup: a checkpoint of
// Pebble, or the NATS stream read out in order (natsstore.Backup), with the signing key
// when it is in the data folder. The transparency log is not in it: it is rebuilt from
// the store at the first start on the restored folder, the same tree under the same
// checkpoints (docs/operating.md, "Backups and restore").
func (m *Main) backup(ctx context.Context) (intenthttp.Backup, error) {
	key, err := m.keyForBackup()
	if err != nil {
		return nil, intentd.Internal("backup: read the signing key: %w", err)
	}
	at := time.Now().UTC()
	switch {
	case m.pebble != nil:
		dir, err := m.pebble.Checkpoint()
		if errors.Is(err, intentd.ErrStorageFull) {
			return nil, &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStorageFull,
				Message: "the data folder's disk has no room for the backup's checkpoint (its write-ahead log is copied): free some and try again", Err: err}
		}
		if err != nil {
			return nil, intentd.Internal("backup: %w", err)
		}
		return &pebbleBackup{dir: dir, key: key, at: at}, nil
	case m.nats != nil:
		return &natsBackup{ctx: ctx, store: m.nats, key: key, at: at}, nil
	}
	return nil, intentd.Errorf(intentd.KindNotFound, intentd.CodeNotFound, "this store takes no backups")
}

// keyForBackup is the signing key file's content when the key lives in the data folder,
// nil when --signing-key keeps it elsewhere: a key kept apart is the operator's to back
// up apart.
func (m *Main) keyForBackup() ([]byte, error) {
	if m.Config.SigningKey != "" {
		return nil, nil
	}
	return os.ReadFile(filepath.Join(m.Config.DataDir, crypto.SigningKeyFile))
}

func backupName(at time.Time) string {
	return "intentd-backup-" + at.Format("20060102T150405Z") + ".tar.gz"
}

// pebbleBackup is a checkpoint of the Pebble store, written as a backup.
type pebbleBackup struct {
	dir string
	key []byte
	at  time.Time
}

func (b *pebbleBackup) Name() string { return backupName(b.at) }

// Close removes the checkpoint.
func (b *pebbleBackup) Close() error { return os.RemoveAll(b.dir) }

func (b *pebbleBackup) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw, err := backup.NewWriter(cw, backup.Header{Store: backup.StorePebble, Created: b.at, Version: buildinfo.Read().Version})
	if err != nil {
		return cw.n, err
	}
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return cw.n, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return cw.n, fmt.Errorf("the checkpoint holds %s, which is not a file", e.Name())
		}
		if err := bw.AddFile(e.Name(), filepath.Join(b.dir, e.Name())); err != nil {
			return cw.n, err
		}
	}
	if err := addKey(bw, b.key); err != nil {
		return cw.n, err
	}
	return cw.n, bw.Close()
}

func addKey(bw *backup.Writer, key []byte) error {
	if key == nil {
		return nil
	}
	return bw.Add(keyMember, int64(len(key)), bytes.NewReader(key))
}

// natsBackup is the NATS stream read out while it is written.
type natsBackup struct {
	ctx   context.Context
	store *natsstore.Store
	key   []byte
	at    time.Time
}

func (b *natsBackup) Name() string { return backupName(b.at) }

// Close has nothing to release: the stream is read as the backup is written.
func (b *natsBackup) Close() error { return nil }

func (b *natsBackup) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw, err := backup.NewWriter(cw, backup.Header{Store: backup.StoreNATS, Created: b.at, Version: buildinfo.Read().Version, Stream: b.store.StreamName()})
	if err != nil {
		return cw.n, err
	}
	if err := addKey(bw, b.key); err != nil {
		return cw.n, err
	}
	chunks := &chunkWriter{bw: bw}
	if _, err := b.store.Backup(b.ctx, chunks); err != nil {
		return cw.n, err
	}
	if err := chunks.flush(); err != nil {
		return cw.n, err
	}
	return cw.n, bw.Close()
}

// chunkWriter cuts the stream's records into members of natsChunkBytes.
type chunkWriter struct {
	bw  *backup.Writer
	buf bytes.Buffer
	n   int
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if c.buf.Len() >= natsChunkBytes {
		if err := c.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *chunkWriter) flush() error {
	if c.buf.Len() == 0 {
		return nil
	}
	c.n++
	err := c.bw.Add(fmt.Sprintf("%s%06d", natsMemberDir, c.n), int64(c.buf.Len()), &c.buf)
	c.buf.Reset()
	return err
}

// natsChunks reads the stream's pieces of an extracted backup in order, as one.
func natsChunks(dir string) (io.ReadCloser, error) {
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(natsMemberDir)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errors.New("the backup holds no records of a NATS stream")
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	files := make([]io.Reader, 0, len(names))
	closers := make([]io.Closer, 0, len(names))
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(natsMemberDir), n))
		if err != nil {
			for _, c := range closers {
				c.Close()
			}
			return nil, err
		}
		files, closers = append(files, f), append(closers, f)
	}
	return multiCloser{io.MultiReader(files...), closers}, nil
}

type multiCloser struct {
	io.Reader
	closers []io.Closer
}

func (m multiCloser) Close() error {
	for _, c := range m.closers {
		c.Close()
	}
	return nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
