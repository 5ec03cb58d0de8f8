package natsstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/nats-io/nats.go"
)

// A backup of the stream is its records in sequence order, each with its sequence,
// subject, headers and data, after a magic line, and closed by an end record that gives
// the stream's last sequence when the reading ended:
//
//	"intentd-nats-backup 1\n"
//	record*: uvarint seq (>0), bytes subject, uvarint n, n × (bytes key, bytes value), bytes data
//	end:     uvarint 0, uvarint last sequence
//
// where bytes is a uvarint length and as many bytes. Sequences rise strictly; the gaps
// between them are records deleted before they were read (snapshots rolled up, pruned
// events, spent nonces), kept as gaps by a restore so that event ids, which are
// sequences, stay what they were.
const backupMagic = "intentd-nats-backup 1\n"

// Bounds of what a backup's reader takes: a NATS message is 1 MiB at most by default,
// 64 MiB at most configured, and the store's records are far smaller.
const (
	maxBackupField   = 64 << 20
	maxBackupHeaders = 1024
)

// backupRecord is one record of the stream in a backup.
type backupRecord struct {
	seq     uint64
	subject string
	header  nats.Header
	data    []byte
}

// backupEncoder writes a backup of the stream.
type backupEncoder struct {
	w   *bufio.Writer
	buf []byte
}

func newBackupEncoder(w io.Writer) (*backupEncoder, error) {
	e := &backupEncoder{w: bufio.NewWriterSize(w, 64<<10)}
	_, err := e.w.WriteString(backupMagic)
	return e, err
}

func (e *backupEncoder) record(r backupRecord) error {
	b := binary.AppendUvarint(e.buf[:0], r.seq)
	b = appendBytes(b, []byte(r.subject))
	keys := make([]string, 0, len(r.header))
	n := 0
	for k, vs := range r.header {
		keys = append(keys, k)
		n += len(vs)
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(n))
	for _, k := range keys {
		for _, v := range r.header[k] {
			b = appendBytes(appendBytes(b, []byte(k)), []byte(v))
		}
	}
	b = appendBytes(b, r.data)
	e.buf = b
	_, err := e.w.Write(b)
	return err
}

// end writes the end record and flushes.
func (e *backupEncoder) end(last uint64) error {
	b := binary.AppendUvarint(binary.AppendUvarint(e.buf[:0], 0), last)
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	return e.w.Flush()
}

func appendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// ErrBackupDamaged is wrapped by the errors of a backup of the stream that does not read.
var ErrBackupDamaged = errors.New("the stream's backup is damaged")

// backupDecoder reads a backup of the stream.
type backupDecoder struct {
	r    *bufio.Reader
	prev uint64
	last uint64 // set by the end record
	done bool
}

func newBackupDecoder(r io.Reader) (*backupDecoder, error) {
	d := &backupDecoder{r: bufio.NewReaderSize(r, 64<<10)}
	magic := make([]byte, len(backupMagic))
	if _, err := io.ReadFull(d.r, magic); err != nil || string(magic) != backupMagic {
		return nil, fmt.Errorf("%w: it does not begin as one", ErrBackupDamaged)
	}
	return d, nil
}

func (d *backupDecoder) damaged(format string, args ...any) error {
	return fmt.Errorf("%w: after sequence %d: %s", ErrBackupDamaged, d.prev, fmt.Sprintf(format, args...))
}

func (d *backupDecoder) uvarint(what string) (uint64, error) {
	v, err := binary.ReadUvarint(d.r)
	if err != nil {
		return 0, d.damaged("%s: %v", what, eofIsShort(err))
	}
	return v, nil
}

func (d *backupDecoder) bytes(what string) ([]byte, error) {
	n, err := d.uvarint(what)
	if err != nil {
		return nil, err
	}
	if n > maxBackupField {
		return nil, d.damaged("%s of %d bytes", what, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		return nil, d.damaged("%s: %v", what, eofIsShort(err))
	}
	return b, nil
}

func eofIsShort(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// next returns the next record, or io.EOF after the end record, which must close the
// input.
func (d *backupDecoder) next() (backupRecord, error) {
	if d.done {
		return backupRecord{}, io.EOF
	}
	seq, err := d.uvarint("a sequence")
	if err != nil {
		return backupRecord{}, err
	}
	if seq == 0 {
		if d.last, err = d.uvarint("the last sequence"); err != nil {
			return backupRecord{}, err
		}
		if d.last < d.prev {
			return backupRecord{}, d.damaged("the last sequence %d is below the records", d.last)
		}
		if _, err := d.r.ReadByte(); !errors.Is(err, io.EOF) {
			return backupRecord{}, d.damaged("bytes follow the end record")
		}
		d.done = true
		return backupRecord{}, io.EOF
	}
	if seq <= d.prev {
		return backupRecord{}, d.damaged("sequence %d does not rise", seq)
	}
	r := backupRecord{seq: seq}
	subject, err := d.bytes("a subject")
	if err != nil {
		return r, err
	}
	r.subject = string(subject)
	n, err := d.uvarint("a header count")
	if err != nil {
		return r, err
	}
	if n > maxBackupHeaders {
		return r, d.damaged("%d headers", n)
	}
	if n > 0 {
		r.header = nats.Header{}
	}
	for range n {
		k, err := d.bytes("a header name")
		if err != nil {
			return r, err
		}
		v, err := d.bytes("a header value")
		if err != nil {
			return r, err
		}
		r.header.Add(string(k), string(v))
	}
	if r.data, err = d.bytes("a record's data"); err != nil {
		return r, err
	}
	d.prev = seq
	return r, nil
}
