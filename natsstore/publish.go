package natsstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// retryBusy waits a little before a write refused by isCheckBusy is tried again; the
// wait grows with the attempts and is jittered, so that the writers queued on one
// subject do not all come back at once.
func retryBusy(ctx context.Context, attempt int) error {
	d := time.Duration(100+rand.IntN(400)) * time.Microsecond << min(attempt, 6)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// publish writes one message and returns its sequence once the stream has it (synced on
// a server with sync_interval always; on a quorum of replicas for R3).
func (s *Store) publish(ctx context.Context, m *nats.Msg) (uint64, error) {
	return s.tries(ctx, m, 0, func(try context.Context) (uint64, error) { return s.sendOne(try, m) })
}

// writeTry bounds one try of a write. A try that goes unanswered, because the stream's
// leader died and its replicas are electing another (4 to 9 s in NATS's Raft) or because
// the acknowledgement was lost, is looked for and sent again, instead of holding the
// write, and the intent behind it, until the call's whole time-out: the first try after
// the election goes through.
const writeTry = 2 * time.Second

// tries sends a write until it is answered or ctx ends. fenced is the write's record
// that states the sequence it expects on its subject, if any; its sequence plus offset
// is the write's. A fenced write that went unanswered is looked for on its subject
// before it is sent again, and is found by its hdrWrite; sent again, the fence refuses
// a second copy, so a write lands once. A write without a fence is one whose copies are
// alike (a rollup of the same content), and is sent again as it is.
func (s *Store) tries(ctx context.Context, fenced *nats.Msg, offset uint64, send func(context.Context) (uint64, error)) (uint64, error) {
	var id string
	if fenced.Header.Get(jetstream.ExpectedLastSubjSeqHeader) != "" {
		id = nuid.Next()
		fenced.Header.Set(hdrWrite, id)
	}
	per := s.tryTimeout
	if per == 0 {
		per = writeTry
	}
	again := false // a try before went unanswered
	for {
		try, cancel := context.WithTimeout(ctx, per)
		started := time.Now()
		seq, err := send(try)
		cancel()
		if err == nil || ctx.Err() != nil {
			return seq, err
		}
		unanswered := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse)
		if !unanswered && !(again && isWrongSeq(err)) {
			return seq, err
		}
		if lost := s.lost(ctx, err); lost != nil {
			return 0, lost // no stream takes the write, and none will
		}
		again = true
		s.triedAgain.Add(1)
		if id != "" {
			look, cancel := context.WithTimeout(ctx, per)
			m, lerr := s.last(look, fenced.Subject)
			cancel()
			switch {
			case lerr == nil && m.Header.Get(hdrWrite) == id:
				return m.Sequence + offset, nil
			case lerr == nil && isWrongSeq(err):
				return 0, err // another writer's record is there
			}
		}
		// An answer that came at once (no responders while the stream has no leader)
		// is not tried again at once.
		if d := 100*time.Millisecond - time.Since(started); d > 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(d):
			}
		}
	}
}

// sendOne sends one message once, trying again only while the leader refuses its check
// as busy.
func (s *Store) sendOne(ctx context.Context, m *nats.Msg) (uint64, error) {
	for attempt := 0; ; attempt++ {
		ack, err := s.js.PublishMsg(ctx, m)
		if isCheckBusy(err) {
			if err := retryBusy(ctx, attempt); err != nil {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		s.fullAt.Store(0)
		return ack.Sequence, nil
	}
}

// publishBatch writes messages as one atomic batch: all are stored, with consecutive
// sequences, or none. It returns the last one's sequence. The messages before the commit
// go without a reply: one connection keeps their order, and a lost one makes the commit
// fail as an incomplete batch.
func (s *Store) publishBatch(ctx context.Context, msgs ...*nats.Msg) (uint64, error) {
	select {
	case s.batches <- struct{}{}:
		defer func() { <-s.batches }()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.tries(ctx, msgs[0], uint64(len(msgs)-1), func(try context.Context) (uint64, error) {
		for attempt := 0; ; attempt++ {
			seq, err := s.publishBatchOnce(try, msgs)
			if !isCheckBusy(err) && !isBatchRefused(err) {
				return seq, err
			}
			if err := retryBusy(try, attempt); err != nil {
				return 0, err
			}
		}
	})
}

// maxBatches bounds this store's atomic batches in flight. A server takes 50 per stream
// and drops the first message of one more, which then fails as incomplete; other nodes'
// batches count too, so a refused batch is also tried again.
const maxBatches = 32

func (s *Store) publishBatchOnce(ctx context.Context, msgs []*nats.Msg) (uint64, error) {
	id := nuid.Next()
	for i, m := range msgs {
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		m.Header.Set(hdrBatchID, id)
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			if err := s.nc.PublishMsg(m); err != nil {
				return 0, err
			}
			continue
		}
		m.Header.Set(hdrBatchCommit, "1")
	}
	return s.sendOne(ctx, msgs[len(msgs)-1])
}
