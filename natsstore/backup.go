package natsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/intentd/intentd/internal/redact"
)

// BackupStats say what a backup of the stream holds.
type BackupStats struct {
	// Records is how many records it holds; Last is the stream's last sequence when
	// the reading ended, past which a restored stream numbers its records.
	Records, Last uint64
}

// Backup writes the stream's records to w in sequence order (backupfile.go), while
// writes go on. It reads the stream from its first record until it has caught up with
// its last, and stops at a record that ends a write: never between the snapshot and
// the event of an atomic batch.
//
// What it holds: every record written before it began that was still there when its
// reading came to it, and every record written until it caught up. Records are only
// ever deleted by newer ones on the same subject (a snapshot rolled up by the next, a
// policy by its tombstone) or by the store's pruning and time to live: so for every
// intent and policy, the newest record as of the moment the reading ended is in the
// backup, and a restore applies the rollups again. A record deleted after it was read
// stays in the backup (an older snapshot under a newer one, an event pruned meanwhile),
// which a restore takes as the store would have before the deletion.
func (s *Store) Backup(ctx context.Context, w io.Writer) (BackupStats, error) {
	var st BackupStats
	enc, err := newBackupEncoder(w)
	if err != nil {
		return st, err
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("nats store: read stream %s: %w", s.name, err)
	}
	st.Last = info.State.LastSeq
	if info.State.Msgs > 0 {
		if st, err = s.readAll(ctx, enc); err != nil {
			return st, err
		}
	}
	return st, enc.end(st.Last)
}

// backupFetch is how many records one fetch of Backup asks for, and backupWait how long
// it waits for them.
const (
	backupFetch = 512
	backupWait  = time.Second
)

func (s *Store) readAll(ctx context.Context, enc *backupEncoder) (BackupStats, error) {
	var st BackupStats
	// An ordered consumer makes its consumer again at every fetch, and nats.go tries
	// that without ctx, and with no end unless told: a backup while a server is dead or
	// JetStream elects its leaders would wait for ever. Two tries (about 21 s at most,
	// which ctx does not shorten) and it fails, for its operator to run again.
	cons, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy, MaxResetAttempts: 2})
	if err != nil {
		return st, fmt.Errorf("nats store: read stream %s: %w", s.name, err)
	}
	// What the stream held when the backup began, from its leader: the reading goes
	// at least that far. The consumer's own count of what is pending is its server's,
	// which may be a replica still catching up (one just back from its death), and
	// would end the reading short of writes acknowledged before the request.
	began, err := s.stream.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("nats store: read stream %s: %w", s.name, err)
	}
	target := began.State.LastSeq
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		batch, err := cons.Fetch(backupFetch, jetstream.FetchMaxWait(backupWait))
		if err != nil {
			return st, fmt.Errorf("nats store: read stream %s: %w", s.name, err)
		}
		caughtUp, n := false, 0
		for m := range batch.Messages() {
			meta, err := m.Metadata()
			if err != nil {
				return st, fmt.Errorf("nats store: read stream %s: %w", s.name, err)
			}
			h := m.Headers()
			if err := enc.record(backupRecord{seq: meta.Sequence.Stream, subject: m.Subject(), header: h, data: m.Data()}); err != nil {
				return st, err
			}
			n++
			st.Records++
			st.Last = max(st.Last, meta.Sequence.Stream)
			// A record of an atomic batch that is not its last is followed by the
			// rest, which must be read too.
			inBatch := h.Get(hdrBatchID) != "" && h.Get(hdrBatchCommit) == ""
			caughtUp = meta.NumPending == 0 && st.Last >= target && !inBatch
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return st, fmt.Errorf("nats store: read stream %s: %w", s.name, err)
		}
		if caughtUp {
			return st, nil
		}
		if n == 0 {
			// Nothing came: the records after the last one read were deleted.
			info, err := s.stream.Info(ctx)
			if err != nil {
				return st, fmt.Errorf("nats store: read stream %s: %w", s.name, err)
			}
			if info.State.LastSeq <= st.Last || info.State.Msgs == 0 {
				st.Last = max(st.Last, info.State.LastSeq)
				return st, nil
			}
		}
	}
}

// RestoreStats say what a restore wrote.
type RestoreStats struct {
	Stream  string
	Records uint64
	Last    uint64
}

// restoreBatch is how many records a restore writes in one atomic batch: one write,
// and one sync, of the server's for each (its limit is 1,000 by default), where a write
// of each record waited for a sync of its own.
const restoreBatch = 500

// Restore makes the store's stream on the servers of opts from a backup Backup wrote,
// with every record at the sequence it had, so that event ids stay what they were.
// It refuses a stream of that name already there. On any error the stream it made is
// deleted again: a store is restored whole or not at all. A record of the stream in the
// records bucket (marks.go), left by a stream that was lost, is removed once the stream
// is whole, so that intentd starts on the restored one.
func Restore(ctx context.Context, opts Options, r io.Reader) (RestoreStats, error) {
	if len(opts.URLs) == 0 {
		return RestoreStats{}, errors.New("nats store: no server URL")
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "intentd"
	}
	if !validPrefix(prefix) {
		return RestoreStats{}, fmt.Errorf("nats store: prefix %q is not a subject of plain tokens", prefix)
	}
	s := &Store{name: StreamOf(prefix), prefix: prefix}
	st := RestoreStats{Stream: s.name}
	dec, err := newBackupDecoder(r)
	if err != nil {
		return st, err
	}
	auth, err := authOptions(opts)
	if err != nil {
		return st, err
	}
	urls := strings.Join(opts.URLs, ",")
	nc, err := nats.Connect(urls, append(auth, nats.Name("intentd restore"))...)
	if err != nil {
		return st, fmt.Errorf("nats store: connect to %s: %w", redact.URLs(urls), err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return st, err
	}
	s.js = js
	switch _, err := js.Stream(ctx, s.name); {
	case err == nil:
		return st, fmt.Errorf("nats store: stream %s exists: a restore makes the stream, and never writes over one (delete it first, or restore under another --nats-prefix)", s.name)
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return st, fmt.Errorf("nats store: read stream %s: %w", s.name, err)
	}
	first, err := dec.next()
	if err != nil && !errors.Is(err, io.EOF) {
		return st, err
	}
	replicas := opts.Replicas
	if replicas == 0 {
		replicas = 1
		if len(nc.Servers()) >= 3 {
			replicas = 3
		}
	}
	cfg := s.streamConfig(replicas)
	cfg.FirstSeq = first.seq
	if first.seq == 0 { // no record
		cfg.FirstSeq = dec.last + 1
	}
	stream, err := js.CreateStream(ctx, cfg)
	if err != nil {
		return st, fmt.Errorf("nats store: create stream %s: %w", s.name, err)
	}
	s.stream = stream
	if err := s.restoreRecords(ctx, nc, first, dec, &st); err != nil {
		del, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if derr := js.DeleteStream(del, s.name); derr != nil {
			return st, fmt.Errorf("%w; and the stream %s it had begun could not be deleted, delete it before intentd starts: %v", err, s.name, derr)
		}
		return st, err
	}
	if kv, err := js.KeyValue(ctx, s.marksBucket()); err == nil {
		if err := kv.Delete(ctx, markStream); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return st, fmt.Errorf("nats store: remove the record of the lost stream in bucket %s: %w", s.marksBucket(), err)
		}
	}
	return st, nil
}

// gapSubject is where a restore writes the placeholders that keep the sequences of
// deleted records, purged once the restore is done.
func (s *Store) gapSubject() string { return s.prefix + ".restore.gap" }

func (s *Store) restoreRecords(ctx context.Context, nc *nats.Conn, first backupRecord, dec *backupDecoder, st *RestoreStats) error {
	next := first.seq // the sequence the next record written takes
	var batch []*nats.Msg
	// A rollup must be the first record of its subject in a batch (the server's rule):
	// a second snapshot of an intent begins a new batch.
	inBatch := map[string]bool{}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		clear(inBatch)
		id := nuid.Next()
		for i, m := range batch {
			if m.Header == nil {
				m.Header = nats.Header{}
			}
			m.Header.Set(hdrBatchID, id)
			m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
			if i < len(batch)-1 {
				if err := nc.PublishMsg(m); err != nil {
					return fmt.Errorf("nats store: restore: write sequence %d: %w", next-uint64(len(batch))+uint64(i), err)
				}
			}
		}
		commit := batch[len(batch)-1]
		commit.Header.Set(hdrBatchCommit, "1")
		ack, err := s.js.PublishMsg(ctx, commit)
		if err != nil {
			return fmt.Errorf("nats store: restore: write sequences %d to %d: %w", next-uint64(len(batch)), next-1, err)
		}
		if ack.Sequence != next-1 {
			return fmt.Errorf("nats store: restore: the records meant for sequences up to %d were written up to %d (is something else writing to stream %s?)", next-1, ack.Sequence, s.name)
		}
		batch = batch[:0]
		return nil
	}
	add := func(m *nats.Msg) error {
		if inBatch[m.Subject] && m.Header.Get(hdrRollup) != "" {
			if err := flush(); err != nil {
				return err
			}
		}
		inBatch[m.Subject] = true
		batch = append(batch, m)
		next++
		if len(batch) >= restoreBatch {
			return flush()
		}
		return nil
	}
	gaps := 0
	fill := func(upTo uint64) error {
		for next < upTo {
			gaps++
			if err := add(&nats.Msg{Subject: s.gapSubject()}); err != nil {
				return err
			}
		}
		return nil
	}
	for rec := first; rec.seq != 0; {
		if err := fill(rec.seq); err != nil {
			return err
		}
		if err := add(&nats.Msg{Subject: rec.subject, Data: rec.data, Header: restoredHeader(rec.header)}); err != nil {
			return err
		}
		st.Records++
		var err error
		if rec, err = dec.next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
	}
	if next > 1 || dec.last > 0 {
		if err := fill(dec.last + 1); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	st.Last = next - 1
	if gaps > 0 {
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.gapSubject())); err != nil {
			return fmt.Errorf("nats store: restore: remove the placeholders of deleted records: %w", err)
		}
	}
	return nil
}

// restoredHeader is a record's header as a restore writes it: without the headers of
// the write that made it (its batch, the sequence it expected, its id for the
// server's duplicate window), which would refuse or hold the write again; the restore
// writes batches of its own.
func restoredHeader(h nats.Header) nats.Header {
	if len(h) == 0 {
		return nil
	}
	out := nats.Header{}
	for k, vs := range h {
		if strings.HasPrefix(k, "Nats-Batch-") || strings.HasPrefix(k, "Nats-Expected-") || k == jetstream.MsgIDHeader {
			continue
		}
		out[k] = vs
	}
	return out
}

// StreamName is the name of the store's stream.
func (s *Store) StreamName() string { return s.name }

// StreamOf is the name of the stream of a store with prefix ("" for the default).
func StreamOf(prefix string) string {
	if prefix == "" {
		prefix = "intentd"
	}
	return strings.ToUpper(strings.ReplaceAll(prefix, ".", "_"))
}
