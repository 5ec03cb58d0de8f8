package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"time"
)

// soakBatch is how many intents are signed, then sent, at a time: signing all of a
// million first would hold half a gigabyte of bodies.
const soakBatch = 50_000

func runSoakOpen(ctx context.Context, b *bench, r *Report) error {
	dir, err := os.MkdirTemp(b.tmp, "data-")
	if err != nil {
		return err
	}
	srv, err := b.startIntentd(ctx, dir, "127.0.0.1:0")
	if err != nil {
		return err
	}
	r.figure("first start: exec to serving", srv.listened.Sub(srv.started).Seconds(), "s")
	policyID, err := putPolicy(ctx, b.client, srv.url)
	if err != nil {
		return err
	}
	total := b.opts.soakIntents()
	ids := make([]string, 0, total)
	var sendTime, signTime time.Duration
	b.logf("soak-open: filling %d open intents into %s", total, dir)
	for len(ids) < total {
		n := min(soakBatch, total-len(ids))
		t := time.Now()
		batch, err := signIntents(n, policyID, b.key)
		if err != nil {
			return err
		}
		signTime += time.Since(t)
		took, err := submitAll(ctx, b.client, []string{srv.url}, batch, b.opts.Concurrency)
		if err != nil {
			return err
		}
		sendTime += took
		for _, in := range batch {
			ids = append(ids, in.ID)
		}
		m, _ := srv.Memory()
		b.logf("%d open intents, %.0f/s in this batch, intentd resident %d MiB", len(ids), float64(n)/took.Seconds(), m.RSS>>20)
	}
	r.figure("open intents", float64(len(ids)), "")
	r.figure("fill rate (signing excluded)", float64(len(ids))/sendTime.Seconds(), "intents/s")
	r.figure("fill: time sending", sendTime.Seconds(), "s")
	r.figure("fill: time signing, between batches", signTime.Seconds(), "s")
	m, err := srv.Memory()
	if err != nil {
		return err
	}
	r.figure("resident memory right after the fill", mib(m.RSS), "MiB")
	if b.opts.Settle > 0 {
		b.logf("settling for %s", b.opts.Settle)
		select {
		case <-time.After(b.opts.Settle):
		case <-ctx.Done():
			return ctx.Err()
		}
		if m, err = srv.Memory(); err != nil {
			return err
		}
		r.target(fmt.Sprintf("resident memory after settling %s", b.opts.Settle), mib(m.RSS), "MiB", 1024, false)
	} else {
		r.target("resident memory (no settling)", mib(m.RSS), "MiB", 1024, false)
	}
	r.figure("peak resident memory (VmHWM)", mib(m.Peak), "MiB")
	r.figure("data folder", mib(dirSize(dir)), "MiB")

	u, err := url.Parse(srv.url)
	if err != nil {
		return err
	}
	b.client.CloseIdleConnections()
	b.logf("restarting intentd")
	stopTook, err := srv.Stop(5 * time.Minute)
	if err != nil {
		return err
	}
	r.figure("shutdown", stopTook.Seconds(), "s")
	again, err := b.startIntentd(ctx, dir, net.JoinHostPort(u.Hostname(), u.Port()))
	if err != nil {
		return err
	}
	probe := ids[rand.IntN(len(ids))]
	t := time.Now()
	body, err := get(ctx, b.client, again.url+"/intents/"+probe+"/status")
	if err != nil {
		return fmt.Errorf("first status after the restart: %w", err)
	}
	first := time.Since(t)
	served := time.Since(again.started)
	if string(body) != "{\"status\":\"open\"}\n" {
		r.note("the first status read %q, want open", body)
	}
	r.figure("restart: exec to listening", again.listened.Sub(again.started).Seconds(), "s")
	r.target("restart: exec to the first status served", served.Seconds(), "s", 5, false)
	r.figure("restart: first status latency", ms(first), "ms")
	if m, err := again.Memory(); err == nil {
		r.figure("resident memory after the restart", mib(m.RSS), "MiB")
	}

	samples := min(b.opts.StatusSamples, len(ids))
	if samples > 0 {
		order := rand.Perm(len(ids))[:samples]
		b.logf("reading %d statuses", samples)
		res := runLoad(ctx, loadSpec{Concurrency: b.opts.Concurrency, Duration: 24 * time.Hour}, samples, func(ctx context.Context, i int) error {
			_, err := get(ctx, b.client, again.url+"/intents/"+ids[order[i]]+"/status")
			return err
		})
		r.series(seriesOf("GET status after the restart", &res.Latency, res.Elapsed, res.Errors))
		if res.FirstErr != nil {
			r.note("status reads: first error: %v", res.FirstErr)
		}
		if m, err := again.Memory(); err == nil {
			r.figure("resident memory after the status reads", mib(m.RSS), "MiB")
		}
	}
	if total != 1_000_000 {
		r.note("the targets are set at 1,000,000 open intents; this run filled %d", total)
	}
	return nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
