// Package secretfile reads and writes the files that hold a secret, a signing key or a
// NATS seed: only their owner may read them, and a new one appears whole or not at all,
// so that a crash cannot leave a truncated secret that the next start refuses.
package secretfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// Read returns what path holds. A file that is not a regular file, that group or others
// may access, or that is larger than limit bytes is refused, with an error naming it; a
// missing one gives an error that wraps fs.ErrNotExist.
func Read(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Stat the open file, not the path, so that the mode checked is that of the bytes read.
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("%s: mode %04o lets group or others access it; run chmod 600 %s", path, perm, path)
	}
	text, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(text) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return text, nil
}

// WriteNew writes data to a new file at path with mode 0600. It never replaces a file
// (the error then wraps fs.ErrExist): the data is written to a temporary file in the same
// folder, synced, and linked into place.
func WriteNew(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600 already; Chmod says so where a umask or platform
	// might differ.
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Link, unlike Rename, fails when the target exists.
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		// The new name must reach the disk too; some file systems cannot sync a
		// folder, which is not worth failing over once the file itself is synced.
		_ = d.Sync()
		d.Close()
	}
	return nil
}
