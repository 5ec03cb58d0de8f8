package natsstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd/internal/syncbuf"
	"github.com/intentd/intentd/storetest"
)

// TestUnansweredMandateWritesLandOnce gives each try of a write less time than a write
// takes, so that most tries go unanswered while their writes land: a create or an
// update whose answer was lost is found by its write id and succeeds, where the fence
// would refuse the copy sent again as another writer's. Every write must succeed once,
// at the revision it returns, and the stream keep one record a mandate.
func TestUnansweredMandateWritesLandOnce(t *testing.T) {
	ctx := context.Background()
	s := open(t, embed(t).URL())
	defer s.Close()
	s.tryTimeout = time.Millisecond
	const n, updates = 10, 3
	for i := range n {
		id := fmt.Sprint("m", i)
		if err := s.CreateMandate(ctx, id, []byte("0")); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		_, rev, err := s.Mandate(ctx, id)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		for j := 1; j <= updates; j++ {
			if rev, err = s.UpdateMandate(ctx, id, fmt.Append(nil, j), rev, true); err != nil {
				t.Fatalf("update %d of %s: %v", j, id, err)
			}
		}
		if data, got, err := s.Mandate(ctx, id); err != nil || string(data) != fmt.Sprint(updates) || got != rev {
			t.Fatalf("%s: %q at %d, %v; want %q at %d, the last update's", id, data, got, err, fmt.Sprint(updates), rev)
		}
	}
	s.tryTimeout = 0
	if s.triedAgain.Load() == 0 {
		t.Skip("no try went unanswered: this machine wrote faster than a millisecond throughout")
	}
	t.Logf("%d tries went unanswered and were looked for or sent again", s.triedAgain.Load())
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(s.prefix+"."+kindMandate+".>"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != n {
		t.Errorf("%d mandate subjects, want %d", len(info.State.Subjects), n)
	}
	for subj, count := range info.State.Subjects {
		if count != 1 {
			t.Errorf("%s holds %d records, want 1: each update rolls the one before up", subj, count)
		}
	}
}

// TestMandatesLeaveTheRest writes mandates through one store while another follows the
// stream: the follower's indexes, the event log, its pruning and the followers' checks
// take no notice of them, and nothing is logged of them.
func TestMandatesLeaveTheRest(t *testing.T) {
	ctx := context.Background()
	srv := embed(t)
	var logs syncbuf.Buffer
	a, err := Open(ctx, Options{URLs: []string{srv.URL()}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := open(t, srv.URL())
	defer b.Close()
	if _, err := b.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateIntent(ctx, "open", "P", nil, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateIntent(ctx, "done", "P", nil, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ev, err := storetest.BeginAndFinish(ctx, b, "done", "P", nil, time.Now().Add(time.Hour), storetest.Event("done"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		id := fmt.Sprint("m", i)
		if err := b.CreateMandate(ctx, id, []byte("r")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.UpdateMandate(ctx, id, []byte("r2"), mustRev(t, b, id), true); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if due, err := a.DueExpiries(ctx, time.Now(), 10); err != nil || len(due) != 1 || due[0] != "open" {
		t.Errorf("due expiries beside mandates: %v, %v; want [open]", due, err)
	}
	if ids, err := a.Processing(ctx); err != nil || len(ids) != 0 {
		t.Errorf("processing beside mandates: %v, %v; want none", ids, err)
	}
	if first, last, err := a.EventBounds(ctx); err != nil || first != ev || last != ev {
		t.Errorf("event bounds beside mandates: %d..%d, %v; want %d..%d", first, last, err, ev, ev)
	}
	// The followers are checked every second and replaced once behind for 2 s: a
	// check that counted the mandates as records to follow would be logged by now.
	time.Sleep(stallAfter + 2*checkEvery)
	if n, err := a.PruneEvents(ctx, 0, time.Now()); err != nil || n != 1 {
		t.Errorf("pruning every event beside mandates: %d, %v; want 1", n, err)
	}
	if data, _, err := a.Mandate(ctx, "m0"); err != nil || string(data) != "r2" {
		t.Errorf("a mandate after pruning: %q, %v; want r2", data, err)
	}
	if out := logs.String(); strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") {
		t.Errorf("the store that followed the mandates logged:\n%s", out)
	}
	for _, f := range []*follower{a.watch, a.events} {
		if f.replaced.Load() != 0 {
			t.Errorf("the follower of %s was replaced", f.what)
		}
	}
}

// mustRev is the revision of mandate id.
func mustRev(t *testing.T, s *Store, id string) uint64 {
	t.Helper()
	_, rev, err := s.Mandate(context.Background(), id)
	if err != nil {
		t.Fatalf("Mandate(%s): %v", id, err)
	}
	return rev
}
