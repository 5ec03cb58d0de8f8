package natsstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// follower is one consumer of some of the stream's subjects that the store pulls from
// (pull.go), handing each record to handle once, in stream order. A pull that fails, or
// brings a record out of order, makes the consumer again after the last record handled;
// but a follower can still stand still or trickle (after a NATS server was killed, a
// node's event follower was seen to stand still for good while the stream went on, when
// it was one of the client's ordered consumers). The store checks its followers (check)
// and replaces one that stands behind while the stream has records for it.
type follower struct {
	s           *Store
	what        string // for the logs
	subjects    []string
	headersOnly bool
	handle      func(jetstream.Msg, *jetstream.MsgMetadata)
	// window is how long the follower lets records gather, asked before each window
	// (pull.go).
	window func() time.Duration
	// hurry ends a window at once, for a caller that waits for a record (pull.go,
	// hurryUp).
	hurry chan struct{}

	mu   sync.Mutex
	last uint64 // the stream sequence of the last record handled
	run  *pulling
	// interruptedAt is when the consumer last reported an interruption, or the store's
	// connection dropped, zero once a record came after it: a follower found behind
	// after one has owed its records since then, not since it was found.
	interruptedAt time.Time

	// What check owes: the stream's last sequence when it first found records after the
	// follower's last, and since when (zero: nothing is owed). The follower is lagging
	// if it has not handled, stallAfter later, every record of its subjects up to it.
	owed      uint64
	owedSince time.Time
	// replaced counts the consumers check replaced, for the metric (metrics.go).
	replaced atomic.Uint64
	// checking is set while a check of the follower runs (checkFollowers).
	checking atomic.Bool
}

// start makes a consumer from the given start and pulls from it, in place of the one
// before, which is stopped. It returns the new consumer.
func (f *follower) start(ctx context.Context, policy jetstream.DeliverPolicy, from uint64) (jetstream.Consumer, error) {
	cons, err := f.create(ctx, policy, from)
	if err != nil {
		return nil, err
	}
	run := &pulling{policy: policy, from: from}
	var runCtx context.Context
	runCtx, run.cancel = context.WithCancel(context.Background())
	f.mu.Lock()
	old := f.run
	f.run = run
	f.mu.Unlock()
	if old != nil {
		old.stop()
	}
	go f.pull(runCtx, run, cons)
	return cons, nil
}

// lastHandled is the stream sequence of the last record the follower handled.
func (f *follower) lastHandled() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// create makes the consumer of the follower's subjects: ephemeral, in memory on one
// server, acknowledging nothing, as the client's ordered consumers are; the follower
// keeps the order itself (pull).
func (f *follower) create(ctx context.Context, policy jetstream.DeliverPolicy, from uint64) (jetstream.Consumer, error) {
	return retryTries(ctx, func(try context.Context) (jetstream.Consumer, error) {
		return notYet(f.s.js.CreateConsumer(try, f.s.name, jetstream.ConsumerConfig{
			FilterSubjects: f.subjects,
			DeliverPolicy:  policy,
			OptStartSeq:    from,
			HeadersOnly:    f.headersOnly,
			AckPolicy:      jetstream.AckNonePolicy,
			MemoryStorage:  true,
			Replicas:       1,
			// A consumer replaced, or left by a node that died, goes within a minute:
			// the stream holds a bounded number.
			InactiveThreshold: time.Minute,
		}))
	})
}

// receive hands a record on unless it was handled already: for a moment after a
// replacement, the old consumer and the new one may both deliver. Each delivers in order
// and with no gap (pull checks), so skipping what is not newer loses nothing.
func (f *follower) receive(m jetstream.Msg, meta *jetstream.MsgMetadata) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if meta.Sequence.Stream <= f.last {
		return
	}
	f.last = meta.Sequence.Stream
	f.interruptedAt = time.Time{}
	f.handle(m, meta)
}

// interrupted notes that the follower's consumer, or the connection under it, was
// interrupted at now.
func (f *follower) interrupted(now time.Time) {
	f.mu.Lock()
	f.interruptedAt = now
	f.mu.Unlock()
}

// stallAfter is how long a follower may take to handle the records of its subjects
// that the stream held when check found it behind: well past a busy follower's delay,
// and short enough that, with a check every checkEvery, a node delivers an event within
// 5 s of the others (docs/cluster.md). What counts is reaching the stream's end of then,
// not moving at all: after an election a consumer was seen to move a record at a time,
// starting again and again, while the others were seconds ahead.
const stallAfter = 2 * time.Second

// probeTimeout bounds each look a check takes at the stream.
const probeTimeout = 750 * time.Millisecond

// check compares the follower with the stream. Found behind, it owes every record of its
// subjects up to the stream's last sequence of now; one that still owes any stallAfter
// later is replaced: a new consumer takes over after the last record handled.
func (f *follower) check(ctx context.Context, now time.Time) {
	f.mu.Lock()
	last, owed, since := f.last, f.owed, f.owedSince
	interruptedAt := f.interruptedAt
	f.mu.Unlock()
	// The probes wait no longer than until the next check: while the stream elects a
	// leader they go unanswered, and one that waited for the store's time-out held the
	// checks back for seconds after the stream answered again.
	probe, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	next, err := f.next(probe, last)
	if owed != 0 && (last >= owed || err == nil && (next == 0 || next > owed)) {
		// Paid: no record of its subjects up to owed is left. What came since is owed
		// from now.
		owed, since = 0, time.Time{}
	}
	switch {
	case err != nil:
		// The stream does not answer: its leader is being elected. The follower cannot
		// move meanwhile either, so what it owes is counted from now, unless it was
		// before: if it has not caught up by the time the stream answers again, it is
		// replaced then, at once. That is the case that matters: the consumer of a node
		// whose server led the stream can stand still after the election, while the
		// others' go on.
		if owed == 0 {
			owed, since = last+1, now
		}
	case next == 0:
		owed, since = 0, time.Time{}
	case owed == 0:
		owed, since = next, now
		if info, err := f.s.stream.Info(probe); err == nil && info.State.LastSeq > owed {
			owed = info.State.LastSeq
		}
		// Interrupted since its last record (a missed heartbeat, the connection lost,
		// while the checks could not run or the stream did not answer), it has owed
		// since the interruption: one still behind stallAfter after it is replaced now.
		if !interruptedAt.IsZero() && interruptedAt.Before(now) {
			since = interruptedAt
			if now.Sub(since) >= stallAfter {
				f.replace(ctx, last, since)
				return
			}
		}
	case next <= owed && now.Sub(since) >= stallAfter:
		f.replace(ctx, last, since)
		return
	}
	f.mu.Lock()
	f.owed, f.owedSince = owed, since
	f.mu.Unlock()
}

// replace starts a new consumer after last, the follower's last record, in place of one
// that has owed records since since.
func (f *follower) replace(ctx context.Context, last uint64, since time.Time) {
	f.s.log.Warn("nats store: a follower of the stream is behind it; a new one takes over",
		"follows", f.what, "last", last, "since", since)
	if _, err := f.start(ctx, jetstream.DeliverByStartSequencePolicy, last+1); err != nil {
		f.s.log.Error("nats store: replace a follower of the stream", "follows", f.what, "error", err)
		return
	}
	f.replaced.Add(1)
	f.mu.Lock()
	f.owed, f.owedSince = 0, time.Time{}
	f.mu.Unlock()
}

// next returns the sequence of a record of the follower's subjects after last, or 0 when
// the stream holds none. It asks the stream's leader, which has every acknowledged record.
func (f *follower) next(ctx context.Context, last uint64) (uint64, error) {
	for _, subj := range f.subjects {
		m, err := f.s.getMsg(ctx, last+1, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return m.Sequence, nil
	}
	return 0, nil
}

// followers are the store's followers started so far: of the indexes, then of the
// events. Open starts them while the connection's handlers may already run.
func (s *Store) followers() []*follower {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := make([]*follower, 0, 2)
	for _, f := range []*follower{s.watch, s.events} {
		if f != nil {
			fs = append(fs, f)
		}
	}
	return fs
}

// stop ends the follower's consumer.
func (f *follower) stop() {
	f.mu.Lock()
	run := f.run
	f.mu.Unlock()
	if run != nil {
		run.stop()
	}
}

// metricName is what the follower follows, as the metric's label says it.
func (f *follower) metricName() string {
	if f.headersOnly {
		return "index"
	}
	return "events"
}
