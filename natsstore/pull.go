package natsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// How a follower pulls. Without a window (Options.FollowWindow 0), a pull waits for
// records and hands each on as it comes, as the client's own consumers do. With one, a
// record that comes alone is handed on at once; then the follower lets the window pass
// and takes every record that came meanwhile in one pull, and again while records
// come. A member following the stream under load is then woken once a window rather
// than once a record, which was most of what following cost it (docs/cluster.md, "A
// member that only follows"); a record waits at most the window longer than it did.
// The window is the store's Options.FollowWindow while someone waits for the records,
// and ten times it, at most MaxFollowWindow, while nobody does (patientWindow).
const (
	// batchMax is the most records one pull takes; a follower that gets as many pulls
	// again at once.
	batchMax = 512
	// pullWait is how long a pull waits for a first record, and pullHeartbeat how often
	// the server says, meanwhile, that it is there: two missed and the consumer is made
	// again on whichever server answers, after the last record handled, and the server
	// this store is connected to is probed (probe.go). The client's defaults wait 30 s,
	// while the index and the event stream stand still; a heartbeat of half the wait
	// (2 s, reported after 4) let a node's stream stand 8 s behind the others' while a
	// NATS server was paused (docs/reliability.md).
	pullWait      = 4 * time.Second
	pullHeartbeat = time.Second
	// MaxFollowWindow bounds Options.FollowWindow: far below stallAfter, so that a
	// window never reads as a follower standing still.
	MaxFollowWindow = 500 * time.Millisecond
)

// pulling is one consumer's run of pulls, ended by stop.
type pulling struct {
	cancel context.CancelFunc
	// policy and from are where the run's first consumer started: one made again
	// before a record was handled starts there too.
	policy jetstream.DeliverPolicy
	from   uint64
}

// stop ends the run. A pull under way may still bring records; they are not handed on.
func (p *pulling) stop() { p.cancel() }

// resumeAt is where a consumer made again in place of the run's starts, the follower
// having handled up to last: after it, or where the run began when it handled nothing.
func (p *pulling) resumeAt(last uint64) (jetstream.DeliverPolicy, uint64) {
	if last == 0 {
		return p.policy, p.from
	}
	return jetstream.DeliverByStartSequencePolicy, last + 1
}

// errOutOfOrder is a record whose consumer sequence does not follow the last one's: one
// was lost on the way, and the consumer is made again after the last record handled.
var errOutOfOrder = errors.New("a record of the consumer was lost on the way")

// pull hands cons's records to receive until ctx ends. With a window it waits for a
// first record, then pulls what is there, a window apart, until a pull brings nothing.
// A pull that fails is logged, and the consumer made again after the last record
// handled: at once the first time, then after a wait that doubles while pulls keep
// failing (restartWait), so that a stream that cannot serve pulls, while it elects a
// leader or a server comes back, is not sent a new consumer a millisecond.
func (f *follower) pull(ctx context.Context, run *pulling, cons jetstream.Consumer) {
	var delivered uint64 // the consumer sequence of the last record, to see one lost
	waiting := true
	failed := 0 // pulls failed in a row
	var window *time.Timer
	for ctx.Err() == nil {
		n, pending, err := f.pullOnce(ctx, cons, waiting, &delivered)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if cons, err = f.restart(ctx, run, cons, err, failed); err != nil {
				return
			}
			failed++
			delivered, waiting = 0, true
			continue
		}
		failed = 0
		length := f.window()
		switch {
		case length == 0:
			continue // every pull waits, and hands records on as they come
		case n == batchMax, waiting && pending > 0:
			// More are there: take them at once. A first record with others behind it
			// (a follower starting, or made again, behind the stream; a burst after a
			// quiet spell) does not wait out the window for them.
			waiting = false
			continue
		case n == 0:
			waiting = true // nothing came: wait for the next record
			continue
		}
		waiting = false
		if window == nil {
			window = time.NewTimer(length)
		} else {
			window.Reset(length)
		}
		select {
		case <-ctx.Done():
			window.Stop()
			return
		case <-window.C:
		case <-f.hurry:
			window.Stop()
		}
	}
}

// patientWindow is the window of a follower that nobody waits on: the indexes', whose
// callers hurry it, and the events' while only the transparency log reads them. Ten
// times Options.FollowWindow, at most MaxFollowWindow: a member that follows a busy
// stream and serves nobody is woken a few times a second (docs/cluster.md), and the log,
// which signs a checkpoint a second, takes its leaves at most that much later.
func (s *Store) patientWindow() time.Duration {
	return min(10*s.followWindow, MaxFollowWindow)
}

// eventsWindow is the window of the events' follower: Options.FollowWindow while someone
// waits for the events, else patientWindow.
func (s *Store) eventsWindow() time.Duration {
	if s.awaited.Load() {
		return s.followWindow
	}
	return s.patientWindow()
}

// EventsAwaited says whether a subscriber that is not patient follows the events
// (intentd.EventPacer). One that comes ends the events' follower's window under way, so
// that its first events do not wait out the patient window. It takes no lock: the
// engine's event bus calls it.
func (s *Store) EventsAwaited(awaited bool) {
	if s.awaited.Swap(awaited) || !awaited {
		return
	}
	nudge(s.eventsHurry)
}

// hurryUp ends the follower's window under way, or its next one: a caller waits for a
// record the stream holds. A hurry that finds the follower waiting for a record costs
// nothing; the record is taken as it comes.
func (f *follower) hurryUp() { nudge(f.hurry) }

// nudge leaves a word in c, a follower's hurry, unless one is there already.
func nudge(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// restartWait is the wait before a follower's consumer is made again after failed
// pulls in a row: none after the first, then 100 ms doubling up to a second.
func restartWait(failed int) time.Duration {
	if failed == 0 {
		return 0
	}
	return min(100*time.Millisecond<<min(failed-1, 4), time.Second)
}

// pullOnce makes one pull and hands each record it brings on. A pull that waits does
// so for pullWait at most: with a window, for one record; without, for records as they
// come, up to batchMax. One that does not wait takes what is there, up to batchMax. It
// returns how many records came, and how many more the consumer held after the last
// (its metadata's count of pending records).
func (f *follower) pullOnce(ctx context.Context, cons jetstream.Consumer, waiting bool, delivered *uint64) (n int, pending uint64, err error) {
	var batch jetstream.MessageBatch
	switch {
	case waiting:
		size := batchMax
		if f.s.followWindow > 0 {
			size = 1
		}
		wait, cancel := context.WithTimeout(ctx, pullWait)
		defer cancel()
		batch, err = cons.Fetch(size, jetstream.FetchContext(wait), jetstream.FetchHeartbeat(pullHeartbeat))
	default:
		batch, err = cons.FetchNoWait(batchMax)
	}
	if err != nil {
		return 0, 0, err
	}
	var lost error
	for m := range batch.Messages() {
		if ctx.Err() != nil || lost != nil {
			continue // stopped, or a record lost: the rest is drained, not handed on
		}
		meta, err := m.Metadata()
		if err != nil {
			lost = fmt.Errorf("a record without its metadata: %w", err)
			continue
		}
		if meta.Sequence.Consumer != *delivered+1 {
			lost = fmt.Errorf("%w: consumer sequence %d after %d", errOutOfOrder, meta.Sequence.Consumer, *delivered)
			continue
		}
		*delivered = meta.Sequence.Consumer
		f.receive(m, meta)
		n, pending = n+1, meta.NumPending
	}
	if lost != nil {
		return n, pending, lost
	}
	// A wait that ends with nothing is not an error: the pull's own time ran out.
	if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrBatchCompleted) {
		return n, pending, err
	}
	return n, pending, nil
}

// restart logs what interrupted the follower's pulls, and, after restartWait(failed),
// makes its consumer again after the last record handled, trying each second until it
// can or ctx ends. The consumer before is deleted, as far as the stream answers: one
// that is not goes by itself within a minute (create).
func (f *follower) restart(ctx context.Context, run *pulling, old jetstream.Consumer, cause error, failed int) (jetstream.Consumer, error) {
	f.s.log.Warn("nats store: a follower of the stream was interrupted; it starts again", "follows", f.what, "error", cause)
	f.interrupted(time.Now())
	f.s.probeIfSilent(cause)
	if info := old.CachedInfo(); info != nil {
		go func() {
			del, cancel := context.WithTimeout(context.Background(), probeTimeout)
			defer cancel()
			_ = f.s.stream.DeleteConsumer(del, info.Name)
		}()
	}
	if wait := restartWait(failed); wait > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
	f.mu.Lock()
	last := f.last
	f.mu.Unlock()
	policy, from := run.resumeAt(last)
	for {
		cons, err := f.create(ctx, policy, from)
		if err == nil {
			return cons, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		f.s.log.Warn("nats store: make a follower's consumer again", "follows", f.what, "error", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
