package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// Pebble replays its write-ahead log at start-up and takes a damaged record for the end
// of the log: whatever was written after it is dropped without a word. Damage after an
// fsync is outside what a store can prevent, but the operator must be told. So every
// batch the store commits carries a write number, one more than the last, under its own
// key; and a few times a second the highest number known durable is written to a small
// file beside the database (the mark), outside the log. At start-up a database whose
// highest write number is below the mark has lost acknowledged writes.
//
// What it cannot see: writes acknowledged after the last mark (at most markInterval of
// them), a folder restored whole from an older backup together with its mark, and a
// store that lost its mark and every write of its log at once, which looks like a store
// never written (checkNoMark).

// markFile is the name of the mark in the data folder.
const markFile = "intentd.mark"

// markInterval is how often the mark is brought up to date while writes come. Each
// update costs three small fsyncs (the file, its rename, the folder).
const markInterval = 250 * time.Millisecond

// markRecord is the mark's content: the write number and the event sequence that were
// durable when it was written, and the highest event id handed out by then.
type markRecord struct {
	writes, events, issued uint64
}

// The mark is markLen bytes: markMagic, the three numbers of markRecord (8 bytes each,
// big-endian), and the CRC-32C of what precedes it. Without the checksum a flipped
// byte read as a mark far above the store, which a start reported as acknowledged
// writes lost from the log: the wrong damage, and the wrong remedy. The first marks
// were the write number and the event sequence alone (markLenV1 bytes); they are read
// as such, and the next mark written replaces them.
const (
	markMagic = "IDM2"
	markLen   = len(markMagic) + 3*8 + 4
	markLenV1 = 16
)

var markTable = crc32.MakeTable(crc32.Castagnoli)

func (m markRecord) encode() []byte {
	b := append(make([]byte, 0, markLen), markMagic...)
	b = binary.BigEndian.AppendUint64(b, m.writes)
	b = binary.BigEndian.AppendUint64(b, m.events)
	b = binary.BigEndian.AppendUint64(b, m.issued)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, markTable))
}

// ErrMarkDamaged is wrapped by Open's error when the mark cannot be read as one: it
// fails its checksum, or has neither of the lengths a mark has.
var ErrMarkDamaged = errors.New("the mark is damaged")

// decodeMark reads the bytes of a mark, in its current form or its first.
func decodeMark(b []byte) (markRecord, error) {
	switch len(b) {
	case markLenV1:
		w, e := binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])
		return markRecord{writes: w, events: e, issued: e}, nil
	case markLen:
		body := b[:markLen-4]
		if string(body[:len(markMagic)]) != markMagic || crc32.Checksum(body, markTable) != binary.BigEndian.Uint32(b[markLen-4:]) {
			return markRecord{}, fmt.Errorf("%w: its checksum does not match its content", ErrMarkDamaged)
		}
		n := body[len(markMagic):]
		return markRecord{binary.BigEndian.Uint64(n), binary.BigEndian.Uint64(n[8:]), binary.BigEndian.Uint64(n[16:])}, nil
	}
	return markRecord{}, fmt.Errorf("%w: it is %d bytes, and a mark is %d (or %d, as first written)", ErrMarkDamaged, len(b), markLen, markLenV1)
}

// ErrDataLoss is wrapped by Open's error when the store holds fewer writes than its
// mark says were acknowledged.
var ErrDataLoss = errors.New("acknowledged writes are missing")

// lastWrite is the highest write number in the database, 0 for none.
func (s *Store) lastWrite() (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixWrite}, UpperBound: []byte{prefixWrite + 1}})
	if err != nil {
		return 0, err
	}
	var n uint64
	if it.Last() && len(it.Key()) == 9 {
		n = binary.BigEndian.Uint64(it.Key()[1:])
	}
	return n, it.Close()
}

// readMark reads the mark; ok is false when there is none (a new folder, or one written
// before marks were kept). A mark that cannot be decoded is an error wrapping
// ErrMarkDamaged.
func readMark(fs vfs.FS, dir string) (m markRecord, ok bool, err error) {
	f, err := fs.Open(fs.PathJoin(dir, markFile))
	if errors.Is(err, os.ErrNotExist) {
		return markRecord{}, false, nil
	}
	if err != nil {
		return markRecord{}, false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(markLen)+1))
	if err != nil {
		return markRecord{}, false, err
	}
	m, err = decodeMark(b)
	return m, err == nil, err
}

// writeMark replaces the mark whole: written beside it, synced, renamed over it, and
// the folder synced, so that a crash leaves the old mark or the new one.
func writeMark(fs vfs.FS, dir string, m markRecord) error {
	tmp := fs.PathJoin(dir, markFile+".tmp")
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(m.encode())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := fs.Rename(tmp, fs.PathJoin(dir, markFile)); err != nil {
		return err
	}
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkMark compares what the database holds with the mark, at Open, and writes the
// mark before any write is acknowledged. With acceptLoss, a shortfall, or a mark
// damaged or missing where one must be, is logged and the mark is brought down to what
// the store holds. existed says whether the store was there before this open.
func (s *Store) checkMark(acceptLoss, existed bool, replayed []string) error {
	last, err := s.lastWrite()
	if err != nil {
		return err
	}
	s.writeNum.Store(last)
	s.durable.Store(last)
	path := s.fs.PathJoin(s.dir, markFile)
	m, ok, err := readMark(s.fs, s.dir)
	s.marked = markRecord{writes: last, events: s.seq, issued: s.seq}
	switch {
	case errors.Is(err, ErrMarkDamaged):
		// The mark, not the store, is damaged; but without it a loss cannot be told.
		if !acceptLoss {
			return fmt.Errorf("open store in %s: %s: %w. The store itself is not known to be damaged, but without its mark writes lost from the write-ahead log cannot be told: "+
				"restore %s from a backup of the folder, or start with --accept-data-loss to serve what the store holds and write a new mark (docs/operating.md, \"The data folder\")",
				s.dir, path, err, markFile)
		}
		s.log.Warn("the store's mark is damaged: starting without checking it for lost writes, as --accept-data-loss allows, and writing a new one",
			"dir", s.dir, "mark", path, "err", err)
	case err != nil:
		return fmt.Errorf("open store in %s: read the mark: %w", s.dir, err)
	case !ok:
		if err := s.checkNoMark(acceptLoss, existed, last); err != nil {
			return err
		}
	case last < m.writes || s.seq < m.events:
		if err := s.acceptLoss(acceptLoss, m, last, replayed); err != nil {
			return err
		}
	default:
		s.marked.issued = max(s.seq, m.issued)
	}
	s.issued.Store(s.marked.issued)
	// Written now, whatever the store holds, so that a store with a write has a mark,
	// and one found without is told (checkNoMark).
	if err := writeMark(s.fs, s.dir, s.marked); err != nil {
		return openFailed(s.dir, fmt.Errorf("write the mark: %w", err))
	}
	return nil
}

// acceptLoss refuses a store that holds fewer writes or events than its mark m says
// were acknowledged, or with acceptLoss logs the loss and numbers the next event past
// every id the mark knows of.
func (s *Store) acceptLoss(acceptLoss bool, m markRecord, last uint64, replayed []string) error {
	lost := fmt.Sprintf("the store holds writes up to number %d and events up to %d, but writes up to %d and events up to %d were acknowledged",
		last, s.seq, m.writes, m.events)
	if !acceptLoss {
		return fmt.Errorf("open store in %s: %w: %s; its write-ahead log (%s) was damaged after it was written. "+
			"Restore the folder from a backup, or start with --accept-data-loss to serve what remains (docs/operating.md, \"The data folder\")",
			s.dir, ErrDataLoss, lost, strings.Join(replayed, ", "))
	}
	// The lost events' ids, and any the ceiling held in reserve, are not handed out
	// again: subscribers and the transparency log saw them (eventids.go).
	kept := s.seq
	if err := s.skipIDs(max(m.events, m.issued)); err != nil {
		return openFailed(s.dir, fmt.Errorf("write the event ids lost as a gap: %w", err))
	}
	s.log.Warn("starting on a store that lost acknowledged writes, as --accept-data-loss allows", "dir", s.dir, "loss", lost,
		"last_event", kept, "next_event", s.seq+1)
	s.marked = markRecord{writes: s.durable.Load(), events: s.seq, issued: s.seq}
	return nil
}

// ErrMarkMissing is wrapped by Open's error when the mark is missing from a store
// whose writes were numbered for one.
var ErrMarkMissing = errors.New("the mark is missing")

// checkNoMark decides on a store found without a mark. Only the versions that keep the
// mark number the writes, and they write it as the store opens, before its first
// write: so a store with a numbered write lost its mark, and since whether it lost
// writes too cannot be told, it is refused, unless acceptLoss. A store without numbered
// writes was last written by a version that kept no mark, and opens as it always did;
// with a warning when it was there before this open, since the writes it may have lost
// cannot be told either. A store created by this open has nothing to check.
func (s *Store) checkNoMark(acceptLoss, existed bool, last uint64) error {
	path := s.fs.PathJoin(s.dir, markFile)
	switch {
	case last > 0 && !acceptLoss:
		return fmt.Errorf("open store in %s: %s: %w, but the store holds writes numbered up to %d, which only a version that keeps the mark makes: "+
			"whether acknowledged writes were lost from the write-ahead log cannot be told: restore %s from a backup of the folder, "+
			"or start with --accept-data-loss to serve what the store holds and write a new mark (docs/operating.md, \"The data folder\")",
			s.dir, path, ErrMarkMissing, last, markFile)
	case last > 0:
		s.log.Warn("the store's mark is missing: starting without checking it for lost writes, as --accept-data-loss allows, and writing a new one",
			"dir", s.dir, "mark", path, "writes", last)
	case existed:
		empty, err := s.empty()
		if err != nil {
			return err
		}
		what := "the store has no mark, as a store last written by a version that kept none: writes lost from its log before this start cannot be told; a mark is kept from now on"
		if empty {
			what = "the store is empty and has no mark: a store never written by a version that keeps one, or one whose writes were lost along with its mark; a mark is kept from now on"
		}
		s.log.Warn(what, "dir", s.dir, "mark", path)
	}
	return nil
}

// empty reports whether the database holds no record.
func (s *Store) empty() (bool, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	found := it.First()
	return !found, it.Close()
}

// walFiles names the write-ahead log files in the folder, for messages.
func walFiles(fs vfs.FS, dir string) []string {
	names, _ := fs.List(dir)
	var logs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			logs = append(logs, n)
		}
	}
	slices.Sort(logs)
	if len(logs) == 0 {
		return []string{"none left"}
	}
	return logs
}

// noteDurable records that write n is durable.
func (s *Store) noteDurable(n uint64) {
	for {
		d := s.durable.Load()
		if n <= d || s.durable.CompareAndSwap(d, n) {
			return
		}
	}
}

// markLoop brings the mark up to date while the store is open, and once more as it
// closes, and drops the write keys below the newest.
func (s *Store) markLoop() {
	defer close(s.markDone)
	t := time.NewTicker(markInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.updateMark()
		case <-s.closing:
			<-s.done // the committer's last groups are in the final mark
			s.updateMark()
			return
		}
	}
}

func (s *Store) updateMark() {
	s.markMu.Lock()
	defer s.markMu.Unlock()
	m := markRecord{writes: s.durable.Load(), events: s.durableSeq.Load(), issued: s.marked.issued}
	if m.events+idReserve/2 > m.issued {
		// Raised here, with a write the mark makes anyway, the ceiling seldom makes
		// the committer wait (eventids.go).
		m.issued = m.events + idReserve
	}
	if m == s.marked {
		return
	}
	if err := writeMark(s.fs, s.dir, m); err != nil {
		s.log.Error("update the store's mark", "dir", s.dir, "err", err)
		return
	}
	s.issued.Store(m.issued)
	// The older write keys say nothing the newest does not; a lost delete leaves a
	// few more keys, never a wrong answer.
	if m.writes > s.marked.writes {
		if err := s.db.DeleteRange(writeKey(0), writeKey(m.writes), pebble.NoSync); err != nil {
			s.log.Error("drop old write numbers", "err", err)
		}
	}
	s.marked = m
}
