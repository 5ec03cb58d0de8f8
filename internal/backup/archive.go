// Package backup is the file format of intentd's online backups: a gzip-compressed tar
// whose first member says what the backup holds and whose last lists every other
// member with its size and SHA-256. The list comes last so that a backup can be
// streamed while it is taken, and it is what makes a backup cut short or changed
// afterwards tell itself apart from a whole one: gzip's own checksum covers the bytes
// written, not the bytes that should have followed.
//
// The server writes a backup (Writer) to the caller of POST /admin/backup; intentctl
// checks it as it saves it (Check), and `intentd restore` unpacks it (Extract) into a
// folder of its own before anything is put where intentd would start on it.
package backup

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Format is the version of the layout a Writer writes and a reader takes.
const Format = 1

// The names of the two members the format adds around the files of a backup.
const (
	HeaderName = "intentd-backup.json"
	SumsName   = "intentd-backup.sums"
)

// The kinds of store a backup holds.
const (
	StorePebble = "pebble"
	StoreNATS   = "nats"
)

// maxMeta bounds the header and the list of sums: they are read whole, and a backup
// holds some thousands of files at most.
const maxMeta = 16 << 20

// Header is the first member: what the backup holds, and where it came from.
type Header struct {
	Format  int       `json:"format"`
	Store   string    `json:"store"`
	Created time.Time `json:"created"`
	// Version is intentd's build that wrote it, for the operator.
	Version string `json:"version,omitempty"`
	// Stream names the NATS stream a NATS backup was read from.
	Stream string `json:"stream,omitempty"`
}

// Sum is one file's entry in the last member.
type Sum struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Writer writes a backup to an io.Writer.
type Writer struct {
	gz   *gzip.Writer
	tw   *tar.Writer
	sums []Sum
	at   time.Time
}

// NewWriter starts a backup on w with its header.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Format = Format
	if h.Created.IsZero() {
		h.Created = time.Now().UTC()
	}
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	bw := &Writer{gz: gz, tw: tar.NewWriter(gz), at: h.Created}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if err := bw.member(HeaderName, b); err != nil {
		return nil, err
	}
	return bw, nil
}

func (bw *Writer) member(name string, b []byte) error {
	if err := bw.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: bw.at, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := bw.tw.Write(b)
	return err
}

// Add writes a file of size bytes read from r under name, a slash-separated relative
// path. r must give exactly size bytes.
func (bw *Writer) Add(name string, size int64, r io.Reader) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := bw.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: bw.at, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(bw.tw, io.TeeReader(io.LimitReader(r, size), h))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("%s: %d bytes read, %d expected", name, n, size)
	}
	bw.sums = append(bw.sums, Sum{Name: name, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// AddFile writes the file at path under name.
func (bw *Writer) AddFile(name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return bw.Add(name, st.Size(), f)
}

// Close writes the list of sums and ends the tar and the gzip stream. A backup not
// closed is not whole: a reader refuses it.
func (bw *Writer) Close() error {
	b, err := json.Marshal(bw.sums)
	if err != nil {
		return err
	}
	if err := bw.member(SumsName, b); err != nil {
		return err
	}
	if err := bw.tw.Close(); err != nil {
		return err
	}
	return bw.gz.Close()
}

// checkName refuses a name that is not a plain relative path, or that is one of the
// format's own.
func checkName(name string) error {
	switch {
	case name == "" || name == HeaderName || name == SumsName:
		return fmt.Errorf("%q is not a name a file of a backup may have", name)
	case path.IsAbs(name) || strings.Contains(name, "\\") || path.Clean(name) != name || name == "." || name == ".." || strings.HasPrefix(name, "../"):
		return fmt.Errorf("%q is not a relative path inside the backup", name)
	}
	return nil
}

// Error is what a reader finds wrong with a backup.
type Error struct {
	// Truncated is true when the backup ends before its end: a copy cut short, a
	// backup whose taking failed half-way.
	Truncated bool
	Reason    string
}

func (e *Error) Error() string {
	if e.Truncated {
		return "the backup is cut short (" + e.Reason + "): it is incomplete, take or copy it again"
	}
	return "the backup is damaged or not an intentd backup: " + e.Reason
}

func damaged(format string, args ...any) error {
	return &Error{Reason: fmt.Sprintf(format, args...)}
}

// readErr names what reading the compressed tar met.
func readErr(what string, err error) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Truncated: true, Reason: what + " ends early"}
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		return damaged("%s: %v", what, err)
	case errors.Is(err, tar.ErrHeader):
		return damaged("%s: %v", what, err)
	}
	if strings.HasPrefix(err.Error(), "flate:") {
		return damaged("%s: %v", what, err)
	}
	return fmt.Errorf("read the backup: %s: %w", what, err)
}

// Visit reads a backup from r, calling file for every file between the header and the
// list of sums with a reader of its content, which it may read in part or not at all.
// It returns the header once the whole backup was read and found whole: every file
// matches its size and SHA-256 in the list, the list names no file that is missing, and
// the compressed stream ends where it should. Until then, what file was given must be
// taken as unchecked.
func Visit(r io.Reader, file func(name string, size int64, content io.Reader) error) (Header, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Header{}, damaged("the file is empty")
		}
		return Header{}, readErr("its gzip header", err)
	}
	gz.Multistream(false)
	tr := tar.NewReader(gz)
	h, err := readHeader(tr)
	if err != nil {
		return Header{}, err
	}
	var got []Sum
	for {
		th, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return Header{}, &Error{Truncated: true, Reason: "its list of files, the last member, is missing"}
		}
		if err != nil {
			return Header{}, readErr("a member's header", err)
		}
		if th.Name == SumsName {
			break
		}
		if th.Typeflag != tar.TypeReg {
			return Header{}, damaged("member %q is not a regular file", th.Name)
		}
		if err := checkName(th.Name); err != nil {
			return Header{}, damaged("%v", err)
		}
		hash := sha256.New()
		cr := &countReader{r: io.TeeReader(tr, hash), name: th.Name}
		if err := file(th.Name, th.Size, cr); err != nil {
			return Header{}, err
		}
		if _, err := io.Copy(io.Discard, cr); err != nil {
			return Header{}, err
		}
		if cr.n != th.Size {
			return Header{}, &Error{Truncated: true, Reason: th.Name + " ends early"}
		}
		got = append(got, Sum{Name: th.Name, Size: th.Size, SHA256: hex.EncodeToString(hash.Sum(nil))})
	}
	b, err := io.ReadAll(io.LimitReader(tr, maxMeta+1))
	if err != nil {
		return Header{}, readErr("its list of files", err)
	}
	var want []Sum
	if len(b) > maxMeta || json.Unmarshal(b, &want) != nil {
		return Header{}, damaged("its list of files does not read")
	}
	if err := compareSums(got, want); err != nil {
		return Header{}, err
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		if err != nil {
			return Header{}, readErr("the end of the tar", err)
		}
		return Header{}, damaged("a member follows the list of files")
	}
	// The rest of the tar's padding and gzip's trailer: its CRC and length check
	// every byte, and a stream cut here ends early.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return Header{}, readErr("the end of the compressed stream", err)
	}
	return h, nil
}

func readHeader(tr *tar.Reader) (Header, error) {
	th, err := tr.Next()
	if errors.Is(err, io.EOF) {
		return Header{}, &Error{Truncated: true, Reason: "it holds no member"}
	}
	if err != nil {
		return Header{}, readErr("its first member", err)
	}
	if th.Name != HeaderName {
		return Header{}, damaged("its first member is %q, not %s", th.Name, HeaderName)
	}
	b, err := io.ReadAll(io.LimitReader(tr, maxMeta+1))
	if err != nil {
		return Header{}, readErr(HeaderName, err)
	}
	var h Header
	if len(b) > maxMeta || json.Unmarshal(b, &h) != nil {
		return Header{}, damaged("%s does not read", HeaderName)
	}
	switch {
	case h.Format != Format:
		return Header{}, damaged("format %d, and this build reads format %d", h.Format, Format)
	case h.Store != StorePebble && h.Store != StoreNATS:
		return Header{}, damaged("it holds a store of kind %q, want %s or %s", h.Store, StorePebble, StoreNATS)
	}
	return h, nil
}

func compareSums(got, want []Sum) error {
	if len(got) != len(want) {
		return damaged("its list names %d files, and it holds %d", len(want), len(got))
	}
	for i := range got {
		if got[i] != want[i] {
			return damaged("file %s does not match its size and SHA-256 in the list", got[i].Name)
		}
	}
	return nil
}

// countReader counts what a file's reader gave, and names what reading it met.
type countReader struct {
	r    io.Reader
	name string
	n    int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		err = readErr(c.name, err)
	}
	return n, err
}

// Check reads a whole backup from r and reports whether it is whole, storing nothing.
func Check(r io.Reader) (Header, error) {
	return Visit(r, func(string, int64, io.Reader) error { return nil })
}

// Extract unpacks a backup from r into dir, which it creates and which must not exist,
// and returns its header once the backup was found whole. On an error it removes dir:
// nothing is left of a backup that was not whole.
func Extract(r io.Reader, dir string) (h Header, err error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return Header{}, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	h, err = Visit(r, func(name string, size int64, content io.Reader) error {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return damaged("file %s is given twice", name)
			}
			return err
		}
		_, err = io.Copy(f, content)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		var be *Error
		if err != nil && !errors.As(err, &be) {
			return fmt.Errorf("write %s: %w", p, err)
		}
		return err
	})
	return h, err
}
