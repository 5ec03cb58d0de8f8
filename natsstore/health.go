package natsstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// The store watches the streams it needs, its own and the buckets opened with Bucket,
// for what an operator, or anyone holding a credential of the account, can do under it:
// delete one, make it again, or change it so that it no longer keeps what the store
// promised. Any of these makes every call, and Writable, fail with a busy error whose
// code says what is wrong, until the store is closed: nothing is made again over the
// loss, and nothing is read from a stream that is not the one the indexes were built
// from. The findings are logged with the stream's name; callers see the code and a
// message that names nothing.

// watched is a stream the store needs, as it was when the store opened it.
type watched struct {
	stream string // the stream's name; a bucket's is KV_ and the bucket's name
	what   string // for the log: "stream INTENTD", "bucket intentd_cluster_c"
	// created is when the stream was made, by the servers' clock, which every replica
	// and a restore from a backup keep: another time is another stream.
	created  time.Time
	replicas int                                 // fewer later lose the durability it had
	diff     func(jetstream.StreamConfig) string // what differs from the layout needed, or ""
}

// changed names what differs in cfg from the stream as the store opened it, in what
// the store's promises rest on, or is empty.
func (w watched) changed(cfg jetstream.StreamConfig) string {
	if cfg.Replicas < w.replicas {
		return fmt.Sprintf("%s has %d replicas, %d when it was opened", w.what, cfg.Replicas, w.replicas)
	}
	if w.diff != nil {
		if d := w.diff(cfg); d != "" {
			return w.what + " was changed: " + d
		}
	}
	return ""
}

// health is what the last check found of the streams the store needs.
type health struct {
	// check is held through a check: a check under way makes another wait for nothing,
	// and a failed call that would check is not held up behind it.
	check sync.Mutex

	mu      sync.Mutex
	watched []watched
	err     error     // nil, or a busy *intentd.Error coded store_missing or store_changed
	checked time.Time // when the last check ended, answered or not
}

func (h *health) add(w watched) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watched = append(h.watched, w)
}

// finding is what the last check found wrong, or nil.
func (h *health) finding() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// set records a check's finding, and logs it when it differs from the one before.
func (h *health) set(err error, log *slog.Logger) {
	h.mu.Lock()
	before := h.err
	h.err, h.checked = err, time.Now()
	h.mu.Unlock()
	switch {
	case err != nil && (before == nil || before.Error() != err.Error()):
		log.Error("nats store: "+errors.Unwrap(err).Error()+"; reads and writes are refused until it is put back as it was, or intentd is restarted (docs/operating.md)",
			"code", intentd.ErrorCode(err))
	case err == nil && before != nil:
		log.Info("nats store: the streams it needs are back as they were")
	}
}

// confirmAfter is how long a check waits to ask again about a stream the servers said
// is missing, before it believes them: a server just elected to lead JetStream may
// answer before it has applied everything it knows.
const confirmAfter = 200 * time.Millisecond

// recheckAfter is the age under which a check is not made again for a failed call: many
// calls failing at once share one.
const recheckAfter = 250 * time.Millisecond

// checkStores asks the servers for each stream the store needs and records what is
// wrong (findLoss), unless a check is under way or the last one is younger than fresh. A
// stream found missing stays missing, and the followers stop, for nothing the store
// opened is left to follow: one put back (restored from a backup, say) holds less than
// the indexes built from it, and the store must be opened again.
func (s *Store) checkStores(ctx context.Context, fresh time.Duration) {
	h := &s.health
	if !h.check.TryLock() {
		return
	}
	defer h.check.Unlock()
	h.mu.Lock()
	list, last, checked := slices.Clone(h.watched), h.err, h.checked
	h.mu.Unlock()
	if intentd.ErrorCode(last) == intentd.CodeStoreMissing || time.Since(checked) < fresh {
		return
	}
	found, answered := s.findLoss(ctx, list)
	if !answered {
		// The servers' silence says nothing of the streams; the connection's state
		// tells the callers why they wait.
		h.mu.Lock()
		h.checked = time.Now()
		h.mu.Unlock()
		return
	}
	h.set(found, s.log)
	if intentd.ErrorCode(found) == intentd.CodeStoreMissing {
		// On their own goroutine: a follower's consumer trying to start again on a
		// stream that is gone holds its lock through waits of up to 10 s.
		go s.stopFollowers()
	}
}

// findLoss is what is wrong with the first of list found wrong: missing; there but made
// again (another creation time: what was written to the one opened is gone with it);
// or changed so that it no longer keeps what the store promised. answered is false when
// a stream did not answer.
func (s *Store) findLoss(ctx context.Context, list []watched) (found error, answered bool) {
	for _, w := range list {
		info, err := s.streamInfo(ctx, w.stream)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return storeMissing(w.what + " was deleted"), true
		case err != nil:
			return nil, false
		case !info.Created.Equal(w.created):
			return storeMissing(fmt.Sprintf("%s was deleted and made again at %s (the one opened was made at %s)", w.what,
				info.Created.Format(time.RFC3339Nano), w.created.Format(time.RFC3339Nano))), true
		}
		if problem := w.changed(info.Config); problem != "" {
			return storeChanged(problem), true
		}
	}
	return nil, true
}

// stopFollowers ends both followers: of a stream made again, they would hand the event
// sink, and so every event stream's client, what someone else wrote there.
func (s *Store) stopFollowers() {
	for _, f := range s.followers() {
		f.stop()
	}
}

// streamInfo asks for a stream's information, and when the answer is that it is missing,
// asks again confirmAfter later.
func (s *Store) streamInfo(ctx context.Context, name string) (*jetstream.StreamInfo, error) {
	for again := false; ; again = true {
		stream, err := s.js.Stream(ctx, name)
		if err == nil {
			return stream.CachedInfo(), nil
		}
		if again || !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(confirmAfter):
		}
	}
}

// checkHealth is the periodic check, while the connection is up.
func (s *Store) checkHealth() {
	if s.nc.Status() != nats.CONNECTED {
		return
	}
	ctx, cancel := context.WithTimeout(s.closing, checkEvery)
	defer cancel()
	s.checkStores(ctx, 0)
}

// lost is what a call that failed with err should answer instead, when err is one a
// lost stream gives (no stream found; no stream answering a write): the finding of a
// check made now, unless one was just made or is under way, or nil. A write that finds
// no stream while its leader is being elected comes back here on its next try.
func (s *Store) lost(ctx context.Context, err error) error {
	if !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrNoStreamResponse) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lostCheckTimeout)
	defer cancel()
	s.checkStores(ctx, recheckAfter)
	return s.health.finding()
}

// lostCheckTimeout bounds the check a failed call makes: the servers answer one in
// milliseconds, and a write trying again while a stream elects its leader should not
// wait long for an answer that will not come.
const lostCheckTimeout = time.Second

func storeMissing(problem string) error {
	return &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStoreMissing,
		Message: "the store's data is missing from NATS: it was deleted under the service, which refuses reads and writes until an operator restores it and restarts the service",
		Err:     errors.New(problem)}
}

func storeChanged(problem string) error {
	return &intentd.Error{Kind: intentd.KindBusy, Code: intentd.CodeStoreChanged,
		Message: "the store in NATS was changed under the service, which refuses reads and writes until an operator puts it back as it was or restarts the service",
		Err:     errors.New(problem)}
}
