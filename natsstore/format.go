package natsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/internal/buildinfo"
	"github.com/intentd/intentd/internal/storeformat"
)

// Format is the data format this build writes and the newest it reads. A start reads
// the format the store records (markFormat, in the bucket of records beside the
// stream): an older one is migrated to this one, a newer one refused, since this build
// would misread what it cannot know.
//
// The formats, and what each changed:
//
//  1. Each intent's state as JSON (snapshot version 1).
//  2. Each intent's state in a binary form (snapshot version 2), a third smaller. An
//     earlier version cannot read it: it answers 500 for such an intent. States of
//     format 1 are read as they are and rewritten at their intent's next change, so no
//     migration runs.
//
// Formats 1 and 2 were written without a record; 2 is the first recorded, by the version
// that added the record. The subjects added since (nonces, mandates, the log's bundles)
// changed no record an earlier version reads: it reads only the subjects it knows.
//
// The record is kept in the bucket of records rather than in the stream, so that a node
// of an earlier version, which follows the stream's subjects and reads only its own
// keys of the bucket, never meets it: during a rolling upgrade the members of both
// versions share the store.
const Format = 2

// markFormat is the key of the format record in the bucket of records.
const markFormat = "format"

// checkFormat reads the store's format record and refuses a store this build cannot
// read (a newer format, a damaged record); then it records this build's format where
// none or an older one is recorded. held says the stream holds records: a stream that
// is new, or empty, has no format of its own, and is recorded without a migration.
func (s *Store) checkFormat(ctx context.Context, held bool, replicas int) error {
	where := "nats store: stream " + s.name
	kv, err := s.marksKV(ctx, replicas)
	if err != nil {
		return err
	}
	e, err := retryTries(ctx, func(try context.Context) (jetstream.KeyValueEntry, error) { return kv.Get(try, markFormat) })
	var from string
	var rev uint64
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		if held {
			from = "2 or earlier (no format record)"
		}
	case err != nil:
		return fmt.Errorf("%s: read the data format record in bucket %s: %w", where, s.marksBucket(), err)
	default:
		rec, err := storeformat.Decode(e.Value())
		if err != nil {
			return storeformat.Damaged(fmt.Sprintf("%s (bucket %s, key %s)", where, s.marksBucket(), markFormat), err)
		}
		if rec.Format > Format {
			return storeformat.Newer(where, rec, Format, buildinfo.Read().Version)
		}
		if rec.Format == Format {
			return nil
		}
		from, rev = fmt.Sprint(rec.Format), e.Revision()
	}
	rec := storeformat.Record{Format: Format, WrittenBy: buildinfo.Read().Version}
	_, err = retryTries(ctx, func(try context.Context) (uint64, error) {
		if rev != 0 {
			return kv.Update(try, markFormat, rec.Encode(), rev)
		}
		return kv.Create(try, markFormat, rec.Encode())
	})
	if err != nil {
		// Another node of this version recorded it meanwhile: read it again.
		if e, gerr := kv.Get(ctx, markFormat); gerr == nil {
			if got, derr := storeformat.Decode(e.Value()); derr == nil && got.Format == Format {
				return nil
			}
		}
		return fmt.Errorf("%s: record the data format in bucket %s: %w", where, s.marksBucket(), err)
	}
	if from != "" {
		s.log.Info(fmt.Sprintf("nats store: store migrated from data format %s to %d", from, Format), "stream", s.name)
	}
	return nil
}

// marksKV opens the bucket of records, making it when it is missing.
func (s *Store) marksKV(ctx context.Context, replicas int) (jetstream.KeyValue, error) {
	kv, err := retryTries(ctx, func(try context.Context) (jetstream.KeyValue, error) { return s.js.KeyValue(try, s.marksBucket()) })
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = retryTries(ctx, func(try context.Context) (jetstream.KeyValue, error) {
			return s.js.CreateKeyValue(try, jetstream.KeyValueConfig{
				Bucket:      s.marksBucket(),
				Description: "intentd: the streams and buckets this store made, so that one deleted is not made again empty, and the store's data format",
				History:     1,
				Storage:     jetstream.FileStorage,
				Replicas:    replicas,
			})
		})
		if errors.Is(err, jetstream.ErrBucketExists) { // made by another node meanwhile
			kv, err = s.js.KeyValue(ctx, s.marksBucket())
		}
	}
	if err != nil {
		return nil, fmt.Errorf("nats store: bucket %s: %w", s.marksBucket(), err)
	}
	return kv, nil
}
