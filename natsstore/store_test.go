package natsstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/storetest"
)

// embed starts a NATS server with JetStream in a temporary folder, stopped when the test
// ends.
func embed(t testing.TB) *Embedded {
	t.Helper()
	srv, err := Embed(EmbedOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

func open(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{URLs: []string{url}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func(*testing.T) storetest.Store {
		srv := embed(t)
		return func(t *testing.T) storetest.Store { return stepped{open(t, srv.URL())} }
	})
}

// stepped shows storetest the steps of the store's two-step writes (storetest.Stepped).
type stepped struct{ *Store }

func (s stepped) AroundFirstStep(before, after func()) {
	s.beforeFirstStep, s.afterFirstStep = before, after
}

// TestOpenRefusesAnotherLayout finds a stream of the store's name that would lose
// records, and names what differs.
func TestOpenRefusesAnotherLayout(t *testing.T) {
	srv := embed(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "INTENTD", Subjects: []string{"intentd.>"}, MaxAge: time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), Options{URLs: []string{srv.URL()}})
	if err == nil || !strings.Contains(err.Error(), "another layout") || !strings.Contains(err.Error(), "allow_atomic") ||
		!strings.Contains(err.Error(), "max_age") {
		t.Fatalf("Open on a stream of another layout: %v", err)
	}
}

// TestReadsGoToTheLeader opens a stream that allows direct gets, which any replica
// answers however far behind it is (streams of earlier versions did, and an operator
// may turn them on): the store leaves the setting as found, and every read it makes
// still goes to the stream's leader. A direct get by nats.go on the same stream shows
// that the watch on the API's subjects would see one.
func TestReadsGoToTheLeader(t *testing.T) {
	srv := embed(t)
	st := open(t, srv.URL())
	ctx := context.Background()
	if _, err := st.PutPolicy(ctx, "p1", []byte{1}, []byte("src")); err != nil {
		t.Fatal(err)
	}
	cfg := st.streamConfig(1)
	cfg.AllowDirect = true
	if _, err := st.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	st.Close()

	watch, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	// The stream's own gets: the members' bucket and the marks' are streams of their
	// own, read as nats.go reads key-value buckets.
	var direct, leader atomic.Int64
	for _, subj := range []string{"$JS.API.DIRECT.GET." + st.name, "$JS.API.DIRECT.GET." + st.name + ".>"} {
		if _, err := watch.Subscribe(subj, func(*nats.Msg) { direct.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := watch.Subscribe("$JS.API.STREAM.MSG.GET."+st.name, func(*nats.Msg) { leader.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}

	st = open(t, srv.URL())
	defer st.Close()
	info, err := st.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Config.AllowDirect {
		t.Error("opening the store turned direct gets off; it leaves them as found")
	}
	if _, src, err := st.Policy(ctx, "p1"); err != nil || string(src) != "src" {
		t.Errorf("the policy stored before: %q, %v", src, err)
	}
	if err := st.Events(ctx, 0, 10, func(intentd.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.stream.GetMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for direct.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := direct.Load(); got != 1 {
		t.Errorf("%d direct gets seen, want the one nats.go made", got)
	}
	if leader.Load() == 0 {
		t.Error("no read of the store went to the stream's leader")
	}
}

// TestOpenUnreachable fails at once with the URL in a one-line error.
func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = Open(context.Background(), Options{URLs: []string{url}})
	if err == nil || !strings.Contains(err.Error(), url) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Open of an unreachable server: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Open took %v to fail", d)
	}
}

// TestPruneAllThenCount prunes everything by count, then by count again after new events:
// the event kept only for its id is never counted as retained.
func TestPruneAllThenCount(t *testing.T) {
	ctx := context.Background()
	s := open(t, embed(t).URL())
	defer s.Close()
	s.PutPolicy(ctx, "P", []byte{1}, nil)
	decideOne(t, s, "a")
	last := decideOne(t, s, "b")
	if n, err := s.PruneEvents(ctx, 0, time.Time{}); err != nil || n != 2 {
		t.Fatalf("prune all = %d, %v; want 2", n, err)
	}
	if n, err := s.PruneEvents(ctx, 0, time.Time{}); err != nil || n != 0 {
		t.Fatalf("prune of nothing = %d, %v; want 0", n, err)
	}
	c := decideOne(t, s, "c")
	d := decideOne(t, s, "d")
	if n, err := s.PruneEvents(ctx, 1, time.Time{}); err != nil || n != 1 {
		t.Fatalf("prune to 1 = %d, %v; want 1", n, err)
	}
	if first, l, _ := s.EventBounds(ctx); first != d || l != d || c <= last {
		t.Fatalf("bounds = %d..%d, want %d..%d", first, l, d, d)
	}
}

// TestPruneWritesTheFloorFirst prunes by count and by age, and checks at each purge that
// the floor record already says what goes: a reader that resumes while a prune runs finds
// the events it asks for, or the floor that says they are gone, never a gap it cannot
// tell. It checks too what stays: the newest keep, or those not older than the age.
func TestPruneWritesTheFloorFirst(t *testing.T) {
	ctx := context.Background()
	s := open(t, embed(t).URL())
	t.Cleanup(func() { s.Close() })
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	finish := func() { ids = append(ids, decideOne(t, s, fmt.Sprint("i", len(ids)))) }
	for range 9 {
		finish()
	}
	purges := 0
	var wantFloor uint64
	s.beforePurge = func() {
		purges++
		// The stream's record, not what this store remembers of it.
		floor, _, err := s.floorRecord(ctx)
		if err != nil || floor != wantFloor {
			t.Errorf("purge %d: the stream's floor is %d, %v; want %d, the first event kept, before anything goes", purges, floor, err, wantFloor)
		}
	}
	for _, c := range []struct {
		name      string
		keep      uint64
		olderThan func() time.Time
		kept      int // how many of ids stay, the newest
	}{
		{"by count", 5, func() time.Time { return time.Time{} }, 5},
		{"by count again", 4, func() time.Time { return time.Time{} }, 4},
		{"by age", 100, func() time.Time {
			time.Sleep(10 * time.Millisecond)
			at := time.Now()
			finish()
			finish()
			return at
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			olderThan := c.olderThan()
			wantFloor = ids[len(ids)-c.kept]
			before := purges
			if _, err := s.PruneEvents(ctx, c.keep, olderThan); err != nil {
				t.Fatal(err)
			}
			if purges == before {
				t.Fatal("the prune purged nothing: the test checked nothing")
			}
			var got []uint64
			if err := s.Events(ctx, 0, 100, func(ev intentd.Event) error { got = append(got, ev.ID); return nil }); err != nil {
				t.Fatal(err)
			}
			if want := ids[len(ids)-c.kept:]; !slices.Equal(got, want) {
				t.Errorf("events after the prune = %v; want %v", got, want)
			}
			if p, err := s.PrunedThrough(ctx); err != nil || p != ids[len(ids)-c.kept-1] {
				t.Errorf("PrunedThrough = %d, %v; want %d", p, err, ids[len(ids)-c.kept-1])
			}
		})
	}
}

// TestFloorNeverLowered raises the floor through one store, then through another that
// read the stream before it, as two nodes' prunes do on their own clocks: the lower floor
// is not written over the higher one, and a higher one still is.
func TestFloorNeverLowered(t *testing.T) {
	ctx := context.Background()
	srv := embed(t)
	a, b := open(t, srv.URL()), open(t, srv.URL())
	t.Cleanup(func() { a.Close(); b.Close() })
	for _, c := range []struct {
		by        *Store
		cut, want uint64
		whose     string
	}{
		{a, 40, 40, "a first floor"},
		{b, 30, 40, "a lower floor, from a prune that read the stream before the first"},
		{b, 40, 40, "the same floor again"},
		{b, 50, 50, "a higher floor"},
	} {
		if err := c.by.raiseFloor(ctx, c.cut, c.cut-1); err != nil {
			t.Fatalf("%s: %v", c.whose, err)
		}
		if f, _, err := a.floorRecord(ctx); err != nil || f != c.want {
			t.Errorf("after %s (%d): the stream's floor is %d, %v; want %d", c.whose, c.cut, f, err, c.want)
		}
	}
	// Between b's read of the floor and its write, a writes a higher one: b's write,
	// fenced on the record it read, is refused, and b reads again and leaves a's.
	wrote := 0
	b.beforeFloorWrite = func() {
		if wrote++; wrote == 1 {
			if err := a.raiseFloor(ctx, 70, 69); err != nil {
				t.Error(err)
			}
		}
	}
	if err := b.raiseFloor(ctx, 60, 59); err != nil {
		t.Fatal(err)
	}
	if f, _, err := a.floorRecord(ctx); err != nil || f != 70 || wrote != 1 {
		t.Errorf("after a higher floor came between b's read and write: the floor is %d, %v, b wrote %d times; want 70, once", f, err, wrote)
	}
}

// TestStorageFull fills a server whose JetStream may hold little: a write past it is
// refused with intentd.ErrStorageFull, whatever it is, and what was stored before stays
// readable.
func TestStorageFull(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte("jetstream { max_file_store: 64KB }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := Embed(EmbedOptions{Dir: dir, ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	s := open(t, srv.URL())
	defer s.Close()
	ctx := context.Background()
	if _, err := s.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	snap := make([]byte, 4096)
	var stored []string
	var full error
	for i := 0; i < 100 && full == nil; i++ {
		id := fmt.Sprintf("i%d", i)
		switch err := s.CreateIntent(ctx, id, "P", snap, time.Now().Add(time.Hour)); {
		case err == nil:
			stored = append(stored, id)
			if len(stored) == 1 { // its outcome is written once the store is full
				if err := s.BeginProcessing(ctx, id, "P", snap, time.Now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
		case errors.Is(err, intentd.ErrStorageFull):
			full = err
		default:
			t.Fatalf("create %s: %v, want nil or intentd.ErrStorageFull", id, err)
		}
	}
	if full == nil {
		t.Fatal("100 intents of 4 KiB fitted in 64 KiB")
	}
	if len(stored) == 0 {
		t.Fatalf("the first write was refused: %v", full)
	}
	t.Logf("after %d intents: %v", len(stored), full)
	for _, id := range stored {
		if got, err := s.Intent(ctx, id); err != nil || len(got) != len(snap) {
			t.Fatalf("intent %s stored before the store was full reads %d bytes, %v", id, len(got), err)
		}
	}
	if _, err := s.Finish(ctx, stored[0], "P", snap, time.Now(), storetest.Event(stored[0])); !errors.Is(err, intentd.ErrStorageFull) {
		t.Fatalf("terminal write when full = %v, want intentd.ErrStorageFull", err)
	}
	if err := s.Writable(); !errors.Is(err, intentd.ErrStorageFull) {
		t.Fatalf("Writable when full = %v, want intentd.ErrStorageFull", err)
	}
}

// TestOpenWaitsForClusterLeader opens the store on a three-server cluster at the moment
// its servers take connections, before they have elected their leader: Open waits for
// JetStream to answer instead of failing, as a node started beside its servers must.
func TestOpenWaitsForClusterLeader(t *testing.T) {
	urls := embedCluster(t, 3)
	s, err := Open(context.Background(), Options{URLs: urls})
	if err != nil {
		t.Fatalf("Open on a cluster still electing: %v", err)
	}
	defer s.Close()
	info, err := s.stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 {
		t.Fatalf("replicas %d, want 3 by default on three servers", info.Config.Replicas)
	}
}

// TestFollowersOutliveAServer stops one server of three under a store that follows the
// stream: the server it is connected to, or the stream's leader. Writes through another
// store go on once the cluster has a leader again, and the follower's index and event
// sink hear every one of them, none twice.
func TestFollowersOutliveAServer(t *testing.T) {
	for _, victim := range []string{"its server", "the leader"} {
		t.Run(victim, func(t *testing.T) {
			ctx := context.Background()
			srvs := embedServers(t, 3)
			urls := urlsOf(srvs)
			w, f := openReplicated(t, urls), openReplicated(t, urls)
			heard := listen(f)
			if _, err := w.PutPolicy(ctx, "P", []byte{1}, nil); err != nil {
				t.Fatal(err)
			}
			// retry repeats a write refused while the cluster elects a leader.
			retry := func(what string, fn func() error) {
				t.Helper()
				deadline := time.Now().Add(30 * time.Second)
				for {
					err := fn()
					if err == nil {
						return
					}
					if intentd.ErrorKind(err) != intentd.KindBusy || time.Now().After(deadline) {
						t.Fatalf("%s: %v", what, err)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			ids := make([]string, 40)
			write := func(i int) {
				ids[i] = fmt.Sprintf("i%d", i)
				retry("create "+ids[i], func() error {
					err := w.CreateIntent(ctx, ids[i], "P", []byte("o"), time.Now().Add(time.Hour))
					if errors.Is(err, intentd.ErrExists) {
						return nil // the first try was written before its answer was lost
					}
					return err
				})
				retry("begin processing "+ids[i], func() error {
					err := w.BeginProcessing(ctx, ids[i], "P", []byte("p"), time.Now())
					if errors.Is(err, intentd.ErrStale) {
						return nil // the first try was written before its answer was lost
					}
					return err
				})
				retry("finish "+ids[i], func() error {
					_, err := w.Finish(ctx, ids[i], "P", []byte("t"), time.Now(), storetest.Event(ids[i]))
					if errors.Is(err, intentd.ErrStale) {
						return nil // the same
					}
					return err
				})
			}
			for i := range 20 {
				write(i)
			}
			eventually(t, func() bool { return len(heard()) == 20 }, "the first events")

			target := f.nc.ConnectedUrl()
			if victim == "the leader" {
				info, err := w.stream.Info(ctx)
				if err != nil {
					t.Fatal(err)
				}
				target = ""
				for _, srv := range srvs {
					if info.Cluster != nil && info.Cluster.Leader == srv.Name() {
						target = srv.URL()
					}
				}
			}
			stopped := false
			for _, srv := range srvs {
				if srv.URL() == target {
					srv.Shutdown()
					stopped = true
				}
			}
			if !stopped {
				t.Fatalf("no server at %q to stop", target)
			}
			for i := 20; i < len(ids); i++ {
				write(i)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				n := len(heard())
				if n == len(ids) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the follower heard %d of %d events 30s after the server stopped", n, len(ids))
				}
				time.Sleep(20 * time.Millisecond)
			}
			for id, n := range heard() {
				if n != 1 {
					t.Errorf("event of %s heard %d times", id, n)
				}
			}
			// Every intent finished: the follower's index has none left.
			eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.intents) == 0 }, "an empty index")
		})
	}
}

// writerAndFollower are two stores on one embedded server, holding policy P: one to
// write, one whose followers a test watches, and what its sink heard.
func writerAndFollower(t *testing.T) (w, f *Store, heard func() map[string]int) {
	t.Helper()
	srv := embed(t)
	w, f = open(t, srv.URL()), open(t, srv.URL())
	t.Cleanup(func() { w.Close(); f.Close() })
	heard = listen(f)
	if _, err := w.PutPolicy(context.Background(), "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	return w, f, heard
}

// TestInterruptedFollowerIsReplacedAtOnce: a follower whose consumer stopped, and was
// reported interrupted before the check that finds it behind, is replaced by that check
// when the interruption is stallAfter old, and given stallAfter from the check when it
// is not; one never interrupted is given stallAfter from the check, as before. The
// checks are called with chosen times while the store's own are held off.
func TestInterruptedFollowerIsReplacedAtOnce(t *testing.T) {
	cases := []struct {
		name        string
		interrupted bool
		found       time.Duration // after the interruption (or the consumer's stop)
		replaced    uint64
	}{
		{"never interrupted", false, stallAfter + time.Second, 0},
		{"interrupted a moment before", true, stallAfter / 4, 0},
		{"interrupted past stallAfter before", true, stallAfter + time.Second, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			w, f, heard := writerAndFollower(t)
			writeDecided(t, w, "a")
			eventually(t, func() bool { return heard()["a"] == 1 }, "the first event heard")
			fl := f.events
			for !fl.checking.CompareAndSwap(false, true) {
				time.Sleep(time.Millisecond) // the store's own check is under way
			}
			defer fl.checking.Store(false)
			fl.mu.Lock()
			fl.run.stop()
			fl.mu.Unlock()
			stopped := time.Now()
			if c.interrupted {
				fl.interrupted(stopped)
			}
			writeDecided(t, w, "b")
			found := stopped.Add(c.found)
			fl.check(ctx, found)
			if got := fl.replaced.Load(); got != c.replaced {
				t.Fatalf("replaced %d times by the check that found it behind, want %d", got, c.replaced)
			}
			if c.replaced == 0 {
				// It is replaced stallAfter after the check found it, as before.
				fl.check(ctx, found.Add(stallAfter))
				if got := fl.replaced.Load(); got != 1 {
					t.Fatalf("replaced %d times stallAfter after it was found behind, want 1", got)
				}
			}
			eventually(t, func() bool { return heard()["b"] == 1 }, "the event written while it stood still")
		})
	}
}

// writeDecided writes intent id of policy P through w, and its proposal and outcome
// with its event.
func writeDecided(t *testing.T, w *Store, id string) {
	t.Helper()
	ctx := context.Background()
	if err := w.CreateIntent(ctx, id, "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.BeginAndFinish(ctx, w, id, "P", []byte("t"), time.Now(), storetest.Event(id)); err != nil {
		t.Fatal(err)
	}
}

// TestTricklingFollowerIsReplaced feeds a store's event follower a record at a time, as a
// consumer that starts again and again after an election was seen to: it moves, but the
// stream is ahead of it. The store finds it behind and replaces it, and the sink hears
// every event well before the trickle would have brought them.
func TestTricklingFollowerIsReplaced(t *testing.T) {
	ctx := context.Background()
	w, f, heard := writerAndFollower(t)
	fl := f.events
	fl.mu.Lock()
	fl.run.stop()
	from := fl.last + 1
	fl.mu.Unlock()
	const n, every = 12, 800 * time.Millisecond
	for i := range n {
		id := fmt.Sprintf("i%02d", i)
		if err := w.CreateIntent(ctx, id, "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.BeginAndFinish(ctx, w, id, "P", []byte("t"), time.Now(), storetest.Event(id)); err != nil {
			t.Fatal(err)
		}
	}
	// The trickle: a consumer of its own hands the follower one record every 800 ms.
	cons, err := f.js.OrderedConsumer(ctx, f.name, jetstream.OrderedConsumerConfig{
		FilterSubjects: fl.subjects, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		time.Sleep(every)
		if meta, err := m.Metadata(); err == nil {
			fl.receive(m, meta)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	start := time.Now()
	eventually(t, func() bool { return len(heard()) == n }, "every event heard")
	if took, trickle := time.Since(start), n*every; took > trickle*3/4 {
		t.Errorf("every event heard after %v; the trickle alone takes %v", took.Round(time.Millisecond), trickle)
	}
	if got := fl.replaced.Load(); got == 0 {
		t.Error("the trickling follower was not replaced")
	}
}

// TestStandingFollowerIsReplaced stops the consumers under a store's followers, as a
// consumer that failed to start again after a lost server would stand: the store finds
// records after the last its followers had, replaces them, and the sink and the index
// hear what was written meanwhile, once each.
func TestStandingFollowerIsReplaced(t *testing.T) {
	ctx := context.Background()
	w, f, heard := writerAndFollower(t)
	writeDecided(t, w, "a")
	eventually(t, func() bool { return heard()["a"] == 1 }, "the first event heard")
	for _, fl := range []*follower{f.watch, f.events} {
		fl.mu.Lock()
		fl.run.stop()
		fl.mu.Unlock()
	}
	writeDecided(t, w, "b")
	writeDecided(t, w, "c")
	deadline := time.Now().Add(stallAfter + 4*checkEvery)
	for {
		n := len(heard())
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink heard %v by %v after the followers stopped, want a, b and c", heard(), stallAfter+4*checkEvery)
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := `# HELP intentd_store_events_followed 1 while this node follows the stream's events, 0 while nobody on it reads them.
# TYPE intentd_store_events_followed gauge
intentd_store_events_followed 1
# HELP intentd_store_follower_replacements_total Followers of the NATS stream replaced after they fell behind the stream for 2 s.
# TYPE intentd_store_follower_replacements_total counter
intentd_store_follower_replacements_total{follows="events"} 1
intentd_store_follower_replacements_total{follows="index"} 1
# HELP intentd_store_index_follows_intents 1 while this node's index follows every intent of the stream, 0 while it follows the policies alone.
# TYPE intentd_store_index_follows_intents gauge
intentd_store_index_follows_intents 1
# HELP intentd_store_index_loads_total Loads of the index of intents after this node had stopped following the intents.
# TYPE intentd_store_index_loads_total counter
intentd_store_index_loads_total 0
# HELP intentd_store_server_moves_total Connections moved to another NATS server after the connected one stopped answering.
# TYPE intentd_store_server_moves_total counter
intentd_store_server_moves_total 0
`
	// Each follower is checked on its own: the sink hearing c says the events' follower
	// was replaced, and the index's may be replaced a check later. Both are, once each,
	// by the same deadline.
	var err error
	for {
		if err = testutil.CollectAndCompare(f.Collector(), strings.NewReader(want)); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("the follower metric after one replacement of each, %v after the followers stopped: %v", stallAfter+4*checkEvery, err)
	}
	writeDecided(t, w, "d") // the new followers go on
	eventually(t, func() bool {
		h := heard()
		return len(h) == 4 && h["a"] == 1 && h["b"] == 1 && h["c"] == 1 && h["d"] == 1
	}, "every event heard once")
	// The index follows again: it hears of an intent created through the other store.
	if err := w.CreateIntent(ctx, "e", "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, ok := f.intents["e"]
		return ok && len(f.intents) == 1
	}, "the index holding the open intent e alone")
}

// listen makes s's event sink count the events of each intent; the function it returns
// reads the counts.
func listen(s *Store) func() map[string]int {
	var mu sync.Mutex
	heard := map[string]int{}
	s.SetEventSink(func(e intentd.Event) {
		mu.Lock()
		heard[e.IntentID]++
		mu.Unlock()
	})
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(heard)
	}
}

// openReplicated opens a store of three replicas on the servers of urls, closed when
// the test ends.
func openReplicated(t *testing.T, urls []string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{URLs: urls, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// storeOfThreeEvents is a store on a server of its own, closed when the test ends,
// holding three decided intents and their three events.
func storeOfThreeEvents(t *testing.T) *Store {
	t.Helper()
	s := open(t, embed(t).URL())
	t.Cleanup(func() { s.Close() })
	writeThreeEvents(t, s)
	return s
}

// writeThreeEvents writes three decided intents, and their three events, into s, and
// returns the events' ids.
func writeThreeEvents(t *testing.T, s *Store) []uint64 {
	t.Helper()
	if _, err := s.PutPolicy(context.Background(), "P", []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for i := range 3 {
		ids = append(ids, decideOne(t, s, fmt.Sprint("i", i)))
	}
	return ids
}

// decideOne writes intent id, of policy P, and its outcome into s, and returns the
// outcome's event id.
func decideOne(t *testing.T, s *Store, id string) uint64 {
	t.Helper()
	ctx := context.Background()
	if err := s.CreateIntent(ctx, id, "P", []byte("o"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ev, err := storetest.BeginAndFinish(ctx, s, id, "P", []byte("t"), time.Now(), storetest.Event(id))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestReplaysLeaveNoConsumers reads pages of events more times than a stream may have
// consumers (1,000 by default): every page's consumer is gone once it is read, so the
// reads go on and the stream's consumers stay few.
func TestReplaysLeaveNoConsumers(t *testing.T) {
	ctx := context.Background()
	s := storeOfThreeEvents(t)
	for i := range 1100 {
		n := 0
		if err := s.Events(ctx, 0, pageByConsumer, func(intentd.Event) error { n++; return nil }); err != nil || n != 3 {
			t.Fatalf("read %d: %d events, %v", i, n, err)
		}
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := info.State.Consumers; c > 10 {
		t.Fatalf("the stream has %d consumers after 1,100 reads, want the followers' alone", c)
	}
}

// TestReplayWhenConsumersAreRefused: a page of events is read through a consumer made for
// it, and the servers may refuse to make one (here the stream is at its limit of them;
// in a cluster, the server that would hold it may have just died). The page is then read
// from the stream's leader, and the read never outlasts its context: a consumer made
// by nats.go's ordered consumer was tried again, with no end and deaf to the context,
// and a subscriber's replay stood silent for as long.
func TestReplayWhenConsumersAreRefused(t *testing.T) {
	s := storeOfThreeEvents(t)
	refuseConsumers(t, s)
	n, took, err := readPageWithin(t, s, 3*time.Second)
	if err != nil || n != 3 {
		t.Fatalf("a page read while consumers are refused: %d events, %v; want the 3 from the leader", n, err)
	}
	t.Logf("read in %v", took.Round(time.Millisecond))
}

// TestPruneWhenConsumersAreRefused prunes by count and age while the stream takes no
// consumer, which the count needs: the events past their age go all the same, the count
// is reported as not done, and the floor says what went.
func TestPruneWhenConsumersAreRefused(t *testing.T) {
	ctx := context.Background()
	s := open(t, embed(t).URL())
	t.Cleanup(func() { s.Close() })
	ids := writeThreeEvents(t, s)
	time.Sleep(10 * time.Millisecond)
	olderThan := time.Now()
	for i := range 3 { // three more, not past the age
		decideOne(t, s, fmt.Sprint("j", i))
	}
	refuseConsumers(t, s)
	n, err := s.PruneEvents(ctx, 1, olderThan)
	if err == nil || n != 3 {
		t.Fatalf("prune = %d, %v; want the 3 past their age pruned, and the count's error", n, err)
	}
	t.Logf("the prune's error: %v", err)
	if p, err := s.PrunedThrough(ctx); err != nil || p != ids[2] {
		t.Errorf("PrunedThrough = %d, %v; want %d, the newest past its age", p, err, ids[2])
	}
}

// refuseConsumers sets s's stream at its limit of consumers, the followers' own, so
// that it takes no more: no page's, no count's.
func refuseConsumers(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	info, err := s.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	cfg.MaxConsumers = info.State.Consumers
	if _, err := s.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy}); err == nil {
		t.Fatal("the stream still takes consumers: the test would prove nothing")
	}
}

// TestReplayBoundedWithoutQuorum: with two of three servers gone, no consumer can be
// made, and the stream's leader, if one still answers, soon stops: a page of events is
// read from a leader that still answers, or fails, within its context either way,
// rather than wait for the servers to come back.
func TestReplayBoundedWithoutQuorum(t *testing.T) {
	srvs := embedServers(t, 3)
	urls := urlsOf(srvs)
	s := openReplicated(t, urls)
	writeThreeEvents(t, s)
	// The two servers the store is not connected to go: its connection stays, and the
	// cluster has no quorum.
	gone := 0
	for _, srv := range srvs {
		if srv.URL() != s.nc.ConnectedUrl() {
			srv.Shutdown()
			gone++
		}
	}
	if gone != 2 {
		t.Fatalf("%d servers shut down, want 2 (connected to %s)", gone, s.nc.ConnectedUrl())
	}
	const within = 3 * time.Second
	n, took, err := readPageWithin(t, s, within)
	// A fetch and the consumer's delete may each outlast the context by a second.
	if took > within+2*time.Second {
		t.Fatalf("a page read with a context of %v took %v without a quorum", within, took)
	}
	if err == nil && n != 3 {
		t.Fatalf("a page read without a quorum gave %d events and no error, want the 3 or an error", n)
	}
	t.Logf("without a quorum, a page read gave %d events, %v, in %v", n, err, took.Round(time.Millisecond))
}

// readPageWithin reads a page of events from s with a context of within, and says how
// many it read, how long it took and its error; a read that has not returned 10 s after
// its context ended fails the test rather than hang it.
func readPageWithin(t *testing.T, s *Store, within time.Duration) (int, time.Duration, error) {
	t.Helper()
	type read struct {
		n   int
		err error
	}
	done := make(chan read, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		n := 0
		err := s.Events(ctx, 0, pageByConsumer, func(intentd.Event) error { n++; return nil })
		done <- read{n, err}
	}()
	select {
	case r := <-done:
		return r.n, time.Since(start), r.err
	case <-time.After(within + 10*time.Second):
		t.Fatalf("a page read with a context of %v has not returned after %v", within, within+10*time.Second)
		return 0, 0, nil
	}
}
