package natsstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// follower is one ordered consumer of some of the stream's subjects, handing each record
// to handle once, in stream order. The consumer starts itself again after a missed
// heartbeat or a reconnection, but not always: after a NATS server was killed, a node's
// event follower was seen to stand still for good while the stream went on. The store
// checks its followers (check) and replaces one that stands still while the stream has
// records for it.
type follower struct {
	s           *Store
	what        string // for the logs
	subjects    []string
	headersOnly bool
	handle      func(jetstream.Msg, *jetstream.MsgMetadata)

	mu   sync.Mutex
	last uint64 // the stream sequence of the last record handled
	cc   jetstream.ConsumeContext
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

// start makes a consumer from the given start and consumes with it, in place of the one
// before, which is stopped. It returns the new consumer.
func (f *follower) start(ctx context.Context, policy jetstream.DeliverPolicy, from uint64) (jetstream.Consumer, error) {
	cons, err := retryTries(ctx, func(try context.Context) (jetstream.Consumer, error) {
		return notYet(f.s.js.OrderedConsumer(try, f.s.name, jetstream.OrderedConsumerConfig{
			FilterSubjects: f.subjects,
			DeliverPolicy:  policy,
			OptStartSeq:    from,
			HeadersOnly:    f.headersOnly,
			// A consumer replaced, or left by a node that died, goes within a minute
			// rather than the client's default five: the stream holds a bounded number.
			InactiveThreshold: time.Minute,
		}))
	})
	if err != nil {
		return nil, err
	}
	cc, err := cons.Consume(f.receive, f.consumeOpts()...)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	old := f.cc
	f.cc = cc
	f.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	return cons, nil
}

// receive hands a record on unless it was handled already: for a moment after a
// replacement, the old consumer and the new one may both deliver. Each delivers in order
// and with no gap, so skipping what is not newer loses nothing.
func (f *follower) receive(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		return
	}
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

// consumeOpts make the consumer notice a lost server within seconds: a pull that brings
// nothing ends after a few seconds, and the server sends a heartbeat every second a
// pull waits with nothing to deliver; two missed (2 s without a record or a heartbeat)
// make the ordered consumer start again after the last message it had, on whichever
// server answers, and probe the server this store is connected to (probe.go). The
// client's defaults wait 30 s, while the index and the event stream stand still; a
// heartbeat of half the expiry (2 s, reported after 4) let a node's stream stand 8 s
// behind the others' while a NATS server was paused (docs/reliability.md). What goes
// wrong on the way is logged: a follower that stands still is what an operator needs
// to see.
func (f *follower) consumeOpts() []jetstream.PullConsumeOpt {
	return []jetstream.PullConsumeOpt{
		jetstream.PullExpiry(4 * time.Second),
		jetstream.PullHeartbeat(time.Second),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			f.s.log.Warn("nats store: a follower of the stream was interrupted; it starts again", "follows", f.what, "error", err)
			f.interrupted(time.Now())
			f.s.probeIfSilent(err)
		}),
	}
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
	cc := f.cc
	f.mu.Unlock()
	if cc != nil {
		cc.Stop()
	}
}

// metricName is what the follower follows, as the metric's label says it.
func (f *follower) metricName() string {
	if f.headersOnly {
		return "index"
	}
	return "events"
}
