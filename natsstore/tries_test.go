package natsstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// TestUnansweredTriesLandOnce gives each try of a write less time than a write takes,
// so that most tries go unanswered while their writes land, as when an acknowledgement
// is lost or a stream's leader dies with it: every write is looked for and found, or
// sent again and refused by its fence. Each create, transition and finish must still
// succeed once, as its caller is told, with one record and one event each.
func TestUnansweredTriesLandOnce(t *testing.T) {
	ctx := context.Background()
	s := open(t, embed(t).URL())
	defer s.Close()
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	s.tryTimeout = time.Millisecond
	const n = 40
	ids := map[uint64]string{}
	for i := range n {
		id := fmt.Sprint("i", i)
		if err := s.CreateIntent(ctx, id, "P", []byte(`{"open":true}`), time.Now().Add(time.Hour)); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		if err := s.BeginProcessing(ctx, id, "P", []byte(`{"processing":true}`), time.Now().Add(time.Hour)); err != nil {
			t.Fatalf("processing %s: %v", id, err)
		}
		ev, err := s.Finish(ctx, id, "P", []byte(`{"done":true}`), time.Now().Add(time.Hour), storetest.Event(id))
		if err != nil {
			t.Fatalf("finish %s: %v", id, err)
		}
		ids[ev] = id
	}
	s.tryTimeout = 0
	if s.triedAgain.Load() == 0 {
		t.Skip("no try went unanswered: this machine wrote faster than a millisecond throughout")
	}
	t.Logf("%d tries went unanswered and were looked for or sent again", s.triedAgain.Load())
	var seen int
	err := s.Events(ctx, 0, 10*n, func(ev intentd.Event) error {
		seen++
		if id, ok := ids[ev.ID]; !ok || id != ev.IntentID {
			return fmt.Errorf("event %d of intent %s: no finish was told that id for it (told %q)", ev.ID, ev.IntentID, id)
		}
		return nil
	})
	if err != nil || seen != n {
		t.Fatalf("%d events, %v; want %d, one for each finish", seen, err, n)
	}
	for _, id := range ids {
		data, err := s.Intent(ctx, id)
		if err != nil || string(data) != `{"done":true}` {
			t.Errorf("intent %s: %s, %v", id, data, err)
		}
	}
}
