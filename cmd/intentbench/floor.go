package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/actors"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/evidence"
	"github.com/intentd/intentd/persistence"
	"github.com/intentd/intentd/policy"
)

// floorEngine is the floor of intake and of decide: what the service must do for an
// intent and for a proposal, done in the caller's goroutine and one more, with nothing
// of the engine around it. An intent is checked as the bare server checks it, then
// written synced with what the service must keep of it: the canonical intent and its
// authorship, which GET /intents/{id} returns. A proposal reads its intent from the
// store, writes the proposal synced and is answered; then the evidence is extracted
// from the demo catalog, the policy evaluated, the receipt signed, the outcome and its
// event written synced in one batch, and the event handed to the streams. The store is
// the service's own (persistence, Pebble), with its index keys; its records are the
// floor's own, not the engine's snapshots. No actor, no limiter, no transparency log,
// no snapshot, no retained-event replay: the difference between intentd and this
// server is what the engine itself costs.
type floorEngine struct {
	bareEngine
	store     *persistence.Store
	extractor evidence.Extractor
	prover    actors.ReceiptProver

	mu   sync.Mutex
	subs map[*floorSub]struct{}
}

func newFloorEngine(dir string) (*floorEngine, error) {
	// The store's log goes to standard error, as intentd's does, so that the tool sees
	// the floor's flushes and compactions too.
	store, err := persistence.Open(dir, persistence.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return nil, err
	}
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		store.Close()
		return nil, err
	}
	e := &floorEngine{bareEngine: bareEngine{policies: map[string]*policy.Policy{}}, store: store,
		extractor: evidence.DefaultCatalog(), prover: actors.ReceiptProver{Key: key}, subs: map[*floorSub]struct{}{}}
	store.SetEventSink(e.publish)
	return e, nil
}

// PutPolicy compiles the policy and stores it, as intents name a stored policy.
func (e *floorEngine) PutPolicy(ctx context.Context, source string) (string, error) {
	id, err := e.bareEngine.PutPolicy(ctx, source)
	if err != nil {
		return "", err
	}
	p, err := e.Policy(ctx, id)
	if err != nil {
		return "", err
	}
	if _, err := e.store.PutPolicy(ctx, id, p.Bytecode(), []byte(source)); err != nil {
		return "", intentd.Internal("store policy: %w", err)
	}
	return id, nil
}

// SubmitIntent checks the intent as the bare server does and stores it, synced: the
// canonical intent's length, the canonical intent and the authorship's JSON.
func (e *floorEngine) SubmitIntent(ctx context.Context, sub intentd.Submission) error {
	if err := e.bareEngine.SubmitIntent(ctx, sub); err != nil {
		return err
	}
	auth, err := sub.Authorship.MarshalJSON()
	if err != nil {
		return intentd.Internal("encode authorship: %w", err)
	}
	record := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(sub.Canonical)+len(auth)), uint64(len(sub.Canonical)))
	record = append(append(record, sub.Canonical...), auth...)
	id, _ := intentd.CanonicalIntentID(sub.Intent.ID)
	err = e.store.CreateIntent(ctx, id, sub.Intent.PolicyID, record, time.Now().Add(time.Hour))
	if err != nil {
		return intentd.Errorf(intentd.KindConflict, intentd.CodeIntentExists, "%v", err)
	}
	return nil
}

// Propose reads the intent, writes the proposal synced, and proves in a goroutine. The
// floor checks no agent: its intents are undelegated.
func (e *floorEngine) Propose(ctx context.Context, rawID string, p intentd.Proposal, _ *intentd.AgentSignature) error {
	id, _ := intentd.CanonicalIntentID(rawID)
	stored, err := e.store.Intent(ctx, id)
	if err != nil {
		return intentd.Errorf(intentd.KindNotFound, intentd.CodeIntentNotFound, "intent %s: %v", id, err)
	}
	n, w := binary.Uvarint(stored)
	if w <= 0 || n > uint64(len(stored)-w) {
		return intentd.Internal("read intent: %w", fmt.Errorf("%s: record is corrupt", id))
	}
	canon := stored[w : w+int(n)]
	in, err := intentd.DecodeIntent(canon)
	if err != nil {
		return intentd.Internal("decode intent: %w", err)
	}
	record := append(append(bytes.Clone(canon), '\n'), p.Solution...)
	if err := e.store.BeginProcessing(ctx, id, in.PolicyID, record, time.Now().Add(time.Hour)); err != nil {
		return intentd.Internal("store proposal: %w", err)
	}
	go e.prove(id, in, canon, p)
	return nil
}

func (e *floorEngine) prove(id string, in intentd.Intent, canon []byte, p intentd.Proposal) {
	ctx := context.Background()
	pol, err := e.Policy(ctx, in.PolicyID)
	if err != nil {
		return
	}
	req := evidence.Request{Solution: p.Solution, Attributes: map[string]evidence.Attribute{}, IntentID: id,
		PolicyID: in.PolicyID, Extractor: pol.Extractor()}
	for _, f := range pol.EvidenceSchema() {
		req.Attributes[f.Name] = evidence.Attribute{Type: f.Type.WireName()}
	}
	st := intentd.Status{State: intentd.StateSuccess, IntentID: id, Proposal: &p}
	ev, err := e.extractor.Extract(ctx, req)
	var failures []policy.Failure
	if err == nil {
		if st.Evidence, err = intentd.MarshalJSON(ev); err == nil {
			var recorded map[string]any
			dec := json.NewDecoder(bytes.NewReader(st.Evidence))
			dec.UseNumber()
			if err = dec.Decode(&recorded); err == nil {
				attrs := policy.Attrs{}
				if in.Attrs != nil {
					attrs = *in.Attrs
				}
				failures = pol.Evaluate(attrs, recorded)
			}
		}
	}
	if err != nil || len(failures) > 0 {
		st.State, st.Failures = intentd.StateFailure, failures
		st.FailureKind, st.EvidenceMissing = intentd.ClassifyFailures(failures)
		st.Reason = fmt.Sprintf("%d constraints do not hold", len(failures))
	}
	receipt, err := e.prover.Prove(ctx, actors.ProofInput{IntentID: id, PolicyID: in.PolicyID, Authored: canon,
		Proposal: p, Evidence: st.Evidence, Outcome: st.State, Failures: failures, At: time.Now()})
	if err != nil {
		return
	}
	event, err := intentd.NewEvent(st)
	if err != nil {
		return
	}
	record := append(append(bytes.Clone(canon), '\n'), receipt...)
	if _, err := e.store.Finish(ctx, id, in.PolicyID, record, time.Now().Add(time.Hour), event); err != nil {
		fmt.Fprintf(os.Stderr, "floor server: store outcome: %v\n", err)
	}
}

// publish hands a durable event to every stream; one that is a whole buffer behind
// is ended, as the engine's bus ends it.
func (e *floorEngine) publish(ev intentd.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for s := range e.subs {
		select {
		case s.ch <- ev:
		default:
			delete(e.subs, s)
			close(s.ch)
		}
	}
}

// Subscribe follows the events written from now on; the floor keeps no replay.
func (e *floorEngine) Subscribe(context.Context, uint64, intentd.Filter) (intentd.Subscription, error) {
	s := &floorSub{e: e, ch: make(chan intentd.Event, 1024)}
	e.mu.Lock()
	e.subs[s] = struct{}{}
	e.mu.Unlock()
	return s, nil
}

// close closes the floor's store.
func (e *floorEngine) close() error {
	return e.store.Close()
}

// floorSub is one stream's subscription: live events only, cut off when its 1,024
// places are full, as intentd's are.
type floorSub struct {
	e  *floorEngine
	ch chan intentd.Event
}

func (s *floorSub) Next(ctx context.Context) (intentd.Event, error) {
	select {
	case ev, ok := <-s.ch:
		if !ok {
			return intentd.Event{}, intentd.ErrSubscriberTooSlow
		}
		return ev, nil
	case <-ctx.Done():
		return intentd.Event{}, ctx.Err()
	}
}

func (s *floorSub) Pending() bool            { return len(s.ch) > 0 }
func (s *floorSub) Filling() <-chan struct{} { return nil }
func (s *floorSub) Truncated() bool          { return false }

// Close ends the subscription once.
func (s *floorSub) Close() {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	if _, ok := s.e.subs[s]; ok {
		delete(s.e.subs, s)
		close(s.ch)
	}
}
