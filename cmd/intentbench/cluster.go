package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/intentd/intentd/internal/procstat"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Cluster mode: --server given more than once names the members of one cluster. The
// load is spread over them, as a load balancer in front of a cluster spreads it, and
// the CPU each member spends is read from its own /metrics, so that the figures of a
// cluster on other machines come from one command too. --cpu-pid names processes of
// this machine that serve the members (NATS servers run beside them), whose CPU is
// read from /proc and added to the servers' total.

// nodeFor is the member the i-th request of a kind goes to: requests in turn, one
// member after the other. shift moves a second kind of request (an intent's proposal)
// to the member after the one its first (its create) went to, so that neither lands
// where the other did more often than the cluster's own placement makes it.
func nodeFor(bases []string, i, shift int) string {
	return bases[(i+shift)%len(bases)]
}

// metricsCPU reads process_cpu_seconds_total, the process's user and system CPU as the
// Prometheus client's process collector counts it, from the /metrics of base.
func metricsCPU(ctx context.Context, c *http.Client, base string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return 0, fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	return parseProcessCPU(resp.Body)
}

// parseProcessCPU reads the sample of process_cpu_seconds_total from a Prometheus
// text exposition.
func parseProcessCPU(r io.Reader) (time.Duration, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	f := families["process_cpu_seconds_total"]
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, errors.New("metrics: no process_cpu_seconds_total (a build without the process collector, or not Linux)")
	}
	m := f.GetMetric()[0]
	v := m.GetCounter().GetValue() + m.GetUntyped().GetValue() + m.GetGauge().GetValue() // the one its TYPE says
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("metrics: process_cpu_seconds_total %v is not a CPU time", v)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// clusterCPU is the CPU of the servers a run names: each --server's from its /metrics,
// each --cpu-pid's from /proc.
type clusterCPU struct {
	members []time.Duration
	pids    []time.Duration
}

// readClusterCPU reads what b's servers and processes have spent so far.
func readClusterCPU(ctx context.Context, b *bench) (clusterCPU, error) {
	var c clusterCPU
	for _, base := range b.opts.Servers {
		d, err := metricsCPU(ctx, b.client, base)
		if err != nil {
			return c, err
		}
		c.members = append(c.members, d)
	}
	for _, pid := range b.opts.CPUPids {
		st, err := procstat.Read(pid)
		if err != nil {
			return c, fmt.Errorf("--cpu-pid %d: %w", pid, err)
		}
		c.pids = append(c.pids, st.CPU)
	}
	return c, nil
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// clusterMeter measures the CPU of a run's --server members and --cpu-pid processes
// over a span.
type clusterMeter struct {
	b     *bench
	start clusterCPU
	err   error
	wall  time.Time
}

// startClusterCPU starts a meter, or returns nil when the run names no server of its
// own (the tool started the server and reads its CPU from /proc).
func startClusterCPU(ctx context.Context, b *bench) *clusterMeter {
	if len(b.opts.Servers) == 0 {
		return nil
	}
	m := &clusterMeter{b: b, wall: time.Now()}
	m.start, m.err = readClusterCPU(ctx, b)
	return m
}

// perOp adds to r the CPU per operation of the members (each, and all of them) and of
// the --cpu-pid processes, for n operations since the meter started.
func (m *clusterMeter) perOp(ctx context.Context, r *Report, what string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	end, err := readClusterCPU(ctx, m.b)
	if err == nil {
		err = m.err
	}
	if err != nil {
		r.note("%s: the servers' CPU could not be read: %v", what, err)
		return
	}
	wall := time.Since(m.wall).Seconds()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	var members time.Duration
	for i := range end.members {
		d := end.members[i] - m.start.members[i]
		members += d
		if len(end.members) > 1 {
			r.figure(fmt.Sprintf("%s: member %d CPU per request", what, i), per(d), "µs")
		}
	}
	r.figure(what+": intentd CPU per request (all members)", per(members), "µs")
	r.figure(what+": intentd cores busy (all members)", members.Seconds()/wall, "")
	if len(end.pids) == 0 {
		return
	}
	others := sum(end.pids) - sum(m.start.pids)
	r.figure(what+": --cpu-pid processes' CPU per request", per(others), "µs")
	r.figure(what+": all servers' CPU per request", per(members+others), "µs")
}
