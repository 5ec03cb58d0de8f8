package main

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"
)

// pairClock pairs two moments of one intent, the proposal's 200 and its event, which
// two goroutines see in either order. Whichever comes second records the gap.
type pairClock struct {
	ack   []atomic.Int64 // ns since origin; 0: not yet
	event []atomic.Int64
	seen  []atomic.Int32
	// early counts events read before their proposal's 200 was: the gap counts as 0.
	early  atomic.Int64
	origin time.Time
	h      *hist
	// perSecond and slowPerSecond count, by the second of the run in which each
	// proposal's 200 came, the gaps recorded and those over slowGap: whether the
	// tail is spread evenly or comes in bursts (a flush, a compaction) is what tells
	// its causes apart.
	perSecond, slowPerSecond []atomic.Int64
}

// slowGap is the p99 target of decide: gaps above it are counted per second.
const slowGap = 10 * time.Millisecond

func newPairClock(n int, h *hist, seconds int) *pairClock {
	return &pairClock{
		ack: make([]atomic.Int64, n), event: make([]atomic.Int64, n), seen: make([]atomic.Int32, n),
		origin: time.Now(), h: h,
		perSecond: make([]atomic.Int64, seconds), slowPerSecond: make([]atomic.Int64, seconds),
	}
}

// burstySeconds is how many whole seconds had more than 1 % of their gaps over
// slowGap, and the largest share of one second.
func (p *pairClock) burstySeconds() (n int, worst float64) {
	for i := range p.perSecond {
		all, slow := p.perSecond[i].Load(), p.slowPerSecond[i].Load()
		if all < 100 {
			continue // a part second at either end
		}
		share := float64(slow) / float64(all)
		if share > 0.01 {
			n++
		}
		worst = max(worst, share)
	}
	return n, worst
}

func (p *pairClock) now() int64 { return int64(time.Since(p.origin)) + 1 }

func (p *pairClock) acked(i int) {
	p.ack[i].Store(p.now())
	p.done(i)
}

func (p *pairClock) evented(i int) {
	p.event[i].Store(p.now())
	p.done(i)
}

func (p *pairClock) done(i int) {
	if p.seen[i].Add(1) != 2 {
		return
	}
	gap := p.event[i].Load() - p.ack[i].Load()
	if gap < 0 {
		p.early.Add(1)
		gap = 0
	}
	p.h.Record(time.Duration(gap))
	if sec := int(p.ack[i].Load() / int64(time.Second)); sec < len(p.perSecond) {
		p.perSecond[sec].Add(1)
		if gap > int64(slowGap) {
			p.slowPerSecond[sec].Add(1)
		}
	}
}

// slowCauses sorts the proposals whose gap exceeded slowGap by what the server was
// doing in the background between their 200 and their event: flushing or compacting
// its store, or, if not, collecting garbage. It also returns the span of the 200s.
func (p *pairClock) slowCauses(store, gc []window) (slow, inStore, inGC int, from, to time.Time) {
	at := func(ns int64) time.Time { return p.origin.Add(time.Duration(ns - 1)) }
	for i := range p.ack {
		a, e := p.ack[i].Load(), p.event[i].Load()
		if a == 0 || e == 0 {
			continue
		}
		if from.IsZero() || at(a).Before(from) {
			from = at(a)
		}
		if at(a).After(to) {
			to = at(a)
		}
		if e-a <= int64(slowGap) {
			continue
		}
		slow++
		switch {
		case overlaps(at(a), at(e), store):
			inStore++
		case overlaps(at(a), at(e), gc):
			inGC++
		}
	}
	return slow, inStore, inGC, from, to
}

// reportSlowCauses reports slowCauses with the share of the run each kind of work
// took: a kind whose share of the slow proposals is far above its share of the time is
// what holds the tail up.
func reportSlowCauses(r *Report, clock *pairClock, bg *background) {
	store, gc := bg.windows()
	slow, inStore, inGC, from, to := clock.slowCauses(store, gc)
	r.figure("proposals over 10 ms", float64(slow), "")
	r.figure("  of them while the store flushed or compacted", float64(inStore), "")
	r.figure("  share of the run the store flushed or compacted", 100*coverage(from, to, store), "%")
	r.figure("  of them while the collector ran, the store not", float64(inGC), "")
	r.figure("  share of the run the collector ran", 100*coverage(from, to, gc), "%")
	r.figure("  of them at other times", float64(slow-inStore-inGC), "")
	r.figure("server: collections it logged", float64(len(gc)), "")
	r.figure("server: flushes and compactions it logged", float64(len(store)), "")
}

func runDecide(ctx context.Context, b *bench, r *Report) error {
	bases, srv, after, intents, took, whole, err := setUpProposals(ctx, b)
	if err != nil {
		return err
	}
	base := bases[0]
	n := len(intents)
	r.figure("set-up: intents submitted", float64(n), "")
	r.figure("set-up: submission rate", float64(n)/took.Seconds(), "intents/s")

	index := newIntentIndex(intents)
	var lat hist
	// The clock starts now, and the load after the stream is open: a second more than
	// the load's own keeps its last part second.
	clock := newPairClock(n, &lat, int(b.opts.Duration/time.Second)+3)
	var events, foreign, dups atomic.Int64
	got := make([]atomic.Bool, n)

	sctx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	resp, err := openStream(sctx, newStreamClient(), base, "", after)
	if err != nil {
		return err
	}
	readErr := make(chan error, 1)
	go func() {
		defer resp.Body.Close()
		rd := newSSEReader(resp.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				readErr <- err
				return
			}
			i := index.lookup(eventIntentID(ev.Data))
			if i < 0 {
				foreign.Add(1)
				continue
			}
			if got[i].Swap(true) {
				dups.Add(1)
				continue
			}
			events.Add(1)
			clock.evented(int(i))
		}
	}()

	b.logf("decide: %d proposals at %s/s", n, trimFloat(b.opts.Rate))
	spec := loadSpec{Concurrency: b.opts.Concurrency, Rate: b.opts.Rate, Duration: b.opts.Duration + time.Second}
	cpu := startCPU(srv)
	res := runLoad(ctx, spec, n, func(ctx context.Context, i int) error {
		// A proposal goes to the member after its create's: neither is where the
		// other was more often than the cluster's placement makes it.
		_, err := post(ctx, b.client, nodeFor(bases, i, 1)+"/intents/"+intents[i].ID+"/proposal", "application/json", proposalBody(i))
		if err == nil {
			clock.acked(i)
		}
		return err
	})
	accepted := res.OK.Load()
	deadline := time.Now().Add(b.opts.Drain)
	var streamErr error
	for events.Load() < accepted && time.Now().Before(deadline) && streamErr == nil {
		select {
		case streamErr = <-readErr:
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cpu.perOp(r, "per proposal", accepted)
	whole.perOp(ctx, r, "per intent created and decided", accepted)
	stopStream()

	r.series(seriesOf("POST proposal (from due time)", &res.Latency, res.Elapsed, res.Errors))
	r.series(seriesOf("proposal 200 -> event", &lat, 0, nil))
	r.figure("proposals accepted", float64(accepted), "")
	r.figure("events received", float64(events.Load()), "")
	r.target("events missing", float64(accepted-events.Load()), "", 0, false)
	r.figure("events duplicated", float64(dups.Load()), "")
	r.figure("events read before their 200", float64(clock.early.Load()), "")
	r.target("proposal 200 -> event p99", ms(lat.Quantile(0.99)), "ms", ms(slowGap), false)
	bursty, worst := clock.burstySeconds()
	r.figure("seconds with over 1 % of gaps above 10 ms", float64(bursty), "")
	r.figure("the worst second's share above 10 ms", 100*worst, "%")
	if srv != nil {
		reportSlowCauses(r, clock, &srv.bg)
	}
	if res.FirstErr != nil {
		r.note("proposals: first error: %v", res.FirstErr)
	}
	if streamErr != nil && !errors.Is(streamErr, context.Canceled) {
		r.note("the stream ended early: %v", streamErr)
	}
	if foreign.Load() > 0 {
		r.note("%d events of other intents were on the stream", foreign.Load())
	}
	if b.opts.Rate != 1000 {
		r.note("the p99 target is set at 1,000 proposals/s; this run was at %s/s", trimFloat(b.opts.Rate))
	}
	return nil
}

// setUpProposals is the start of the scenarios that decide intents: a server (or a
// cluster's members), the demo policy, a marker event to stream from, and rate ×
// duration intents signed and submitted, spread over the members, ready for their
// proposals. It returns the marker's event id, how long the submissions took, and a
// meter of the servers' CPU started before the first submission.
func setUpProposals(ctx context.Context, b *bench) (bases []string, srv *child, after uint64, intents []signedIntent, took time.Duration, whole *wholeMeter, err error) {
	if bases, srv, err = b.targets(ctx); err != nil {
		return
	}
	base := bases[0]
	policyID, err := putPolicies(ctx, b.client, bases)
	if err != nil {
		return
	}
	if after, err = marker(ctx, b, base, policyID); err != nil {
		return
	}
	n := int(math.Ceil(b.opts.Rate * b.opts.Duration.Seconds()))
	b.logf("signing and submitting %d intents", n)
	if intents, err = signIntents(n, policyID, b.key); err != nil {
		return
	}
	whole = &wholeMeter{cpu: startCPU(srv), members: startClusterCPU(ctx, b)}
	took, err = submitAll(ctx, b.client, bases, intents, b.opts.Concurrency)
	return
}

// wholeMeter measures the servers' CPU over intents' creation and decision both.
type wholeMeter struct {
	cpu     *cpuMeter
	members *clusterMeter
}

// perOp adds the CPU per intent (the tool's; a started server's from /proc, --server
// members' from their /metrics) to r.
func (w *wholeMeter) perOp(ctx context.Context, r *Report, what string, n int64) {
	w.cpu.perOp(r, what, n)
	w.members.perOp(ctx, r, what, n)
}
