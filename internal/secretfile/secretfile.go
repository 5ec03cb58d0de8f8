// Package secretfile reads and writes the files that hold a secret: a token that
// authenticates the process to something (the form every secret flag of intentd and
// intentctl takes besides its value, since a value on a command line is shown to every
// user of the host and kept in shell histories), a signing key or a NATS seed. A new
// one appears whole or not at all, so that a crash cannot leave a truncated secret that
// the next start refuses.
//
// A secret file is held to what intentd's signing key file is held to: group and others
// may neither read nor write it. A token that others can read authenticates them as
// well, and a file made with the wrong mode is better refused at start, with the chmod
// that fixes it, than found out later.
package secretfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// MaxBytes bounds a secret file. Tokens are short; a larger file is the wrong file
// (a tokens list, a log), and is refused before it is read whole.
const MaxBytes = 64 << 10

// Read returns the secret in the file at path: its content less one trailing newline
// ("\n" or "\r\n"), which editors and `echo` add. It refuses an empty secret, one of
// more than one line, a file larger than MaxBytes, a folder or device, and a file that
// group or others may access, naming the chmod that fixes it (the mode is not checked on
// Windows, whose files have no such bits). A pipe is read as a file is, so that a shell's
// process substitution, --token-file <(pass show intentd), works. The errors name the
// path, never the content.
func Read(path string) (string, error) {
	b, err := readPrivate(path, MaxBytes, true, "the secret", ", not a secret file")
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	switch {
	case s == "":
		// An empty token would turn authentication off where it is optional rather
		// than fail where it is not.
		return "", fmt.Errorf("%s: empty; want the secret on one line", path)
	case strings.ContainsAny(s, "\r\n"):
		// A second line is a mistake (two tokens, a comment), not a part of the secret:
		// neither a bearer token nor a NATS token may hold a line break.
		return "", fmt.Errorf("%s: more than one line; want the secret alone on one line", path)
	}
	return s, nil
}

// Resolve returns the secret of a flag pair, --NAME and --NAME-file: the content of
// file when it is set, that of the file after the @ when value starts with one (--NAME
// @FILE), else value itself. Giving both is refused, as a choice between them would be
// a guess. The errors name the flag and the file, never a secret; a secret that starts
// with @ is given by file.
func Resolve(name, value, file string) (string, error) {
	switch {
	case value != "" && file != "":
		return "", fmt.Errorf("--%s and --%s-file: give one of them", name, name)
	case file != "":
		s, err := Read(file)
		if err != nil {
			return "", fmt.Errorf("--%s-file: %w", name, err)
		}
		return s, nil
	}
	path, ok := strings.CutPrefix(value, "@")
	if !ok {
		return value, nil
	}
	if path == "" {
		return "", fmt.Errorf("--%s @: want a file name after the @", name)
	}
	s, err := Read(path)
	if err != nil {
		return "", fmt.Errorf("--%s @FILE: %w", name, err)
	}
	return s, nil
}

// ReadKey returns what the key file at path holds. A file that is not a regular file, that group or others
// may access, or that is larger than limit bytes is refused, with an error naming it; a
// missing one gives an error that wraps fs.ErrNotExist.
func ReadKey(path string, limit int) ([]byte, error) {
	return readPrivate(path, limit, false, "it", "")
}

// readPrivate reads at most limit bytes of the file at path, refusing one that group or
// others may access, and anything but a regular file (or a named pipe, when pipes).
// what names the content in the mode's refusal, and tooLarge ends the size's.
func readPrivate(path string, limit int, pipes bool, what, tooLarge string) ([]byte, error) {
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
	if mode := info.Mode(); !mode.IsRegular() && !(pipes && mode&os.ModeNamedPipe != 0) {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("%s: mode %04o lets group or others access %s; run chmod 600 %s", path, perm, what, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes%s", path, limit, tooLarge)
	}
	return b, nil
}

// WriteNew writes data to a new file at path with mode 0600. It never replaces a file
// (the error then wraps fs.ErrExist): the data is written to a temporary file in the same
// folder, synced, and linked into place.
func WriteNew(path string, data []byte) error {
	// Link, unlike Rename, fails when the target exists.
	return place(path, data, 0o600, os.Link)
}

// Replace writes data to path with mode, replacing a file there whole: a reader, such
// as a member watching its certificate, sees the old file or the new one, never half.
func Replace(path string, data []byte, mode os.FileMode) error {
	return place(path, data, mode, os.Rename)
}

// place writes data to a temporary file in path's folder with mode, syncs it, and
// puts it at path with put.
func place(path string, data []byte, mode os.FileMode, put func(from, to string) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600; Chmod gives it the mode asked for, and says so
	// where a umask or platform might differ.
	err = tmp.Chmod(mode)
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
	if err := put(tmp.Name(), path); err != nil {
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
