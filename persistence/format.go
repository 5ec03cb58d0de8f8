package persistence

import (
	"errors"
	"fmt"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/buildinfo"
	"github.com/intentd/intentd/internal/storeformat"
)

// Format is the data format this build writes and the newest it reads. A start reads
// the format the store records (keyFormat): an older one is migrated to this one, a
// newer one refused, since this build would misread what it cannot know.
//
// The formats, and what each changed:
//
//  1. Each intent's state as JSON (snapshot version 1); a key of its own for each open
//     or processing intent's reference to its policy (r<policy id>\x00<intent id>).
//  2. Each intent's state in a binary form (snapshot version 2), a third smaller. An
//     earlier version cannot read it: it answers 500 for such an intent. States of
//     format 1 are read as they are and rewritten at their intent's next change, so no
//     migration runs.
//  3. The policy references held by the expiry index and the processing set (their
//     values name the policy), counted in memory at start; no reference keys. The
//     migration moves the keys into the indexes (migrateRefs). An earlier version
//     would find no references and delete a policy that open intents still name.
//
// Formats 1 to 3 were written without a record; 3 is the first recorded, by the version
// that added the record. A store of earlier versions with reference keys is of format 2
// or earlier, one without them of format 3 already.
const Format = 3

// keyFormat holds the store's format record (storeformat.Record). It is a key of the
// prefix 'm', beside keyEventSeq, which no table takes.
const keyFormat = "mformat"

// formatCheck is what the start found of the store's format, before any write.
type formatCheck struct {
	// record: the store had no record, and one is written once the migrations ran.
	record bool
	// from names the format found, for the line logged when the record is written.
	from string
}

// checkFormat reads the store's format record and refuses a store this build cannot
// read: one of a newer format, or one whose record is damaged. It writes nothing, so
// that a refused store stays as it was. existed tells a new store from one there
// before.
func (s *Store) checkFormat(existed bool) (formatCheck, error) {
	where := "open store in " + s.dir
	v, err := s.get([]byte(keyFormat))
	switch {
	case errors.Is(err, intentd.ErrNotFound):
		return s.unrecordedFormat(existed)
	case err != nil:
		return formatCheck{}, fmt.Errorf("%s: read the data format record: %w", where, err)
	}
	rec, err := storeformat.Decode(v)
	if err != nil {
		return formatCheck{}, storeformat.Damaged(where, err)
	}
	if rec.Format > Format {
		return formatCheck{}, storeformat.Newer(where, rec, Format, buildinfo.Read().Version)
	}
	if rec.Format < Format {
		return formatCheck{record: true, from: fmt.Sprint(rec.Format)}, nil
	}
	return formatCheck{}, nil
}

// unrecordedFormat is the format of a store without a record: a new store's is this
// build's; one written by a version from before the record is told by its reference
// keys.
func (s *Store) unrecordedFormat(existed bool) (formatCheck, error) {
	empty, err := s.empty()
	if err != nil {
		return formatCheck{}, fmt.Errorf("open store in %s: read the store: %w", s.dir, err)
	}
	if !existed || empty {
		return formatCheck{record: true}, nil
	}
	refs, err := s.hasRefKeys()
	if err != nil {
		return formatCheck{}, fmt.Errorf("open store in %s: read the store: %w", s.dir, err)
	}
	if refs {
		return formatCheck{record: true, from: "2 or earlier (no format record)"}, nil
	}
	return formatCheck{record: true, from: "3 (no format record)"}, nil
}

// hasRefKeys reports whether the store holds reference keys of format 2 or earlier.
func (s *Store) hasRefKeys() (bool, error) {
	found := false
	err := s.scan([]byte{prefixRef}, func(_, _ []byte) error {
		found = true
		return errStopScan
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	return found, err
}

// errStopScan ends a scan that found what it looked for.
var errStopScan = errors.New("stop the scan")

// recordFormat writes this build's format record, once the migrations ran, and logs
// the formats of a store migrated.
func (s *Store) recordFormat(fc formatCheck) error {
	if !fc.record {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	rec := storeformat.Record{Format: Format, WrittenBy: buildinfo.Read().Version}
	if err := b.Set([]byte(keyFormat), rec.Encode(), nil); err != nil {
		return err
	}
	if err := s.commit(b); err != nil {
		return fmt.Errorf("open store in %s: write the data format record: %w", s.dir, err)
	}
	if fc.from != "" {
		s.log.Info(fmt.Sprintf("store migrated from data format %s to %d", fc.from, Format), "dir", s.dir)
	}
	return nil
}
