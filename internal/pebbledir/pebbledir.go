// Package pebbledir opens a Pebble database with the checks Pebble leaves out, so that
// a damaged folder is an error the caller can name, never a panic. The caller says
// what the operator does about it: the store's folder is restored from a backup, the
// transparency log's is removed and rebuilt.
package pebbledir

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// ErrDamaged is in the chain of Open's error when the folder holds a database Pebble
// cannot open for what is in it (a file missing or corrupt), as opposed to how it is
// opened (a lock held by another process, a permission).
var ErrDamaged = errors.New("the database is damaged")

// Open opens the database in dir. A folder that holds a database's files but not its
// CURRENT file is refused before Pebble sees it: Pebble would take it for a new
// database and stop on a nil pointer replaying its log. A panic inside Pebble's open,
// which other damaged folders cause, becomes an error.
func Open(dir string, opts *pebble.Options) (*pebble.DB, error) {
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	if err := checkCurrent(fsys, dir); err != nil {
		return nil, err
	}
	db, err := open(dir, opts)
	if err != nil && !errors.Is(err, ErrDamaged) && (pebble.IsCorruptionError(err) || errors.Is(err, fs.ErrNotExist)) {
		// A file the manifest or CURRENT names is corrupt or gone.
		err = fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return db, err
}

// open opens the database, turning a panic inside Pebble's open into an error, and a
// fatal error Pebble meets while it opens (a manifest it cannot write on a full disk)
// into an error too: Pebble's logger would end the process with a line that names
// neither the folder nor the remedy, and leave a folder half-made.
func open(dir string, opts *pebble.Options) (db *pebble.DB, err error) {
	logger := opts.Logger
	if logger == nil {
		logger = pebble.DefaultLogger
	}
	l := &openLogger{Logger: logger}
	l.opening.Store(true)
	defer l.opening.Store(false)
	po := *opts
	po.Logger = l
	defer func() {
		switch r := recover().(type) {
		case nil:
		case fatal:
			db, err = nil, r
		default:
			// On one line: it ends up in the one line that refuses a start.
			msg := strings.Join(strings.Fields(fmt.Sprint(r)), " ")
			db, err = nil, fmt.Errorf("%w: pebble stopped with %s", ErrDamaged, msg)
		}
	}()
	return pebble.Open(dir, &po)
}

// openLogger is Pebble's logger while a database opens: a fatal message then panics with
// a fatal, which open turns into its error, instead of ending the process. Once the
// database is open, it is the logger it wraps. The flushes Pebble schedules as its open
// ends run on goroutines of their own; one that failed in the moment before the flag is
// cleared would end the process with the panic instead, as it would have ended it anyway.
type openLogger struct {
	pebble.Logger
	opening atomic.Bool
}

// Fatalf panics with a fatal while the database opens, and is the wrapped logger's after.
func (l *openLogger) Fatalf(format string, args ...any) {
	if !l.opening.Load() {
		l.Logger.Fatalf(format, args...)
		return
	}
	f := fatal{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if e, ok := a.(error); ok {
			f.err = e
			break
		}
	}
	panic(f)
}

// fatal is a fatal message of Pebble's, and the error among its arguments, so that a
// caller can tell a full disk (syscall.ENOSPC in its chain) from other failures.
type fatal struct {
	msg string
	err error
}

func (f fatal) Error() string { return strings.Join(strings.Fields(f.msg), " ") }
func (f fatal) Unwrap() error { return f.err }

// checkCurrent refuses a folder that holds a database but not its CURRENT file, which
// names the manifest to read. A folder whose database was never completely created is
// let through: on a first open Pebble writes LOCK, then MANIFEST-000001, then CURRENT,
// and only then a log, a table or an OPTIONS file, so a folder without CURRENT that
// holds nothing of those but MANIFEST-000001 never held a write. A first open that
// stopped half-way (a full disk) leaves it, and Pebble creates the database over it as
// in an empty folder.
func checkCurrent(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if err != nil {
		return nil // no folder yet: Pebble makes it
	}
	var held []string
	created := false // a file that exists only once a first open completed
	for _, n := range names {
		switch {
		case n == "CURRENT":
			return nil
		case strings.HasPrefix(n, "MANIFEST-") || strings.HasSuffix(n, ".log") || strings.HasSuffix(n, ".sst"):
			held = append(held, n)
			created = created || n != "MANIFEST-000001"
		case strings.HasPrefix(n, "OPTIONS-"):
			created = true
		}
	}
	if len(held) == 0 || !created {
		return nil
	}
	slices.Sort(held)
	return fmt.Errorf("%w: the file CURRENT is missing, but the folder holds the database's other files (%s)",
		ErrDamaged, strings.Join(held, ", "))
}
