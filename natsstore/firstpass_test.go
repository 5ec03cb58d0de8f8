package natsstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestFirstPassReplacesAFollowerThatStandsStill: the index's first pass at a start is
// handed a consumer that delivers nothing, as one served by a NATS server just back
// can. The start does not wait out its time: after stallAfter the follower is replaced,
// the new consumer hands over the last record of every intent, and the pass ends.
func TestFirstPassReplacesAFollowerThatStandsStill(t *testing.T) {
	ctx := context.Background()
	s := open(t, embed(t).URL())
	defer s.Close()
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.CreateIntent(ctx, fmt.Sprint("i", i), "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}

	handled := map[string]int{}
	loaded := make(chan struct{})
	f := s.indexFollower(s.indexSubjects())
	apply := f.handle
	f.handle = func(m jetstream.Msg, meta *jetstream.MsgMetadata) {
		apply(m, meta)
		handled[m.Subject()]++
		if meta.NumPending == 0 {
			close(loaded)
		}
	}
	// The consumer is made and never pulled from: it stands still.
	cons, err := f.create(ctx, jetstream.DeliverLastPerSubjectPolicy, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.run = &pulling{cancel: func() {}, policy: jetstream.DeliverLastPerSubjectPolicy}
	defer f.stop()

	began := time.Now()
	pass, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := s.firstPass(pass, f, cons, loaded); err != nil {
		t.Fatalf("the first pass on a consumer that stands still: %v", err)
	}
	took := time.Since(began)
	if took < stallAfter {
		t.Errorf("the pass ended after %v, before a follower standing still for %v could be told from a slow one", took, stallAfter)
	}
	if n := f.replaced.Load(); n != 1 {
		t.Errorf("the follower was replaced %d times, want once", n)
	}
	select {
	case <-loaded:
	default:
		t.Fatal("the pass ended before the new consumer handed over the last record")
	}
	for i := range 5 {
		subj := s.intentSubject(fmt.Sprint("i", i))
		if handled[subj] != 1 {
			t.Errorf("%s handed over %d times, want once (its last record alone)", subj, handled[subj])
		}
	}
	t.Logf("the pass ended %v after it began, the follower replaced after standing still", took.Round(time.Millisecond))
}
