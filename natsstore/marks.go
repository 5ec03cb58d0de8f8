package natsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The store keeps a record of each stream and bucket it made, in a key-value bucket of its
// own beside the stream (marksBucket). A stream or bucket missing at start where the
// record says the store made one was deleted, or its files were lost: the store refuses
// to start rather than make an empty one, which would hide the loss and answer every
// read of an earlier intent "not found". One missing with no record is new, and made.
// The record is kept in NATS rather than beside each node, so that every node of a
// cluster, and a node whose data folder is new, knows of it; it does not survive the
// deletion of its own bucket along with the stream.

// markStream is the record of the stream; a bucket's is markBucket of its name.
const markStream = "stream"

func markBucket(bucket string) string { return "bucket." + bucket }

// marksBucket names the bucket of the records after the stream, so that the stores of
// other prefixes on one account keep records of their own.
func (s *Store) marksBucket() string { return s.name + "_MARKS" }

// marked reports whether the records hold key, and the creation time they record for
// it. A record deleted on purpose (nats kv del) counts as none: it is how an operator
// lets the store start over empty.
func (s *Store) marked(ctx context.Context, key string) (made time.Time, ok bool, err error) {
	kv, err := retryTries(ctx, func(try context.Context) (jetstream.KeyValue, error) { return s.js.KeyValue(try, s.marksBucket()) })
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("nats store: read bucket %s: %w", s.marksBucket(), err)
	}
	e, err := retryTries(ctx, func(try context.Context) (jetstream.KeyValueEntry, error) { return kv.Get(try, key) })
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("nats store: read %s in bucket %s: %w", key, s.marksBucket(), err)
	}
	if err := made.UnmarshalText(e.Value()); err != nil {
		return time.Time{}, false, fmt.Errorf("nats store: %s in bucket %s is not a time: %w", key, s.marksBucket(), err)
	}
	return made, true, nil
}

// mark records that key was made at made (the stream's creation time), making the
// bucket of records when it is missing. It is written only once what it records
// exists, so that a record always means "made". A record already there must name the
// same time: another means that what the store made was deleted and made again, empty,
// while no node ran (a running node says store_missing for the same), and the start is
// refused rather than go on over the loss.
func (s *Store) mark(ctx context.Context, key string, made time.Time, replicas int) error {
	if was, ok, err := s.marked(ctx, key); err != nil {
		return err
	} else if ok && !was.Equal(made) {
		return fmt.Errorf("nats store: %s was made again (created %s) after this store made it (created %s): what it held is gone, "+
			"and intentd will not go on over the loss; restore it from a backup, or, to start over with what is there, delete the record: nats kv del %s %s (docs/operating.md)",
			key, made.Format(time.RFC3339Nano), was.Format(time.RFC3339Nano), s.marksBucket(), key)
	} else if ok {
		return nil
	}
	kv, err := s.marksKV(ctx, replicas)
	if err != nil {
		return err
	}
	text, _ := made.MarshalText()
	_, err = retryTries(ctx, func(try context.Context) (uint64, error) { return kv.Create(try, key, text) })
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("nats store: record %s in bucket %s: %w", key, s.marksBucket(), err)
	}
	return nil
}

// lostAtStart is the error of a start that finds missing what the records say was made.
func (s *Store) lostAtStart(what, key string, made time.Time) error {
	return fmt.Errorf("nats store: %s is missing, but bucket %s records that this store made it (created %s): it was deleted, or its files lost, "+
		"and intentd will not make an empty one over the loss; restore it from a backup, or, to start over empty, delete the record: nats kv del %s %s (docs/operating.md)",
		what, s.marksBucket(), made.Format(time.RFC3339), s.marksBucket(), key)
}

// makeStream makes the stream the store did not find, unless the records say it made
// one, which was then lost. The stream is looked for again after the records are read:
// a record is written once its stream exists, so a stream another node made meanwhile
// is found rather than taken for lost.
func (s *Store) makeStream(ctx context.Context, want jetstream.StreamConfig) (jetstream.Stream, error) {
	made, ok, err := s.marked(ctx, markStream)
	if err != nil {
		return nil, err
	}
	if ok {
		stream, err := retryTries(ctx, func(try context.Context) (jetstream.Stream, error) { return s.js.Stream(try, s.name) })
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, s.lostAtStart("stream "+s.name, markStream, made)
		}
		if err != nil {
			return nil, fmt.Errorf("nats store: read stream %s: %w", s.name, err)
		}
		return stream, nil
	}
	stream, err := retryTries(ctx, func(try context.Context) (jetstream.Stream, error) { return s.js.CreateStream(try, want) })
	if err != nil {
		return nil, fmt.Errorf("nats store: create stream %s: %w", s.name, err)
	}
	s.log.Info("nats store: created the stream", "stream", s.name)
	return stream, nil
}

// Bucket opens the key-value bucket cfg names, for what is kept beside the stream (a
// cluster's agreements), and watches it from then on as it watches the stream (Writable).
// A missing bucket is made, unless the records say this store made it before: then it
// was lost, and Bucket refuses rather than make an empty one. A bucket there is taken as
// it is, its configuration unchanged.
func (s *Store) Bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	open := func(try context.Context) (jetstream.KeyValue, error) { return s.js.KeyValue(try, cfg.Bucket) }
	kv, err := retryTries(ctx, open)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		made, ok, merr := s.marked(ctx, markBucket(cfg.Bucket))
		switch {
		case merr != nil:
			return nil, merr
		case ok:
			if kv, err = retryTries(ctx, open); errors.Is(err, jetstream.ErrBucketNotFound) {
				return nil, s.lostAtStart("bucket "+cfg.Bucket, markBucket(cfg.Bucket), made)
			}
		default:
			kv, err = retryTries(ctx, func(try context.Context) (jetstream.KeyValue, error) { return s.js.CreateKeyValue(try, cfg) })
			if errors.Is(err, jetstream.ErrBucketExists) { // made by another node meanwhile
				kv, err = retryTries(ctx, open)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("nats store: bucket %s: %w", cfg.Bucket, err)
	}
	st, err := retryTries(ctx, func(try context.Context) (jetstream.KeyValueStatus, error) { return kv.Status(try) })
	if err != nil {
		return nil, fmt.Errorf("nats store: bucket %s: %w", cfg.Bucket, err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		return nil, fmt.Errorf("nats store: bucket %s: its status has no stream information", cfg.Bucket)
	}
	info := bs.StreamInfo()
	if err := s.mark(ctx, markBucket(cfg.Bucket), info.Created, info.Config.Replicas); err != nil {
		return nil, err
	}
	subjects := []string{"$KV." + cfg.Bucket + ".>"}
	s.health.add(watched{stream: info.Config.Name, what: "bucket " + cfg.Bucket, created: info.Created, replicas: info.Config.Replicas,
		diff: func(got jetstream.StreamConfig) string {
			if !slices.Equal(got.Subjects, subjects) {
				return fmt.Sprintf("subjects %v, want %v", got.Subjects, subjects)
			}
			return ""
		}})
	return kv, nil
}
