// Package storetest is the behaviour every intentd.Store must have, written once and run
// against each implementation, so that the engine can rely on the interface and not on
// one store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intentd/intentd"
)

// Store is a store under test: the interface, and Close, which the tests call to reopen.
type Store interface {
	intentd.Store
	Close() error
}

// Stepped is a store whose tests can run code around the first step of its two-step
// writes, a policy delete's and an intent create's: before just before that step, after
// right after it; nil runs nothing. A store whose writes are each one step runs before
// ahead of the write and after once it is done.
type Stepped interface {
	Store
	AroundFirstStep(before, after func())
}

// Backend makes the durable place a store lives in and returns a function that opens a
// store on it. Each call opens the same data again; the test closes what it opens.
type Backend func(t *testing.T) (open func(t *testing.T) Store)

// Event is the event of a success of intent id, as the engine makes it.
func Event(id string) intentd.Event {
	ev, err := intentd.NewEvent(intentd.Status{State: intentd.StateSuccess, IntentID: id, Proposal: &intentd.Proposal{Solution: "s"}})
	if err != nil {
		panic(err)
	}
	return ev
}

var ctx = context.Background()

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// Run runs the whole suite against stores opened by backend.
func Run(t *testing.T, backend Backend) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, open func(t *testing.T) Store)
	}{
		{"Policies", testPolicies},
		{"PolicyMissing", withPolicy(testPolicyMissing)},
		{"IDTaken", withPolicy(testIDTaken)},
		{"DeleteRefusedWhileLive", withPolicy(testDeleteRefusedWhileLive)},
		{"Indexes", withPolicy(testIndexes)},
		{"CreateSameIDConcurrently", withPolicy(testCreateSameIDConcurrently)},
		{"DeleteRacesCreate", withPolicy(testDeleteRacesCreate)},
		{"NextExpiry", testNextExpiry},
		{"Reopen", testReopen},
		{"FinishOrder", withPolicy(testFinishOrder)},
		{"ExpiryOverProcessing", withPolicy(testExpiryOverProcessing)},
		{"OutcomeOverOpen", withPolicy(testOutcomeOverOpen)},
		{"CutAfterFirstStep", withPolicy(testCutAfterFirstStep)},
		{"EventsAfterAnyID", withPolicy(testEventsAfterAnyID)},
		{"PruneEvents", withPolicy(testPruneEvents)},
		{"Closed", testClosed},
		{"LogBundles", testLogBundles},
		{"Nonces", testNonces},
		{"Mandates", testMandates},
		{"Webhooks", testWebhooks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, backend(t))
		})
	}
}

// withPolicy runs a test on an open store holding policy "P".
func withPolicy(fn func(t *testing.T, s Store)) func(*testing.T, func(*testing.T) Store) {
	return func(t *testing.T, open func(*testing.T) Store) {
		s := open(t)
		defer s.Close()
		if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
			t.Fatal(err)
		}
		fn(t, s)
	}
}

func mustCreate(t *testing.T, s Store, id, policy, snap string) {
	t.Helper()
	if err := s.CreateIntent(ctx, id, policy, []byte(snap), t0); err != nil {
		t.Fatalf("CreateIntent(%s): %v", id, err)
	}
}

// BeginAndFinish writes an outcome as the engine does: the open intent begins
// processing, then its outcome ev is written over the processing record, with the
// snapshot given. It returns the event's id.
func BeginAndFinish(ctx context.Context, s intentd.Store, id, policyID string, snapshot []byte, expiresAt time.Time, ev intentd.Event) (uint64, error) {
	if err := s.BeginProcessing(ctx, id, policyID, []byte("processing "+id), expiresAt); err != nil {
		return 0, fmt.Errorf("begin processing %s: %w", id, err)
	}
	return s.Finish(ctx, id, policyID, snapshot, expiresAt, ev)
}

// mustFinish writes the outcome of open intent id, which names policy P.
func mustFinish(t *testing.T, s Store, id string) uint64 {
	t.Helper()
	ev, err := BeginAndFinish(ctx, s, id, "P", []byte("done "+id), t0, Event(id))
	if err != nil {
		t.Fatalf("Finish(%s): %v", id, err)
	}
	return ev
}

// mustFinishProcessing writes the outcome of intent id, which is processing.
func mustFinishProcessing(t *testing.T, s Store, id string) uint64 {
	t.Helper()
	ev, err := s.Finish(ctx, id, "P", []byte("done "+id), t0, Event(id))
	if err != nil {
		t.Fatalf("Finish(%s): %v", id, err)
	}
	return ev
}

func testPolicies(t *testing.T, open func(*testing.T) Store) {
	s := open(t)
	defer s.Close()
	created, err := s.PutPolicy(ctx, "P1", []byte{1, 2, 3}, []byte("name a"))
	if err != nil || !created {
		t.Fatalf("PutPolicy = %v, %v; want created", created, err)
	}
	created, err = s.PutPolicy(ctx, "P1", []byte{1, 2, 3}, []byte("name a # again"))
	if err != nil || created {
		t.Fatalf("second PutPolicy = %v, %v; want not created", created, err)
	}
	bc, src, err := s.Policy(ctx, "P1")
	if err != nil || string(bc) != "\x01\x02\x03" || string(src) != "name a" {
		t.Fatalf("Policy = %q, %q, %v; the first write must stand", bc, src, err)
	}
	if _, _, err := s.Policy(ctx, "nope"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("Policy(nope) error = %v, want intentd.ErrNotFound", err)
	}
	if err := s.DeletePolicy(ctx, "nope"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("DeletePolicy(nope) error = %v, want intentd.ErrNotFound", err)
	}
	if err := s.DeletePolicy(ctx, "P1"); err != nil {
		t.Fatalf("DeletePolicy: %v", err)
	}
	if _, _, err := s.Policy(ctx, "P1"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("Policy after delete error = %v, want intentd.ErrNotFound", err)
	}
	if err := s.DeletePolicy(ctx, "P1"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("second DeletePolicy error = %v, want intentd.ErrNotFound", err)
	}
	if bc, err := s.PolicyBytecode(ctx, "P1"); err != nil || string(bc) != "\x01\x02\x03" {
		t.Fatalf("PolicyBytecode after delete = %q, %v; proofs need it kept", bc, err)
	}
	if _, err := s.PolicyBytecode(ctx, "nope"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("PolicyBytecode(nope) error = %v, want intentd.ErrNotFound", err)
	}
	if created, err := s.PutPolicy(ctx, "P1", []byte{1, 2, 3}, []byte("name b")); err != nil || !created {
		t.Fatalf("PutPolicy after delete = %v, %v; want created", created, err)
	}
	if _, src, err := s.Policy(ctx, "P1"); err != nil || string(src) != "name b" {
		t.Fatalf("Policy after put again = %q, %v", src, err)
	}
}

func testPolicyMissing(t *testing.T, s Store) {
	if err := s.CreateIntent(ctx, "i1", "missing", []byte("s"), t0); !errors.Is(err, intentd.ErrPolicyNotFound) {
		t.Fatalf("error = %v, want intentd.ErrPolicyNotFound", err)
	}
	if _, err := s.Intent(ctx, "i1"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("a refused intent was stored: %v", err)
	}
}

func testIDTaken(t *testing.T, s Store) {
	mustCreate(t, s, "i1", "P", "first")
	if err := s.CreateIntent(ctx, "i1", "P", []byte("second"), t0); !errors.Is(err, intentd.ErrExists) {
		t.Fatalf("error = %v, want intentd.ErrExists", err)
	}
	if got, _ := s.Intent(ctx, "i1"); string(got) != "first" {
		t.Fatalf("snapshot = %q, the first write must stand", got)
	}
}

func testDeleteRefusedWhileLive(t *testing.T, s Store) {
	mustCreate(t, s, "i1", "P", "open")
	if err := s.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("delete with open intent: %v, want intentd.ErrPolicyInUse", err)
	}
	if _, _, err := s.Policy(ctx, "P"); err != nil {
		t.Fatalf("policy after a refused delete: %v", err)
	}
	if err := s.BeginProcessing(ctx, "i1", "P", []byte("processing"), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("delete with processing intent: %v, want intentd.ErrPolicyInUse", err)
	}
	mustFinishProcessing(t, s, "i1")
	if err := s.DeletePolicy(ctx, "P"); err != nil {
		t.Fatalf("delete after the intent finished: %v", err)
	}
	if got, _ := s.Intent(ctx, "i1"); string(got) != "done i1" {
		t.Fatalf("intent after its policy was deleted = %q, want it readable", got)
	}
	if err := s.CreateIntent(ctx, "i2", "P", nil, t0); !errors.Is(err, intentd.ErrPolicyNotFound) {
		t.Fatalf("create naming the deleted policy: %v, want intentd.ErrPolicyNotFound", err)
	}
}

func testIndexes(t *testing.T, s Store) {
	mustCreate(t, s, "a", "P", "open")
	mustCreate(t, s, "b", "P", "open")
	if ids, _ := s.DueExpiries(ctx, t0, 10); len(ids) != 2 {
		t.Fatalf("due = %v, want both", ids)
	}
	if ids, _ := s.DueExpiries(ctx, t0, 1); len(ids) != 1 {
		t.Fatalf("due with limit 1 = %v, want one", ids)
	}
	if ids, _ := s.DueExpiries(ctx, t0.Add(-time.Nanosecond), 10); len(ids) != 0 {
		t.Fatalf("due before the deadline = %v, want none", ids)
	}
	if err := s.BeginProcessing(ctx, "a", "P", []byte("processing"), t0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Intent(ctx, "a"); string(got) != "processing" {
		t.Fatalf("snapshot after BeginProcessing = %q", got)
	}
	if ids, _ := s.DueExpiries(ctx, t0, 10); len(ids) != 1 || ids[0] != "b" {
		t.Fatalf("due = %v, want [b]: a processing intent cannot expire", ids)
	}
	if ids, _ := s.Processing(ctx); len(ids) != 1 || ids[0] != "a" {
		t.Fatalf("processing = %v, want [a]", ids)
	}
	mustFinishProcessing(t, s, "a")
	if ids, _ := s.Processing(ctx); len(ids) != 0 {
		t.Fatalf("processing after finish = %v, want none", ids)
	}
	mustFinish(t, s, "b")
	if ids, _ := s.DueExpiries(ctx, t0.Add(time.Hour), 10); len(ids) != 0 {
		t.Fatalf("due after expiry = %v, want none", ids)
	}
	if _, ok, _ := s.NextExpiry(ctx); ok {
		t.Fatal("NextExpiry reports a deadline with no open intent")
	}
}

// testCreateSameIDConcurrently races creates of one id: exactly one wins.
func testCreateSameIDConcurrently(t *testing.T, s Store) {
	const n = 32
	var wins, exists atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := s.CreateIntent(ctx, "same", "P", []byte(fmt.Sprint(i)), t0)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, intentd.ErrExists):
				exists.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || exists.Load() != n-1 {
		t.Fatalf("%d creates won and %d saw the id taken, want 1 and %d", wins.Load(), exists.Load(), n-1)
	}
}

// testDeleteRacesCreate races a policy delete against creates naming it: either the
// delete is refused or no create that succeeded names the deleted policy.
func testDeleteRacesCreate(t *testing.T, s Store) {
	for round := range 20 {
		pid := fmt.Sprintf("R%d", round)
		if _, err := s.PutPolicy(ctx, pid, []byte{2}, nil); err != nil {
			t.Fatal(err)
		}
		var created atomic.Int32
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				err := s.CreateIntent(ctx, fmt.Sprintf("%s-%d", pid, i), pid, nil, t0)
				switch {
				case err == nil:
					created.Add(1)
				case errors.Is(err, intentd.ErrPolicyNotFound):
				default:
					t.Error(err)
				}
			})
		}
		var delErr error
		wg.Go(func() { delErr = s.DeletePolicy(ctx, pid) })
		wg.Wait()
		_, _, getErr := s.Policy(ctx, pid)
		switch {
		case delErr == nil && created.Load() > 0:
			t.Fatalf("round %d: the policy was deleted and %d intents naming it were created", round, created.Load())
		case delErr == nil && !errors.Is(getErr, intentd.ErrNotFound):
			t.Fatalf("round %d: the delete succeeded and the policy reads %v", round, getErr)
		case errors.Is(delErr, intentd.ErrPolicyInUse) && getErr != nil:
			t.Fatalf("round %d: the delete was refused and the policy reads %v", round, getErr)
		case delErr != nil && !errors.Is(delErr, intentd.ErrPolicyInUse):
			t.Fatalf("round %d: delete: %v", round, delErr)
		}
	}
}

func testNextExpiry(t *testing.T, open func(*testing.T) Store) {
	s := open(t)
	defer s.Close()
	if _, ok, err := s.NextExpiry(ctx); ok || err != nil {
		t.Fatalf("empty store NextExpiry ok=%v err=%v", ok, err)
	}
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	s.CreateIntent(ctx, "late", "P", nil, t0.Add(time.Hour))
	s.CreateIntent(ctx, "early", "P", nil, t0.Add(time.Minute))
	at, ok, err := s.NextExpiry(ctx)
	if err != nil || !ok || !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("NextExpiry = %v, %v, %v; want %v", at, ok, err, t0.Add(time.Minute))
	}
}

// testReopen writes every kind of record, closes the store and finds them all again.
func testReopen(t *testing.T, open func(*testing.T) Store) {
	s := open(t)
	s.PutPolicy(ctx, "P", []byte{7}, []byte("src"))
	s.PutPolicy(ctx, "Q", []byte{8}, []byte("q"))
	s.DeletePolicy(ctx, "Q")
	mustCreate(t, s, "open", "P", "o")
	mustCreate(t, s, "proc", "P", "p")
	s.BeginProcessing(ctx, "proc", "P", []byte("p2"), t0)
	mustCreate(t, s, "done", "P", "d")
	id := mustFinish(t, s, "done")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t)
	defer s.Close()
	if bc, src, err := s.Policy(ctx, "P"); err != nil || string(bc) != "\x07" || string(src) != "src" {
		t.Fatalf("policy after reopen = %q %q %v", bc, src, err)
	}
	if _, _, err := s.Policy(ctx, "Q"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("deleted policy after reopen: %v", err)
	}
	if bc, err := s.PolicyBytecode(ctx, "Q"); err != nil || string(bc) != "\x08" {
		t.Fatalf("deleted policy's bytecode after reopen = %q, %v", bc, err)
	}
	for id, want := range map[string]string{"open": "o", "proc": "p2", "done": "done done"} {
		if got, err := s.Intent(ctx, id); err != nil || string(got) != want {
			t.Errorf("intent %s after reopen = %q, %v; want %q", id, got, err, want)
		}
	}
	if ids, _ := s.Processing(ctx); len(ids) != 1 || ids[0] != "proc" {
		t.Errorf("processing after reopen = %v", ids)
	}
	if ids, _ := s.DueExpiries(ctx, t0, 10); len(ids) != 1 || ids[0] != "open" {
		t.Errorf("due after reopen = %v", ids)
	}
	if err := s.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Errorf("references lost on reopen: delete = %v", err)
	}
	if err := s.CreateIntent(ctx, "open", "P", nil, t0); !errors.Is(err, intentd.ErrExists) {
		t.Errorf("create of a stored id after reopen = %v, want intentd.ErrExists", err)
	}
	if first, last, err := s.EventBounds(ctx); err != nil || first != id || last != id {
		t.Errorf("bounds after reopen = %d..%d, %v; want %d..%d", first, last, err, id, id)
	}
	mustCreate(t, s, "next", "P", "n")
	if next := mustFinish(t, s, "next"); next <= id {
		t.Fatalf("first event after reopen = %d, want more than %d", next, id)
	}
}

// testFinishOrder checks that concurrent terminal writes get distinct increasing ids, that
// the sink hears them in id order, each once, and that a replay reads them the same.
func testFinishOrder(t *testing.T, s Store) {
	var mu sync.Mutex
	var heard []intentd.Event
	s.SetEventSink(func(e intentd.Event) {
		mu.Lock()
		heard = append(heard, e)
		mu.Unlock()
	})
	const n = 100
	var wg sync.WaitGroup
	ids := make([]uint64, n)
	for i := range n {
		id := fmt.Sprintf("i%03d", i)
		mustCreate(t, s, id, "P", "o")
		wg.Go(func() {
			ev, err := BeginAndFinish(ctx, s, id, "P", []byte("t"), t0, Event(id))
			if err != nil {
				t.Error(err)
			}
			ids[i] = ev
		})
	}
	wg.Wait()
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	if len(slices.Compact(slices.Clone(sorted))) != n || sorted[0] == 0 {
		t.Fatalf("event ids %v are not %d distinct non-zero ids", sorted, n)
	}
	// The sink may hear of an event after Finish returned; it hears of all.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := len(heard)
		mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	heardIDs := make([]uint64, len(heard))
	for i, e := range heard {
		heardIDs[i] = e.ID
		if e.At.IsZero() || e.IntentID == "" || e.Type != intentd.StateSuccess {
			t.Errorf("sink heard %+v: want its time, intent and type", e)
		}
	}
	mu.Unlock()
	if !slices.Equal(heardIDs, sorted) {
		t.Fatalf("sink heard %v, want %v", heardIDs, sorted)
	}
	byID := make(map[uint64]string)
	for i, id := range ids {
		byID[id] = fmt.Sprintf("i%03d", i)
	}
	var replayed []uint64
	err := s.Events(ctx, 0, n+10, func(e intentd.Event) error {
		replayed = append(replayed, e.ID)
		if e.IntentID != byID[e.ID] {
			t.Errorf("event %d carries %q, want %s", e.ID, e.IntentID, byID[e.ID])
		}
		return nil
	})
	if err != nil || !slices.Equal(replayed, sorted) {
		t.Fatalf("replayed %v, %v; want %v", replayed, err, sorted)
	}
	if first, last, err := s.EventBounds(ctx); err != nil || first != sorted[0] || last != sorted[n-1] {
		t.Fatalf("bounds = %d..%d, %v; want %d..%d", first, last, err, sorted[0], sorted[n-1])
	}
}

// testEventsAfterAnyID resumes a replay after every id, assigned or not, and after the
// last: each resumes with the next event, none missed and none twice.
func testEventsAfterAnyID(t *testing.T, s Store) {
	var ids []uint64
	for i := range 5 {
		id := fmt.Sprint("e", i)
		mustCreate(t, s, id, "P", "o")
		ids = append(ids, mustFinish(t, s, id))
	}
	for after := uint64(0); after <= ids[len(ids)-1]+1; after++ {
		var want []uint64
		for _, id := range ids {
			if id > after {
				want = append(want, id)
			}
		}
		var got []uint64
		if err := s.Events(ctx, after, 100, func(e intentd.Event) error {
			got = append(got, e.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("events after %d = %v, want %v", after, got, want)
		}
		got = got[:0]
		s.Events(ctx, after, 2, func(e intentd.Event) error {
			got = append(got, e.ID)
			return nil
		})
		if len(want) > 2 {
			want = want[:2]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("2 events after %d = %v, want %v", after, got, want)
		}
	}
	stop := errors.New("stop")
	if err := s.Events(ctx, 0, 10, func(intentd.Event) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("Events returned %v, want the callback's error", err)
	}
}

func testPruneEvents(t *testing.T, s Store) {
	if first, last, err := s.EventBounds(ctx); err != nil || first != 0 || last != 0 {
		t.Fatalf("bounds of no events = %d..%d, %v", first, last, err)
	}
	if p, err := s.PrunedThrough(ctx); err != nil || p != 0 {
		t.Fatalf("pruned through %d, %v with no events; want 0", p, err)
	}
	if n, err := s.PruneEvents(ctx, 0, time.Now()); err != nil || n != 0 {
		t.Fatalf("prune of no events = %d, %v", n, err)
	}
	var ids []uint64
	for i := range 10 {
		id := fmt.Sprint(i)
		mustCreate(t, s, id, "P", "o")
		ids = append(ids, mustFinish(t, s, id))
	}
	n, err := s.PruneEvents(ctx, 7, time.Time{})
	if err != nil || n != 3 {
		t.Fatalf("prune to 7 = %d, %v; want 3 deleted", n, err)
	}
	first, last, _ := s.EventBounds(ctx)
	if first != ids[3] || last != ids[9] {
		t.Fatalf("bounds = %d..%d, want %d..%d", first, last, ids[3], ids[9])
	}
	if p, err := s.PrunedThrough(ctx); err != nil || p != ids[2] {
		t.Fatalf("pruned through %d, %v; want %d, the newest pruned event", p, err, ids[2])
	}
	var got []uint64
	s.Events(ctx, 0, 100, func(e intentd.Event) error {
		got = append(got, e.ID)
		return nil
	})
	if !slices.Equal(got, ids[3:]) {
		t.Fatalf("events after prune = %v, want %v", got, ids[3:])
	}
	n, err = s.PruneEvents(ctx, 100, time.Now().Add(time.Hour))
	if err != nil || n != 7 {
		t.Fatalf("prune by age = %d, %v; want 7 deleted", n, err)
	}
	first, last, _ = s.EventBounds(ctx)
	if first != 0 || last != ids[9] {
		t.Fatalf("bounds after pruning all = %d..%d, want 0..%d: ids must not restart", first, last, ids[9])
	}
	if p, err := s.PrunedThrough(ctx); err != nil || p != ids[9] {
		t.Fatalf("pruned through %d, %v; want %d after pruning all", p, err, ids[9])
	}
	got = got[:0]
	s.Events(ctx, 0, 100, func(e intentd.Event) error {
		got = append(got, e.ID)
		return nil
	})
	if len(got) != 0 {
		t.Fatalf("events after pruning all = %v", got)
	}
	mustCreate(t, s, "x", "P", "o")
	if id := mustFinish(t, s, "x"); id <= ids[9] {
		t.Fatalf("next id = %d, want more than %d", id, ids[9])
	}
}

func testClosed(t *testing.T, open func(*testing.T) Store) {
	s := open(t)
	s.Close()
	if _, err := s.Finish(ctx, "i", "P", nil, t0, Event("i")); !errors.Is(err, intentd.ErrStoreClosed) {
		t.Fatalf("Finish after Close = %v, want intentd.ErrStoreClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// testLogBundles checks intentd.LogStore on a store that has it: a bundle grows, never
// shrinks, survives a reopen, and one that disagrees with the stored one is refused as
// a fork, also when writers race.
func testLogBundles(t *testing.T, open func(*testing.T) Store) {
	s := open(t)
	ls, ok := s.(intentd.LogStore)
	if !ok {
		s.Close()
		t.Skip("the store keeps no log bundles")
	}
	bundle := func(entries ...string) []byte {
		var b []byte
		for _, e := range entries {
			b = append(b, byte(len(e)>>8), byte(len(e)))
			b = append(b, e...)
		}
		return b
	}
	if _, err := ls.LogBundle(ctx, 0); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("LogBundle of an empty store: %v, want ErrNotFound", err)
	}
	for _, tc := range []struct {
		name   string
		index  uint64
		put    []byte
		fork   bool
		stored []byte
	}{
		{"first", 0, bundle("a"), false, bundle("a")},
		{"longer", 0, bundle("a", "b", "c"), false, bundle("a", "b", "c")},
		{"shorter is kept out", 0, bundle("a", "b"), false, bundle("a", "b", "c")},
		{"same again", 0, bundle("a", "b", "c"), false, bundle("a", "b", "c")},
		{"other entry", 0, bundle("a", "x"), true, bundle("a", "b", "c")},
		{"other entry, longer", 0, bundle("a", "b", "x", "d"), true, bundle("a", "b", "c")},
		{"another bundle", 1<<56 + 3, bundle("z"), false, bundle("z")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ls.PutLogBundle(ctx, tc.index, tc.put)
			if tc.fork != errors.Is(err, intentd.ErrLogFork) || !tc.fork && err != nil {
				t.Fatalf("PutLogBundle: %v, want a fork: %v", err, tc.fork)
			}
			if tc.fork && intentd.ErrorKind(err) != intentd.KindConflict {
				t.Fatalf("a fork is of kind %v, want conflict", intentd.ErrorKind(err))
			}
			got, err := ls.LogBundle(ctx, tc.index)
			if err != nil || string(got) != string(tc.stored) {
				t.Fatalf("LogBundle: %q, %v; want %q", got, err, tc.stored)
			}
		})
	}

	t.Run("racing writers", func(t *testing.T) {
		// Each writer extends bundle 2 by one entry more than the last it wrote; all
		// agree, so the longest stays and no one sees a fork.
		entries := make([]string, 40)
		for i := range entries {
			entries[i] = fmt.Sprintf("entry %d", i)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4*len(entries))
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := w + 1; n <= len(entries); n += 2 {
					if err := ls.PutLogBundle(ctx, 2, bundle(entries[:n]...)); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("PutLogBundle: %v", err)
		}
		got, err := ls.LogBundle(ctx, 2)
		if err != nil || string(got) != string(bundle(entries...)) {
			t.Fatalf("after the race the bundle is %d bytes (%v), want all %d entries", len(got), err, len(entries))
		}
	})

	s.Close()
	s = open(t)
	defer s.Close()
	got, err := s.(intentd.LogStore).LogBundle(ctx, 0)
	if err != nil || string(got) != string(bundle("a", "b", "c")) {
		t.Fatalf("after a reopen bundle 0 is %q, %v", got, err)
	}
}

// testExpiryOverProcessing expires an intent whose proposal was accepted, as a member
// whose cache still holds it open would: the store refuses with ErrStale and keeps the
// processing record, so that the proposal's outcome is the one written.
func testExpiryOverProcessing(t *testing.T, s Store) {
	mustCreate(t, s, "p", "P", "open")
	if err := s.BeginProcessing(ctx, "p", "P", []byte("processing"), t0); err != nil {
		t.Fatal(err)
	}
	expired, err := intentd.NewEvent(intentd.Status{State: intentd.StateExpired, IntentID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, "p", "P", []byte("expired"), t0, expired); !errors.Is(err, intentd.ErrStale) {
		t.Fatalf("an expiry over a processing intent = %v, want intentd.ErrStale", err)
	}
	if got, err := s.Intent(ctx, "p"); err != nil || string(got) != "processing" {
		t.Fatalf("the intent after the refused expiry: %q, %v; want it processing", got, err)
	}
	if ids, err := s.Processing(ctx); err != nil || !slices.Contains(ids, "p") {
		t.Fatalf("processing = %v, %v; want p among them", ids, err)
	}
	mustFinishProcessing(t, s, "p") // the proposal's outcome
	mustCreate(t, s, "o", "P", "open")
	if _, err := s.Finish(ctx, "o", "P", []byte("expired"), t0, expired); err != nil {
		t.Fatalf("an expiry of an open intent: %v", err)
	}
}

// testOutcomeOverOpen writes an outcome over an intent that never began processing: the
// store refuses it with ErrStale and keeps the open record, for an outcome ends the
// proposal a processing record holds, and an open intent holds none.
func testOutcomeOverOpen(t *testing.T, s Store) {
	mustCreate(t, s, "o", "P", "open")
	for _, state := range []intentd.State{intentd.StateSuccess, intentd.StateFailure} {
		ev, err := intentd.NewEvent(intentd.Status{State: state, IntentID: "o", Proposal: &intentd.Proposal{Solution: "s"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Finish(ctx, "o", "P", []byte(state), t0, ev); !errors.Is(err, intentd.ErrStale) {
			t.Fatalf("a %s over an open intent = %v, want intentd.ErrStale", state, err)
		}
	}
	if got, err := s.Intent(ctx, "o"); err != nil || string(got) != "open" {
		t.Fatalf("the intent after the refused outcomes: %q, %v; want it open", got, err)
	}
	if ids, err := s.DueExpiries(ctx, t0, 10); err != nil || !slices.Contains(ids, "o") {
		t.Fatalf("due = %v, %v; want o among them, still open", ids, err)
	}
	if err := s.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("delete of the open intent's policy = %v, want intentd.ErrPolicyInUse", err)
	}
	if _, err := s.Finish(ctx, "none", "P", []byte("done"), t0, Event("none")); !errors.Is(err, intentd.ErrStale) {
		t.Fatalf("an outcome of an intent never stored = %v, want intentd.ErrStale", err)
	}
	mustFinish(t, s, "o")
	if _, err := s.Finish(ctx, "o", "P", []byte("again"), t0, Event("o")); !errors.Is(err, intentd.ErrStale) {
		t.Fatalf("a second outcome = %v, want intentd.ErrStale", err)
	}
	if got, err := s.Intent(ctx, "o"); err != nil || string(got) != "done o" {
		t.Fatalf("the intent after its outcome: %q, %v; want the first outcome", got, err)
	}
}

// testCutAfterFirstStep cancels the caller of each two-step write right after its
// first step, with a racing write just before that step: a delete of a policy that an
// intent created in that moment names, and a create naming a policy deleted in it. The
// second step runs whatever became of its caller, so no open intent is left naming a
// deleted policy: the delete is refused and the policy stays; the create is refused and
// its intent withdrawn. A store whose writes are one step each ends the same.
func testCutAfterFirstStep(t *testing.T, s Store) {
	st, ok := s.(Stepped)
	if !ok {
		t.Skip("the store shows no steps of its writes")
	}
	defer st.AroundFirstStep(nil, nil)
	cut, cancel := context.WithCancel(ctx)
	defer cancel()
	st.AroundFirstStep(func() {
		st.AroundFirstStep(nil, nil)
		if err := s.CreateIntent(ctx, "early", "P", []byte("open"), t0); err != nil {
			t.Errorf("a create just before the delete's first step: %v", err)
		}
		st.AroundFirstStep(nil, cancel)
	}, nil)
	if err := s.DeletePolicy(cut, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("a delete cut off after its first step, an intent created just before it = %v, want intentd.ErrPolicyInUse", err)
	}

	if _, err := s.PutPolicy(ctx, "Q", []byte{2}, nil); err != nil {
		t.Fatal(err)
	}
	cut, cancel = context.WithCancel(ctx)
	defer cancel()
	st.AroundFirstStep(func() {
		st.AroundFirstStep(nil, nil)
		if err := s.DeletePolicy(ctx, "Q"); err != nil {
			t.Errorf("a delete just before the create's first step: %v", err)
		}
		st.AroundFirstStep(nil, cancel)
	}, nil)
	if err := s.CreateIntent(cut, "late", "Q", []byte("open"), t0); !errors.Is(err, intentd.ErrPolicyNotFound) {
		t.Fatalf("a create cut off after its first step, its policy deleted just before it = %v, want intentd.ErrPolicyNotFound", err)
	}
	st.AroundFirstStep(nil, nil)

	named := map[string]string{"early": "P", "late": "Q"}
	open, err := s.DueExpiries(ctx, t0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(open, []string{"early"}) {
		t.Fatalf("the open intents are %v, want [early]: the cut create's intent withdrawn", open)
	}
	for _, id := range open {
		if _, _, err := s.Policy(ctx, named[id]); err != nil {
			t.Errorf("open intent %s names policy %s, which reads %v", id, named[id], err)
		}
	}
	if got, err := s.Intent(ctx, "early"); err != nil || string(got) != "open" {
		t.Fatalf("the intent created before the delete: %q, %v", got, err)
	}
	if _, err := s.Intent(ctx, "late"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("the intent of the cut create reads %v, want intentd.ErrNotFound", err)
	}
	if _, _, err := s.Policy(ctx, "Q"); !errors.Is(err, intentd.ErrNotFound) {
		t.Fatalf("the policy deleted before the create reads %v, want intentd.ErrNotFound", err)
	}
	if err := s.DeletePolicy(ctx, "P"); !errors.Is(err, intentd.ErrPolicyInUse) {
		t.Fatalf("a delete of the open intent's policy = %v, want intentd.ErrPolicyInUse", err)
	}
}
