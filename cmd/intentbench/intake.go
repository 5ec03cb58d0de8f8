package main

import (
	"context"
	"fmt"
	"math"
	"time"
)

// intakeRateGuess sizes the pool of pre-signed intents for a closed-loop run: enough
// for this many a second. A run that uses them all up stops early and says so.
const intakeRateGuess = 15000

// defaultWarmup is how long intake and baseline load a server before they measure it.
// A fresh intentd spends its first 20 s or so of intake growing its memory: Pebble's
// memtables double from 256 KiB to their full size, each a fresh mapping, and the heap
// and the block cache fill. Every fresh page costs a fault (perf stat counted 15,000 to
// 20,000 a second then, under 100 a second after), and a 2 s warm-up measured mostly
// that start, not the server that runs for days. The bare server has no such start;
// it is warmed up as long, all the same.
const defaultWarmup = 30 * time.Second

// intakePool is how many intents a load of spec needs.
func intakePool(spec loadSpec, given int) int {
	if given > 0 {
		return given
	}
	rate := float64(intakeRateGuess)
	if spec.Rate > 0 {
		rate = spec.Rate
	}
	return int(math.Ceil(rate*spec.Duration.Seconds())) + 1
}

// loadIntake runs the warm-up then the measured load of POST /intents on bases, one
// after the other, with the given pre-signed intents (warm first, then the measured
// ones).
func loadIntake(ctx context.Context, b *bench, r *Report, what string, srv *child, bases []string, warm, measured []signedIntent) *loadResult {
	spec := loadSpec{Concurrency: b.opts.Concurrency, Rate: b.opts.Rate, Duration: b.opts.Duration}
	send := func(set []signedIntent) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			_, err := post(ctx, b.client, nodeFor(bases, i, 0)+"/intents", "application/json", set[i].Body)
			return err
		}
	}
	if len(warm) > 0 {
		w := spec
		w.Duration = b.opts.Warmup
		runLoad(ctx, w, len(warm), send(warm))
	}
	cpu := startCPU(srv)
	var members *clusterMeter
	if srv == nil { // the load goes to --server
		members = startClusterCPU(ctx, b)
	}
	res := runLoad(ctx, spec, len(measured), send(measured))
	cpu.perOp(r, what, res.OK.Load()+res.ErrorCount())
	members.perOp(ctx, r, what, res.OK.Load()+res.ErrorCount())
	return res
}

// prepareIntake stores the policy on each of bases and signs the warm-up and measured
// intents. A cluster's members share their policies, so one would do there; servers
// of their own each need it, and storing a policy again is a no-op.
func prepareIntake(ctx context.Context, b *bench, bases []string) (warm, measured []signedIntent, err error) {
	policyID, err := putPolicies(ctx, b.client, bases)
	if err != nil {
		return nil, nil, err
	}
	spec := loadSpec{Concurrency: b.opts.Concurrency, Rate: b.opts.Rate, Duration: b.opts.Duration}
	n := intakePool(spec, b.opts.Intents)
	nw := 0
	if b.opts.Warmup > 0 {
		w := spec
		w.Duration = b.opts.Warmup
		nw = intakePool(w, 0)
	}
	b.logf("signing %d intents (%d for the warm-up)", n+nw, nw)
	start := time.Now()
	all, err := signIntents(n+nw, policyID, b.key)
	if err != nil {
		return nil, nil, err
	}
	b.logf("signed in %s", time.Since(start).Round(time.Millisecond))
	return all[:nw], all[nw:], nil
}

func intakeSeries(name string, res *loadResult) Series {
	return seriesOf(name, &res.Latency, res.Elapsed, res.Errors)
}

func noteIntake(r *Report, name string, res *loadResult) {
	if res.Exhausted {
		r.note("%s: the %d pre-signed intents ran out after %s; raise --intents for a full run", name, res.OK.Load()+res.ErrorCount(), res.Elapsed.Round(time.Millisecond))
	}
	if res.FirstErr != nil {
		r.note("%s: first error: %v", name, res.FirstErr)
	}
}

func runIntake(ctx context.Context, b *bench, r *Report) error {
	bases, srv, err := b.targets(ctx)
	if err != nil {
		return err
	}
	warm, measured, err := prepareIntake(ctx, b, bases)
	if err != nil {
		return err
	}
	b.logf("intake: %s of load on %d server(s)", b.opts.Duration, len(bases))
	res := loadIntake(ctx, b, r, "intake", srv, bases, warm, measured)
	if err := ctx.Err(); err != nil {
		return err
	}
	s := intakeSeries("POST /intents", res)
	r.series(s)
	r.target("intake throughput", s.PerSecond, "intents/s", 8000, true)
	noteIntake(r, "intake", res)
	if srv != nil {
		if m, err := srv.Memory(); err == nil {
			r.figure("intentd resident memory after the run", float64(m.RSS>>20), "MiB")
		}
	}
	return nil
}

// runBaseline runs intake on the target (intentd, or with b.floor the intake floor),
// then the same load on the bare server, and compares the two.
func runBaseline(ctx context.Context, b *bench, r *Report) error {
	what := "intake"
	if b.floor {
		what = "floor"
	}
	base, srv, err := b.target(ctx)
	if err != nil {
		return err
	}
	warm, measured, err := prepareIntake(ctx, b, []string{base})
	if err != nil {
		return err
	}
	b.logf("%s: %s of load", what, b.opts.Duration)
	in := loadIntake(ctx, b, r, what, srv, []string{base}, warm, measured)
	if err := ctx.Err(); err != nil {
		return err
	}
	if srv != nil {
		// Its background work (compactions, passivation) would otherwise take CPU
		// from the baseline run.
		if _, err := srv.Stop(time.Minute); err != nil {
			return err
		}
	}
	bare, err := b.startBaseline(ctx, "intake")
	if err != nil {
		return err
	}
	if _, err := putPolicy(ctx, b.client, bare.url); err != nil {
		return fmt.Errorf("baseline server: %w", err)
	}
	b.client.CloseIdleConnections()
	b.logf("baseline: %s of the same load on %s", b.opts.Duration, bare.url)
	// The same bodies again: the bare server keeps nothing, so the ids are new to it.
	base2 := loadIntake(ctx, b, r, "baseline", bare, []string{bare.url}, warm, measured)
	if err := ctx.Err(); err != nil {
		return err
	}
	si := intakeSeries(what+": POST /intents", in)
	sb := intakeSeries("baseline: POST /intents", base2)
	r.series(si)
	r.series(sb)
	ratio := 0.0
	if sb.PerSecond > 0 {
		ratio = si.PerSecond / sb.PerSecond
	}
	if b.floor {
		r.figure("floor/baseline throughput ratio", ratio, "")
		r.figure("floor throughput", si.PerSecond, "intents/s")
	} else {
		r.target("intake/baseline throughput ratio", ratio, "", 0.6, true)
		r.target("intake throughput", si.PerSecond, "intents/s", 8000, true)
	}
	r.figure("baseline throughput", sb.PerSecond, "intents/s")
	noteIntake(r, what, in)
	noteIntake(r, "baseline", base2)
	if b.floor {
		r.note("floor: the bare server, and each intent written synced to the service's store (persistence, Pebble) as the service must keep it: the canonical intent and its authorship, with the store's index keys; no actors, no snapshot")
	}
	r.note("baseline: the http package's server and router, DecodeAuthoredIntent, DecodeIntent, JCS once, the attrs check and Ed25519 verify of the canonical bytes, in a process of its own; no actors, no store")
	return nil
}
