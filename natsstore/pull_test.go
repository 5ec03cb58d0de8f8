package natsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/intentd/intentd"
)

// TestFollowerPulls runs a follower of a subject of its own, with each window, through
// what a follower meets: more records waiting at its start than one pull takes, records
// that come a few at a time, and its consumer deleted under it. It must hand on every
// record once, in stream order, with none lost across the consumer made again.
func TestFollowerPulls(t *testing.T) {
	cases := []struct {
		name   string
		window time.Duration
	}{
		{"each record as it comes", 0},
		{"a window", 20 * time.Millisecond},
		{"the longest window", MaxFollowWindow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, Options{URLs: []string{embed(t).URL()}, FollowWindow: c.window})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			subject := s.prefix + ".test.follow"
			var mu sync.Mutex
			var got []uint64
			handled := func() []uint64 {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(got)
			}
			f := &follower{s: s, what: "a test's subject", subjects: []string{subject}, window: s.eventsWindow,
				handle: func(_ jetstream.Msg, meta *jetstream.MsgMetadata) {
					mu.Lock()
					got = append(got, meta.Sequence.Stream)
					mu.Unlock()
				}}
			var want []uint64
			publish := func(n int, every time.Duration) {
				t.Helper()
				for i := range n {
					ack, err := s.js.Publish(ctx, subject, fmt.Appendf(nil, "r%d", i))
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, ack.Sequence)
					time.Sleep(every)
				}
			}
			all := func(what string) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for len(handled()) < len(want) && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if h := handled(); !slices.Equal(h, want) {
					t.Fatalf("%s: handed on %d records, want %d once each in order; first difference at %d",
						what, len(h), len(want), firstDifference(h, want))
				}
			}

			publish(2*batchMax+7, 0)
			start := time.Now()
			if _, err := f.start(ctx, jetstream.DeliverAllPolicy, 0); err != nil {
				t.Fatal(err)
			}
			defer f.stop()
			all("the records there at the start")
			// A first record with others behind it does not wait out the window.
			if took := time.Since(start); c.window >= MaxFollowWindow && took >= c.window {
				t.Errorf("the records there at the start were handed on after %v, the window being %v", took, c.window)
			}

			publish(40, 3*time.Millisecond)
			all("records a few milliseconds apart")

			// A record after a quiet spell is handed on at once, not a window later.
			time.Sleep(50 * time.Millisecond)
			start = time.Now()
			publish(1, 0)
			all("a record alone")
			if took := time.Since(start); c.window > 0 && took >= c.window {
				t.Errorf("a record alone was handed on after %v, the window being %v", took, c.window)
			}

			names := s.stream.ConsumerNames(ctx)
			for name := range names.Name() {
				if err := s.stream.DeleteConsumer(ctx, name); err != nil {
					t.Fatal(err)
				}
			}
			if err := names.Err(); err != nil {
				t.Fatal(err)
			}
			publish(20, time.Millisecond)
			all("records after the consumer was deleted")
		})
	}
}

func firstDifference(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPullOnce runs one pull against fakes of a consumer and the batch it returns: a
// record lost on the way ends the pull with an error after the records before it, so
// that the consumer is made again after them; a pull whose wait ran out is no error; the
// server's errors are passed on.
func TestPullOnce(t *testing.T) {
	cases := []struct {
		name    string
		seqs    []uint64 // the consumer sequences the pull brings
		err     error    // the batch's error
		handled int
		wantErr error
	}{
		{"in order", []uint64{1, 2, 3}, nil, 3, nil},
		{"one lost", []uint64{1, 2, 4, 5}, nil, 2, errOutOfOrder},
		{"the first lost", []uint64{2}, nil, 0, errOutOfOrder},
		{"a wait that ran out", nil, context.DeadlineExceeded, 0, nil},
		{"no heartbeat", []uint64{1}, jetstream.ErrNoHeartbeat, 1, jetstream.ErrNoHeartbeat},
		{"the consumer deleted", nil, jetstream.ErrConsumerDeleted, 0, jetstream.ErrConsumerDeleted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var handled int
			f := &follower{s: &Store{}, handle: func(jetstream.Msg, *jetstream.MsgMetadata) { handled++ }}
			batch := &fakeBatch{msgs: make(chan jetstream.Msg, len(c.seqs)), err: c.err}
			for _, seq := range c.seqs {
				batch.msgs <- fakeMsg{meta: jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Consumer: seq, Stream: 100 + seq}, NumPending: 10 - seq}}
			}
			close(batch.msgs)
			var delivered uint64
			n, pending, err := f.pullOnce(context.Background(), fakeConsumer{batch: batch}, false, &delivered)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			if handled != c.handled || n != c.handled || delivered != uint64(c.handled) {
				t.Errorf("handled %d (counted %d, delivered to %d), want %d", handled, n, delivered, c.handled)
			}
			// What the consumer held after the last record handed on.
			wantPending := uint64(0)
			if c.handled > 0 {
				wantPending = 10 - uint64(c.handled)
			}
			if pending != wantPending {
				t.Errorf("pending %d after %d records, want %d", pending, c.handled, wantPending)
			}
		})
	}
}

// fakeConsumer is a consumer whose every pull returns batch; what a test does not call
// is left to the interface it embeds.
type fakeConsumer struct {
	jetstream.Consumer
	batch jetstream.MessageBatch
}

func (c fakeConsumer) Fetch(int, ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	return c.batch, nil
}

func (c fakeConsumer) FetchNoWait(int) (jetstream.MessageBatch, error) { return c.batch, nil }

type fakeBatch struct {
	msgs chan jetstream.Msg
	err  error
}

func (b *fakeBatch) Messages() <-chan jetstream.Msg { return b.msgs }
func (b *fakeBatch) Error() error                   { return b.err }

type fakeMsg struct {
	jetstream.Msg
	meta jetstream.MsgMetadata
}

func (m fakeMsg) Metadata() (*jetstream.MsgMetadata, error) { return &m.meta, nil }

// TestEventsPacedByWhoWaits: the events' follower lets the events gather for the patient
// window while nobody waits for them, and for the store's window while someone does; one
// who comes ends a patient window under way. Each pair of events is written after a quiet
// spell: the first is taken at once, the second, written right after it, when the window
// that follows the first ends.
func TestEventsPacedByWhoWaits(t *testing.T) {
	ctx := context.Background()
	srv := embed(t)
	w := open(t, srv.URL())
	defer w.Close()
	const window = 50 * time.Millisecond
	f, err := Open(ctx, Options{URLs: []string{srv.URL()}, FollowWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patient := f.patientWindow()
	if patient != 10*window {
		t.Fatalf("patient window %v, want ten times the window, %v", patient, 10*window)
	}
	heard := make(chan string, 64)
	f.SetEventSink(func(ev intentd.Event) { heard <- ev.IntentID })
	if _, err := w.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	wait := func(id string) time.Time {
		t.Helper()
		select {
		case got := <-heard:
			if got != id {
				t.Fatalf("heard %s, want %s", got, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s not heard", id)
		}
		return time.Now()
	}
	first := func(name string) time.Time {
		t.Helper()
		time.Sleep(patient + 200*time.Millisecond) // quiet: the follower waits for a record
		writeDecided(t, w, name+"-1")
		at := wait(name + "-1")
		writeDecided(t, w, name+"-2")
		return at
	}

	f.EventsAwaited(false)
	at := first("patient")
	if took := wait("patient-2").Sub(at); took < patient/2 {
		t.Errorf("nobody waiting: the second event came %v after the first, the patient window being %v", took, patient)
	}
	f.EventsAwaited(true)
	at = first("awaited")
	if took := wait("awaited-2").Sub(at); took >= patient*3/4 {
		t.Errorf("someone waiting: the second event came %v after the first, the window being %v", took, window)
	}
	// The patient window after hurried-1 would end patient later; one who comes ends it.
	f.EventsAwaited(false)
	at = first("hurried")
	time.Sleep(window)
	f.EventsAwaited(true)
	if took := wait("hurried-2").Sub(at); took >= patient*3/4 {
		t.Errorf("someone came: the second event came %v after the first, the patient window being %v", took, patient)
	}
}

// TestRestartWait: a follower whose pulls keep failing makes its consumer again at
// once the first time, then less and less often, at most a second apart.
func TestRestartWait(t *testing.T) {
	cases := []struct {
		failed int
		want   time.Duration
	}{
		{0, 0},
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{4, 800 * time.Millisecond},
		{5, time.Second},
		{50, time.Second},
	}
	for _, c := range cases {
		if got := restartWait(c.failed); got != c.want {
			t.Errorf("restartWait(%d) = %v, want %v", c.failed, got, c.want)
		}
	}
}

// TestCreateHurriesTheIndex: a create waits for the index to take its own record, and
// must not wait out the index's window for it. With the longest window, and the index
// busy with records of another writer, each create returns well before the window ends.
func TestCreateHurriesTheIndex(t *testing.T) {
	ctx := context.Background()
	srv := embed(t)
	w := open(t, srv.URL())
	defer w.Close()
	s, err := Open(ctx, Options{URLs: []string{srv.URL()}, FollowWindow: MaxFollowWindow})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := w.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		// Another writer's intent, which the index takes alone and then lets a window
		// pass, before the create whose record it must take.
		if err := w.CreateIntent(ctx, fmt.Sprint("w", i), "P", nil, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		start := time.Now()
		if err := s.CreateIntent(ctx, fmt.Sprint("s", i), "P", nil, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took >= MaxFollowWindow*3/4 {
			t.Errorf("create %d took %v, the window being %v", i, took, MaxFollowWindow)
		}
	}
}
