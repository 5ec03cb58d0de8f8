package natsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/compactmap"
	"github.com/intentd/intentd/internal/jsread"
)

// entry is what the store knows of an intent: the sequence of its last snapshot, which
// a writer must name to write the next one, and what the indexes need.
type entry struct {
	seq     uint64
	created uint64 // the sequence of the open snapshot
	phase   string
	policy  string
	expires time.Time
}

// CreateIntent stores a new open intent. Its snapshot is written expecting no record on
// its subject (or only the record of a withdrawn create), so of racing creates of one
// id, on any node, one wins.
//
// The policy is checked twice: live before the write, and after it, once this store has
// followed the stream past the intent, that no tombstone came before the intent in the
// stream. A delete whose tombstone comes after the intent sees the intent and refuses;
// a create whose intent comes after the tombstone withdraws it here and reports
// ErrPolicyNotFound. Nothing in this serialises the creates naming one policy: each
// writes only its own subject.
func (s *Store) CreateIntent(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time) (err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	ps, err := s.policyState(ctx, policyID, false)
	if err == nil && !ps.live {
		// The policy may have been stored by another node since this one looked.
		ps, err = s.policyState(ctx, policyID, true)
	}
	if err != nil {
		return err
	}
	if !ps.live {
		return intentd.ErrPolicyNotFound
	}
	if s.beforeFirstStep != nil {
		s.beforeFirstStep()
	}
	var after uint64 // the sequence of a withdrawn create's record, if any
	for range 5 {
		snap := fenced(snapshotMsg(s.intentSubject(id), phaseOpen, policyID, 0, expiresAt, snapshot), after)
		if after != 0 {
			rollUp(snap) // the withdrawn record goes
		}
		seq, err := s.publish(ctx, snap)
		if isWrongSeq(err) {
			m, err := s.last(ctx, s.intentSubject(id))
			switch {
			case err == nil && !isWithdrawn(m.Header):
				return intentd.ErrExists
			case err == nil:
				after = m.Sequence
			case !errors.Is(err, intentd.ErrNotFound):
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		s.apply(id, &entry{seq: seq, created: seq, phase: phaseOpen, policy: policyID, expires: expiresAt})
		if s.afterFirstStep != nil {
			s.afterFirstStep()
		}
		// The intent is written: whatever becomes of the caller, it is withdrawn if a
		// delete of its policy came first.
		return s.secondStep(ctx, func(ctx context.Context) error { return s.checkPolicyAfter(ctx, id, policyID, seq) })
	}
	return fmt.Errorf("create intent %s: its subject keeps changing", id)
}

// checkPolicyAfter is a create's second look at its policy, once the intent is written
// at seq: when the policy's last record is a tombstone older than the intent, the delete
// did not see the intent, so the intent is withdrawn. A tombstone newer than the intent
// belongs to a delete that sees it and puts the policy back.
func (s *Store) checkPolicyAfter(ctx context.Context, id, policyID string, seq uint64) error {
	if err := s.waitPolicy(ctx, policyID, seq); err != nil {
		return err
	}
	s.mu.Lock()
	ps := s.policies[policyID]
	s.mu.Unlock()
	if ps.live || ps.seq > seq {
		return nil
	}
	wseq, err := s.publish(ctx, withdrawnMsg(s.intentSubject(id), seq))
	if isWrongSeq(err) {
		// A try of this step before, whose answer was lost, may have withdrawn it.
		if m, lerr := s.last(ctx, s.intentSubject(id)); lerr == nil && isWithdrawn(m.Header) {
			wseq, err = m.Sequence, nil
		}
	}
	if err != nil {
		return fmt.Errorf("withdraw intent %s, created against a deleted policy: %w", id, err)
	}
	s.dropIntent(id, wseq)
	return intentd.ErrPolicyNotFound
}

// dropIntent takes out of the index an intent withdrawn at wseq, unless a newer record
// of it is known.
func (s *Store) dropIntent(id string, wseq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fences.drop(id, wseq)
	if cur, ok := s.intents[id]; ok && cur.seq < wseq {
		s.forgetIntent(id)
	}
}

// Intent returns an intent's snapshot.
func (s *Store) Intent(ctx context.Context, id string) (snapshot []byte, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	m, err := s.last(ctx, s.intentSubject(id))
	return s.intentOf(id, m, err)
}

// IntentNearby returns an intent's snapshot as the replica of the stream nearest this
// node holds it, by a direct get (a stream this release made allows them: stream.go),
// sparing the stream's leader and this node the leader's JSON answer. The engine reads
// so only where it writes against what it read (the proposal's processing record), so
// a replica behind the leader costs a refused write and a read from the leader. When no
// replica answers (direct gets not allowed), or the one that does holds no live record
// (not yet written there, or withdrawn and since created again), the leader says.
func (s *Store) IntentNearby(ctx context.Context, id string) (snapshot []byte, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	subject := s.intentSubject(id)
	if time.Now().UnixNano() < s.directOff.Load() {
		m, err := s.last(ctx, subject)
		return s.intentOf(id, m, err)
	}
	try, cancel := context.WithTimeout(ctx, directTry)
	m, err := jsread.LastNearby(try, s.nc, s.name, subject)
	cancel()
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		// No replica answered, or not as a replica does. A stream without direct gets
		// (as earlier releases made it) answers "no responders" at once, which is no
		// fault; a user not allowed them is never answered, which is.
		if !errors.Is(err, nats.ErrNoResponders) {
			s.log.Warn("nats store: a direct get of an intent failed; the store reads intents through the stream's leader for a minute",
				"err", err, "intent_id", id)
		}
		s.directOff.Store(time.Now().Add(directRetry).UnixNano())
	}
	if err != nil || isWithdrawn(m.Header) {
		m, err = s.last(ctx, subject)
	}
	return s.intentOf(id, m, err)
}

// directRetry is how long IntentNearby reads through the leader alone after a direct
// get failed: a stream given direct gets by an operator is read so within that time.
// directTry bounds a direct get, which a replica answers in a round trip, so that one
// nobody answers costs a read that much before it goes to the leader.
const (
	directRetry = time.Minute
	directTry   = time.Second
)

// intentOf is the answer to the read of an intent: its snapshot, or ErrNotFound for a
// withdrawn one. The record read is this store's fence for the write that follows.
func (s *Store) intentOf(id string, m *jetstream.RawStreamMsg, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if isWithdrawn(m.Header) {
		return nil, intentd.ErrNotFound
	}
	s.fenceRead(id, entryOf(m.Sequence, m.Header)) // the read before a write
	return m.Data, nil
}

// current returns what is known of an intent, reading its last snapshot's headers when
// this store has not seen it.
func (s *Store) current(ctx context.Context, id string) (entry, error) {
	s.mu.Lock()
	e, ok := s.entryIn(id)
	s.mu.Unlock()
	if ok {
		return e, nil
	}
	m, err := s.last(ctx, s.intentSubject(id))
	if errors.Is(err, intentd.ErrNotFound) {
		return entry{}, nil
	}
	if err != nil {
		return entry{}, err
	}
	e = entryOf(m.Sequence, m.Header)
	s.fenceRead(id, e)
	return e, nil
}

// errStale is the error of a write refused because the intent was written since this
// store last saw it, or has moved past the state the write starts from: another writer
// holds the intent.
var errStale = intentd.ErrStale

// The interface carries no revision from the engine, so the fence is the intent's last
// known record: a transition is written only from the phase it starts from (processing
// from open; an expiry from open; an outcome from processing), against that record's
// sequence. Of two writers, on any nodes, one terminal write succeeds, and nothing
// follows it.

// BeginProcessing writes an intent's processing snapshot against the sequence of its
// last one, so that a stale writer is refused. The policy the intent names is the one
// its record holds already, so policyID is not read.
func (s *Store) BeginProcessing(ctx context.Context, id, _ string, snapshot []byte, expiresAt time.Time) (err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	cur, err := s.current(ctx, id)
	if err != nil {
		return err
	}
	if cur.phase != phaseOpen {
		return fmt.Errorf("begin processing %s, which is %q: %w", id, cur.phase, errStale)
	}
	m := snapshotMsg(s.intentSubject(id), phaseProcessing, cur.policy, cur.created, expiresAt, snapshot)
	seq, err := s.publish(ctx, fenced(rollUp(m), cur.seq))
	if isWrongSeq(err) {
		s.refresh(ctx, id)
		return fmt.Errorf("begin processing %s: %w", id, errStale)
	}
	if err != nil {
		return err
	}
	s.apply(id, &entry{seq: seq, created: cur.created, phase: phaseProcessing, policy: cur.policy, expires: expiresAt})
	return nil
}

// Finish writes the terminal snapshot and its event in one atomic batch, the snapshot
// against the sequence of the intent's last one. The event's id is its stream sequence:
// ids increase in the one order every node reads, and skip the numbers of the other
// records. The sink hears of the event from the stream, like every other node's.
func (s *Store) Finish(ctx context.Context, id, policyID string, snapshot []byte, expiresAt time.Time, ev intentd.Event) (eventID uint64, err error) {
	ctx, end, err := s.call(ctx)
	if err != nil {
		return 0, err
	}
	defer end(&err)
	// An expiry replaces an open record only, an outcome a processing one only.
	// BeginProcessing moves an intent from open to processing once, and nothing writes
	// a processing record again, so an outcome over processing is an outcome of the one
	// proposal that record holds; over open there is no proposal for it to end.
	from := phaseProcessing
	if ev.Type == intentd.StateExpired {
		from = phaseOpen
	}
	cur, err := s.current(ctx, id)
	if err == nil && cur.phase != from {
		// The index may lag the stream (another node began processing): the intent's
		// last record decides.
		cur, err = s.reread(ctx, id)
	}
	if err != nil {
		return 0, err
	}
	if cur.phase != from {
		// An expiry decided from a cached open snapshot while another member accepted
		// the proposal: the proposal stands. An outcome of a proposal the intent does
		// not hold: another writer finished it, or it never began processing. The
		// fence below catches the same when the intent changes meanwhile.
		return 0, fmt.Errorf("finish %s (%s), which is %q: %w", id, ev.Type, cur.phase, errStale)
	}
	m := snapshotMsg(s.intentSubject(id), phaseDone, policyID, cur.created, expiresAt, snapshot)
	seq, err := s.publishBatch(ctx, fenced(rollUp(m), cur.seq), eventMsg(s.eventSubject(), ev.Data, ev.Decided))
	if isWrongSeq(err) {
		s.refresh(ctx, id)
		return 0, fmt.Errorf("finish %s: %w", id, errStale)
	}
	if err != nil {
		return 0, err
	}
	s.apply(id, &entry{seq: seq - 1, created: cur.created, phase: phaseDone, policy: policyID, expires: expiresAt})
	return seq, nil
}

// refresh reads an intent's last record after a write was refused as stale, so that the
// caller's next try does not meet the same stale entry while the watcher catches up.
func (s *Store) refresh(ctx context.Context, id string) {
	s.reread(ctx, id)
}

// reread reads an intent's last record into the index and returns what it says: an
// entry of no phase when the intent is not stored or was withdrawn.
func (s *Store) reread(ctx context.Context, id string) (entry, error) {
	m, err := s.last(ctx, s.intentSubject(id))
	if errors.Is(err, intentd.ErrNotFound) {
		return entry{}, nil
	}
	if err != nil {
		return entry{}, err
	}
	e := entryOf(m.Sequence, m.Header)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partial {
		s.fences.put(id, e)
		return e, nil
	}
	if cur, ok := s.intents[id]; ok && cur.seq >= e.seq {
		return e, nil
	}
	if e.phase != phaseOpen && e.phase != phaseProcessing {
		s.forgetIntent(id)
		return e, nil
	}
	s.putIntent(id, &e)
	return e, nil
}

// apply records this store's own write in the index, unless the watcher is already past
// it (it then applied the write itself, or a newer one).
func (s *Store) apply(id string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.partial {
		s.fences.put(id, *e)
		return
	}
	if e.seq <= s.applied {
		return
	}
	if cur, ok := s.intents[id]; ok && cur.seq >= e.seq {
		return
	}
	s.putIntent(id, e)
}

// Processing lists the intents that are processing. The index is caught up with the
// stream first: it follows the stream a window at a time, and a proposal another node
// took within the window must be listed, for a member that leaves cleanly is seen
// leave at once (resumeMoved in actors).
func (s *Store) Processing(ctx context.Context) (_ []string, err error) {
	release, err := s.useIndex(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, end, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	if err := s.catchUp(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, e := range s.intents {
		if e.phase == phaseProcessing {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// DueExpiries lists up to limit open intents whose deadline is at or before now,
// earliest first. The index is in memory, built from the snapshots' headers; a scan of
// it is a pass over the open intents.
func (s *Store) DueExpiries(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	release, err := s.useIndex(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	type due struct {
		id string
		at time.Time
	}
	var list []due
	s.mu.Lock()
	for id, e := range s.intents {
		if e.phase == phaseOpen && !e.expires.After(now) {
			list = append(list, due{id, e.expires})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b due) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	if len(list) > limit {
		list = list[:limit]
	}
	ids := make([]string, len(list))
	for i, d := range list {
		ids[i] = d.id
	}
	return ids, nil
}

// NextExpiry reports the earliest deadline of an open intent.
func (s *Store) NextExpiry(ctx context.Context) (time.Time, bool, error) {
	if err := s.check(); err != nil {
		return time.Time{}, false, err
	}
	release, err := s.useIndex(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	defer release()
	s.mu.Lock()
	defer s.mu.Unlock()
	var at time.Time
	found := false
	for _, e := range s.intents {
		if e.phase == phaseOpen && (!found || e.expires.Before(at)) {
			at, found = e.expires, true
		}
	}
	return at, found, nil
}

// putIntent sets the index's entry of an open or processing intent. s.mu is held.
func (s *Store) putIntent(id string, e *entry) {
	s.intents[id] = e
	s.intentsSize.Grew(len(s.intents))
}

// forgetIntent takes an intent out of the index, and rebuilds the index once it holds
// a quarter of what it once held: intents left open by a burst and decided since
// would otherwise keep the burst's table, on every node, for good. s.mu is held.
func (s *Store) forgetIntent(id string) {
	delete(s.intents, id)
	if s.intentsSize.Shrunk(len(s.intents)) {
		s.intents = compactmap.Rebuild(s.intents)
	}
}
