package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// subscriber is one stream reader of the fan-out, reconnecting after its last id when
// the server cuts it off, as a real client would.
type subscriber struct {
	seen       []uint64 // a bit per intent of the run: its event was read
	got        int64    // distinct events of the run read
	dups       int64
	lastID     uint64
	reconnects int64
}

func (s *subscriber) mark(i int32) bool {
	w, bit := i/64, uint64(1)<<(uint(i)%64)
	if s.seen[w]&bit != 0 {
		return false
	}
	s.seen[w] |= bit
	return true
}

// fanoutState is what the subscribers share.
type fanoutState struct {
	base    string
	client  *http.Client
	index   intentIndex
	origin  time.Time
	acked   []atomic.Int64 // when each proposal's 200 came, ns since origin; 0: not yet
	lag     hist
	early   atomic.Int64 // events read before their proposal's 200: lag counted as 0
	foreign atomic.Int64
	total   atomic.Int64 // distinct deliveries, all subscribers
	reconn  atomic.Int64
	refused atomic.Int64 // connection attempts refused (503 and others)
}

// connectPatience is how long a subscriber keeps trying to open its first stream.
const connectPatience = 2 * time.Minute

// follow reads one subscriber's stream until ctx ends, reconnecting when it breaks.
// ready is called once, when the first connection is up.
func (f *fanoutState) follow(ctx context.Context, s *subscriber, after uint64, ready func(error)) {
	s.lastID = after
	first := true
	start := time.Now()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		resp, err := openStream(ctx, f.client, f.base, "", s.lastID)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if first && time.Since(start) > connectPatience {
				ready(err)
				return
			}
			f.refused.Add(1)
			time.Sleep(backoff)
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		if first {
			ready(nil)
			first = false
		} else {
			s.reconnects++
			f.reconn.Add(1)
		}
		f.read(resp, s)
		resp.Body.Close()
	}
	if first {
		ready(ctx.Err())
	}
}

func (f *fanoutState) read(resp *http.Response, s *subscriber) {
	rd := newSSEReader(resp.Body)
	for {
		ev, err := rd.Next()
		if err != nil {
			return
		}
		if ev.HasID {
			s.lastID = ev.ID
		}
		i := f.index.lookup(eventIntentID(ev.Data))
		if i < 0 {
			f.foreign.Add(1)
			continue
		}
		if !s.mark(i) {
			s.dups++
			continue
		}
		now := int64(time.Since(f.origin)) + 1
		s.got++
		f.total.Add(1)
		at := f.acked[i].Load()
		if at == 0 || now < at {
			f.early.Add(1)
			f.lag.Record(0)
			continue
		}
		f.lag.Record(time.Duration(now - at))
	}
}

// connect starts b's subscribers, each following the events after after of n
// intents under wg until ctx ends, and returns once every one is connected or one failed.
func (f *fanoutState) connect(ctx context.Context, b *bench, after uint64, n int, wg *sync.WaitGroup) ([]*subscriber, error) {
	subs := make([]*subscriber, b.opts.Subscribers)
	words := (n + 63) / 64
	var readyWG sync.WaitGroup
	var connectErr atomic.Value
	// Connecting ten thousand streams at once would be a test of the accept queue;
	// a few hundred at a time is how clients arrive in practice.
	gate := make(chan struct{}, 256)
	b.logf("connecting %d subscribers", len(subs))
	for k := range subs {
		subs[k] = &subscriber{seen: make([]uint64, words)}
		wg.Add(1)
		readyWG.Add(1)
		gate <- struct{}{}
		go func(s *subscriber) {
			defer wg.Done()
			var once sync.Once
			f.follow(ctx, s, after, func(err error) {
				once.Do(func() {
					if err != nil {
						connectErr.Store(err)
					}
					<-gate
					readyWG.Done()
				})
			})
		}(subs[k])
	}
	readyWG.Wait()
	if err, _ := connectErr.Load().(error); err != nil {
		return nil, fmt.Errorf("connecting subscribers: %w", err)
	}
	return subs, nil
}

func runFanout(ctx context.Context, b *bench, r *Report) error {
	b.subscribers = b.opts.Subscribers
	bases, srv, after, intents, _, _, err := setUpProposals(ctx, b)
	if err != nil {
		return err
	}
	n := len(intents)
	base := bases[0]

	f := &fanoutState{base: base, client: newStreamClient(), index: newIntentIndex(intents), origin: time.Now(), acked: make([]atomic.Int64, n)}
	sctx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	var wg sync.WaitGroup
	connStart := time.Now()
	subs, err := f.connect(sctx, b, after, n, &wg)
	connTook := time.Since(connStart)
	if err != nil {
		return err
	}
	b.logf("%d subscribers connected in %s; producing %d events at %s/s", len(subs), connTook.Round(time.Millisecond), n, trimFloat(b.opts.Rate))

	spec := loadSpec{Concurrency: b.opts.Concurrency, Rate: b.opts.Rate, Duration: b.opts.Duration + time.Second}
	cpu := startCPU(srv)
	res := runLoad(ctx, spec, n, func(ctx context.Context, i int) error {
		_, err := post(ctx, b.client, base+"/intents/"+intents[i].ID+"/proposal", "application/json", proposalBody(i))
		if err == nil {
			f.acked[i].Store(int64(time.Since(f.origin)) + 1)
		}
		return err
	})
	produced := res.OK.Load()
	want := produced * int64(len(subs))
	b.logf("produced %d events in %s; waiting up to %s for every delivery", produced, res.Elapsed.Round(time.Millisecond), b.opts.Drain)
	drainStart := time.Now()
	for f.total.Load() < want && time.Since(drainStart) < b.opts.Drain {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	drained := time.Since(drainStart)
	delivered := f.total.Load()
	stopSubs()
	wg.Wait()

	var lost, dups, got int64
	slowest := int64(math.MaxInt64)
	for _, s := range subs {
		dups += s.dups
		got += s.got
		slowest = min(slowest, s.got)
		for i := range n {
			if f.acked[i].Load() != 0 && s.seen[i/64]&(1<<(uint(i)%64)) == 0 {
				lost++
			}
		}
	}
	// Events of proposals whose answer never came (a time-out) are not expected; if
	// they arrived anyway they are in got but not counted lost.
	r.series(seriesOf("POST proposal (from due time)", &res.Latency, res.Elapsed, res.Errors))
	r.series(seriesOf("delivery lag (proposal 200 -> read)", &f.lag, 0, nil))
	r.figure("subscribers", float64(len(subs)), "")
	r.figure("subscribers connected in", connTook.Seconds(), "s")
	r.figure("events produced", float64(produced), "")
	r.figure("deliveries expected", float64(want), "")
	r.figure("deliveries read", float64(got), "")
	r.figure("delivery rate", float64(got)/(res.Elapsed+drained).Seconds(), "events/s")
	r.target("events lost", float64(lost), "", 0, false)
	r.target("events duplicated", float64(dups), "", 0, false)
	r.figure("fewest events one subscriber read", float64(slowest), "")
	r.figure("reconnects", float64(f.reconn.Load()), "")
	r.figure("refused connection attempts", float64(f.refused.Load()), "")
	r.figure("events read before their 200", float64(f.early.Load()), "")
	r.figure("drain after the last proposal", drained.Seconds(), "s")
	r.target("delivery lag p99", ms(f.lag.Quantile(0.99)), "ms", 250, false)
	cpu.perOp(r, "per delivery", delivered)
	if srv != nil {
		r.figure("server: subscribers cut off as too slow", float64(srv.LogCount("subscriber too slow")), "")
		if m, err := srv.Memory(); err == nil {
			r.figure("intentd resident memory after the run", float64(m.RSS>>20), "MiB")
		}
	}
	if lost > 0 {
		r.note("lost counts events not read by the end of the drain (%s); raise --drain to tell slow from lost", b.opts.Drain)
	}
	if res.FirstErr != nil {
		r.note("proposals: first error: %v", res.FirstErr)
	}
	if f.foreign.Load() > 0 {
		r.note("%d events of other intents were on the streams", f.foreign.Load())
	}
	if b.opts.Rate != 100 || (b.opts.Subscribers != 2000 && b.opts.Subscribers != 10000) {
		r.note("the targets are set at 2,000 and 10,000 subscribers at 100 events/s; this run: %d at %s/s", b.opts.Subscribers, trimFloat(b.opts.Rate))
	}
	return nil
}
