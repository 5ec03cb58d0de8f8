package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/backup"
	"github.com/intentd/intentd/internal/secretfile"
	"github.com/intentd/intentd/natsstore"
	"github.com/intentd/intentd/persistence"
)

// restoreUsage is the usage line of `intentd restore`.
const restoreUsage = "usage: intentd restore [flags] FILE (the flags intentd runs with: --data, --store, --nats-embed, --signing-key, ...; FILE - reads standard input)"

// runRestore is `intentd restore [flags] FILE`: it takes the flags intentd runs with,
// so that the store restored is the one the next start opens.
func runRestore(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || (strings.HasPrefix(args[len(args)-1], "-") && args[len(args)-1] != "-") {
		fmt.Fprintln(stderr, "intentd restore:", restoreUsage)
		return 2
	}
	m := NewMain()
	m.Stdout, m.Stderr = stdout, stderr
	if err := m.ParseFlags(args[:len(args)-1]); err != nil {
		fmt.Fprintln(stderr, "intentd restore:", err)
		return 2
	}
	file := args[len(args)-1]
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintln(stderr, "intentd restore:", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	msg, err := m.Restore(ctx, in)
	if err != nil {
		fmt.Fprintf(stderr, "intentd restore: %s: %v\n", file, err)
		return 1
	}
	fmt.Fprintln(stdout, msg)
	return 0
}

// Restore brings the backup read from r back where the flags put the store: a Pebble
// data folder, the stream of a NATS store, or an embedded NATS server's data folder.
// The target must be new (a folder missing or empty, no stream of the store's name),
// and it is never left half restored: the backup is unpacked and checked whole in a
// folder beside the target, the store opened there once, and only then moved into
// place; a NATS stream that could not be written whole is deleted again. It returns a
// line saying what was restored.
func (m *Main) Restore(ctx context.Context, r io.Reader) (string, error) {
	c := m.Config
	if c.Cluster.Bind != "" {
		return "", errors.New("restore a cluster's store once, with the flags of one member but --cluster-bind, before any member starts")
	}
	data, err := filepath.Abs(c.DataDir)
	if err != nil {
		return "", err
	}
	external := c.Store != "pebble" && !c.Nats.Embed
	if !external {
		if err := emptyTarget("the data folder", data); err != nil {
			return "", err
		}
	}
	if c.Tlog.Dir != "" {
		// A log kept apart and left as it was would hold the outcomes recorded after the
		// backup, which the restored store lacks.
		if err := emptyTarget("the log folder (--tlog-dir)", c.Tlog.Dir); err != nil {
			return "", fmt.Errorf("%w; the log is rebuilt from the restored store at its first start", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(data), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(data), "."+filepath.Base(data)+".restore-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// backup.Extract makes the folder itself.
	if err := os.Remove(tmp); err != nil {
		return "", err
	}
	h, err := backup.Extract(r, tmp)
	if err != nil {
		return "", err
	}
	want := backup.StorePebble
	if c.Store != "pebble" || c.Nats.Embed {
		want = backup.StoreNATS
	}
	if h.Store != want {
		return "", fmt.Errorf("the backup holds a %s store, and the flags name a %s one (--store, --nats-embed)", h.Store, want)
	}
	if stream := natsstore.StreamOf(c.Nats.Prefix); h.Store == backup.StoreNATS && h.Stream != stream {
		return "", fmt.Errorf("the backup holds stream %s, and --nats-prefix %q names stream %s: give the prefix the backed-up server ran with", h.Stream, c.Nats.Prefix, stream)
	}
	if err := m.placeKey(tmp); err != nil {
		return "", err
	}
	var what string
	switch {
	case h.Store == backup.StorePebble:
		what, err = m.restorePebble(tmp)
	case c.Nats.Embed:
		what, err = m.restoreEmbedded(ctx, tmp)
	default:
		what, err = m.restoreNATS(ctx, tmp, c.Nats.Options, strings.Split(c.Store, ","))
	}
	if err != nil {
		return "", err
	}
	if !external {
		if err := os.Remove(data); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if err := os.Rename(tmp, data); err != nil {
			return "", err
		}
		if err := syncDir(filepath.Dir(data)); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("restored the backup of %s into %s; start intentd with the same flags", h.Created.Format("2006-01-02 15:04:05 UTC"), what), nil
}

// emptyTarget refuses a folder (what) that holds anything.
func emptyTarget(what, dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s %s is not empty: a restore goes into a new or empty folder, and never writes over a store (move it away first)", what, dir)
	}
	return nil
}

// placeKey puts the signing key of the backup where the flags say it is kept: in the
// folder restored, or at --signing-key, which must then be missing or hold the same key.
// A backup taken with the key kept apart holds none: the key must be there already.
func (m *Main) placeKey(tmp string) error {
	in := filepath.Join(tmp, keyMember)
	key, err := os.ReadFile(in)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := crypto.ParseSigningKey(key); err != nil {
		return fmt.Errorf("the backup's signing key does not read: %w", err)
	}
	to := m.Config.SigningKey
	folder := m.Config.Store == "pebble" || m.Config.Nats.Embed // tmp becomes the data folder
	if to == "" && folder {
		return os.Chmod(in, 0o600) // moved into place with the folder
	}
	if to == "" {
		to = filepath.Join(m.Config.DataDir, crypto.SigningKeyFile)
		if err := os.MkdirAll(m.Config.DataDir, 0o700); err != nil {
			return err
		}
	}
	if err := os.Remove(in); err != nil {
		return err
	}
	switch old, err := os.ReadFile(to); {
	case err == nil && bytes.Equal(old, key):
		return nil
	case err == nil:
		return fmt.Errorf("%s holds another signing key than the backup's: a restore does not replace it (move it away, or give --signing-key another file)", to)
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	return secretfile.WriteNew(to, key)
}

// restorePebble opens the unpacked store once, so that one that would not start (its
// mark names writes it lacks, a table missing) is refused before it is moved into place.
func (m *Main) restorePebble(tmp string) (string, error) {
	opts := m.Config.Pebble
	s, err := persistence.Open(tmp, opts)
	if err != nil {
		return "", fmt.Errorf("the restored store does not open: %w", err)
	}
	if err := s.Close(); err != nil {
		return "", err
	}
	return "the Pebble store in " + m.Config.DataDir, nil
}

// restoreNATS writes the stream of the backup in tmp to the NATS servers of urls.
func (m *Main) restoreNATS(ctx context.Context, tmp string, opts natsstore.Options, urls []string) (string, error) {
	recs, err := natsChunks(tmp)
	if err != nil {
		return "", err
	}
	defer recs.Close()
	opts.URLs = urls
	st, err := natsstore.Restore(ctx, opts, recs)
	if err != nil {
		return "", err
	}
	if err := os.RemoveAll(filepath.Join(tmp, filepath.FromSlash(natsMemberDir))); err != nil {
		return "", err
	}
	return fmt.Sprintf("stream %s (%d records, up to sequence %d)", st.Stream, st.Records, st.Last), nil
}

// restoreEmbedded starts the embedded NATS server in the folder being restored, writes
// the stream to it, and stops it: the folder then holds the server's files and the key
// intentd connects with, as a first start would have made them.
func (m *Main) restoreEmbedded(ctx context.Context, tmp string) (string, error) {
	saved := m.Config.DataDir
	m.Config.DataDir = tmp
	defer func() { m.Config.DataDir = saved }()
	if m.logger == nil {
		// The embedded server's warnings, if any; its notices are at debug.
		m.logger = slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	srv, err := m.embedNATS()
	if err != nil {
		return "", err
	}
	defer srv.Shutdown()
	opts := m.Config.Nats.Options
	opts.OnlyURLs = true
	if srv.NKeyFile() != "" {
		opts.NKey = srv.NKeyFile()
	}
	what, err := m.restoreNATS(ctx, tmp, opts, []string{srv.URL()})
	if err != nil {
		return "", err
	}
	return what + " of the embedded NATS server in " + saved, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
