package main_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The size of the memory test's load and its quiet time after (docs/cluster.md,
// "Memory after a load"); make cluster-memory runs the defaults.
const (
	memoryIntents = 10_000
	memoryIdle    = 30 * time.Second
	// memoryIdleTail is the end of the quiet over which the test reads what an idle
	// member allocates.
	memoryIdleTail = 10 * time.Second
	// perLoad is how many moments the test reads each load: right after it, memoryIdleTail
	// before the end of its quiet, and at the end.
	perLoad = 3
	// memoryRounds are the loads, each followed by memoryIdle: what a first load
	// leaves for good (tables grown once) shows apart from what each load would add.
	memoryRounds = 3
	// memoryWorkers are the clients that create and decide intents at once.
	memoryWorkers = 24
	// memoryGrowth is how much more than before a load a member that has carried one
	// already may hold resident once it has been quiet for memoryIdle: 20 %.
	memoryGrowth = 1.20
)

// TestClusterMemoryAfterLoad sends memoryIntents intents through a three-node cluster
// on three NATS servers, each created through one node and decided through another,
// then leaves the cluster quiet for memoryIdle, memoryRounds times, and checks that
// each member has let go of what each load made it hold: no grain active, and its
// resident memory after each later load within 20 % of what it was after the one
// before. A member's first load grows tables that no later load grows again
// (protoactor's process registries, docs/cluster.md, "Memory after a load"), so its
// resident memory after it is logged against the fresh start, not held to it. It logs
// each member's figures, and keeps each member's heap profiles (taken after a
// collection) and the top of `go tool pprof -top -inuse_space` of them in
// INTENTD_CLUSTER_MEMORY_OUT (a folder of its own otherwise, named in the log). It takes
// minutes and loads the machine: `make cluster-memory` runs it (MEMORY_BIN=PATH, another
// build); `make test` does not.
func TestClusterMemoryAfterLoad(t *testing.T) {
	// Not parallel: heavy, and its figures are the machine's memory.
	if os.Getenv("INTENTD_CLUSTER_MEMORY") == "" {
		t.Skip("the cluster memory measurement takes minutes: run it with `make cluster-memory` (INTENTD_CLUSTER_MEMORY=1)")
	}
	out := os.Getenv("INTENTD_CLUSTER_MEMORY_OUT")
	if out == "" {
		var err error
		if out, err = os.MkdirTemp("", "intentd-cluster-memory-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("profiles and figures in %s", out)
	pprofs := make([]string, 3)
	for i := range pprofs {
		pprofs[i] = "127.0.0.1:" + freePort(t)
	}
	// INTENTD_CLUSTER_MEMORY_BIN measures another build of intentd: the container
	// image's, built without cgo, whose Pebble keeps its memtables and cache in the Go
	// heap rather than in C memory, or an earlier commit's.
	bin := os.Getenv("INTENTD_CLUSTER_MEMORY_BIN")
	if bin == "" {
		bin = buildIntentd(t)
	}
	r := startRigArgs(t, bin, func(i int) []string { return []string{"--pprof", pprofs[i]} })

	// The members settle first: their first renewals, the stream's consumers, a first
	// collection.
	time.Sleep(5 * time.Second)
	moments := []string{"before"}
	figures := [][]memoryFigures{readMembers(t, r, pprofs, out, "before")}
	nats := [][]int64{natsRSS(r)}
	for round := 1; round <= memoryRounds; round++ {
		start := time.Now()
		decided := loadDecided(t, r, memoryIntents)
		t.Logf("round %d: %d intents created and decided in %v", round, decided, time.Since(start).Round(time.Millisecond))
		moments = append(moments, fmt.Sprintf("right after load %d", round))
		figures = append(figures, readMembers(t, r, nil, out, ""))
		nats = append(nats, natsRSS(r))
		// A moment before the end of the quiet, so that the table shows what an idle
		// member allocates and how often it collects.
		time.Sleep(memoryIdle - memoryIdleTail)
		moments = append(moments, fmt.Sprintf("%v after load %d", memoryIdle-memoryIdleTail, round))
		figures = append(figures, readMembers(t, r, nil, out, ""))
		nats = append(nats, natsRSS(r))
		time.Sleep(memoryIdleTail)
		name := fmt.Sprintf("after%d", round)
		moments = append(moments, fmt.Sprintf("%v after load %d", memoryIdle, round))
		figures = append(figures, readMembers(t, r, pprofs, out, name))
		nats = append(nats, natsRSS(r))
		for i := range r.nodes {
			top := pprofTop(t, filepath.Join(out, fmt.Sprintf("node%d-%s.pb.gz", i, name)))
			keep(t, filepath.Join(out, fmt.Sprintf("node%d-%s-top.txt", i, name)), []byte(top))
			t.Logf("member %d, heap in use %v after load %d (go tool pprof -top -inuse_space):\n%s", i, memoryIdle, round, firstLines(top, 20))
		}
	}

	report := memoryReport(moments, figures, nats)
	t.Logf("memory of each member before the loads and after each:\n%s", report)
	keep(t, filepath.Join(out, "figures.md"), []byte(report))
	// figures[0] is before the loads; figures[perLoad*k] memoryIdle after load k.
	for k := perLoad; k < len(figures); k += perLoad {
		for i, a := range figures[k] {
			if a.grains > 0 {
				t.Errorf("member %d holds %.0f grains %s", i, a.grains, moments[k])
			}
			b := figures[k-perLoad][i]
			if k == perLoad {
				t.Logf("member %d holds %s resident %s, %.2f times the %s it held fresh", i, mib(a.rss), moments[k], float64(a.rss)/float64(b.rss), mib(b.rss))
				continue
			}
			if float64(a.rss) > memoryGrowth*float64(b.rss) {
				t.Errorf("member %d holds %s resident %s, against %s %s: more than %.0f %% more",
					i, mib(a.rss), moments[k], mib(b.rss), moments[k-perLoad], (memoryGrowth-1)*100)
			}
		}
	}
}

// readMembers reads every member's figures; with pprofs, the members' profilers, it saves
// their heap profiles as node<i>-<name>.pb.gz in out.
func readMembers(t *testing.T, r *rig, pprofs []string, out, name string) []memoryFigures {
	t.Helper()
	figs := make([]memoryFigures, len(r.nodes))
	for i, n := range r.nodes {
		if pprofs == nil {
			figs[i] = readMemory(t, n, "", "")
			continue
		}
		figs[i] = readMemory(t, n, pprofs[i], filepath.Join(out, fmt.Sprintf("node%d-%s.pb.gz", i, name)))
	}
	return figs
}

// memoryReport is a table of the members' figures at each moment, and one of the NATS
// servers' resident memory.
func memoryReport(moments []string, figures [][]memoryFigures, nats [][]int64) string {
	var b strings.Builder
	b.WriteString("| member | when | RSS | of it anonymous | / before | heap in use | heap in use after a collection | of it objects | heap free, not returned | goroutine stacks | the runtime's own | anonymous beyond the runtime's figures (C memory, less what the runtime counts unused) | allocated since the moment before | collections since | grains | goroutines |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i := range figures[0] {
		for k, moment := range moments {
			f := figures[k][i]
			live, objects := "-", "-"
			if f.liveHeap > 0 {
				live, objects = mib(f.liveHeap), mib(f.liveObjects)
			}
			rest := float64(f.rssAnon) - f.heapInuse - (f.heapIdle - f.heapReleased) - f.stacks - f.runtimeSys
			allocated, gcs := "-", "-"
			if k > 0 {
				allocated = mib(f.allocated - figures[k-1][i].allocated)
				gcs = fmt.Sprintf("%.0f", f.collections-figures[k-1][i].collections)
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f |\n", i, moment,
				mib(f.rss), mib(f.rssAnon), float64(f.rss)/float64(figures[0][i].rss), mib(f.heapInuse), live, objects,
				mib(f.heapIdle-f.heapReleased), mib(f.stacks), mib(f.runtimeSys), mib(rest), allocated, gcs, f.grains, f.goroutines)
		}
	}
	b.WriteString("\n| NATS server | " + strings.Join(moments, " | ") + " |\n|---|" + strings.Repeat("---|", len(moments)) + "\n")
	for i := range nats[0] {
		fmt.Fprintf(&b, "| %d |", i)
		for k := range moments {
			fmt.Fprintf(&b, " %s |", mib(nats[k][i]))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// memoryFigures are what one member holds at a moment.
type memoryFigures struct {
	rss       int64   // VmRSS, bytes
	rssAnon   int64   // RssAnon: the part not mapped from files (the heap, stacks, C allocations)
	heapInuse float64 // go_memstats_heap_inuse_bytes, before any collection of the test's
	liveHeap  float64 // heap in use after the collection the heap profile forces; 0 without a profile
	// liveObjects is the heap's objects then: what of liveHeap is not free slots of
	// spans in use.
	liveObjects float64
	grains      float64 // intentd_cluster_grain_activations
	goroutines  float64 // go_goroutines
	// heapIdle and heapReleased are go_memstats_heap_idle_bytes and
	// go_memstats_heap_released_bytes: their difference is free heap the runtime
	// still holds resident.
	heapIdle, heapReleased float64
	stacks                 float64 // go_memstats_stack_inuse_bytes
	// runtimeSys is what the Go runtime holds for itself outside the heap and the
	// stacks: its spans' records, the collector's metadata, the profiler's buckets.
	runtimeSys float64
	// allocated is go_memstats_alloc_bytes_total and collections the count of
	// go_gc_duration_seconds: what the member allocated and how often it collected since
	// it started.
	allocated, collections float64
}

// readMemory reads a member's figures, and when pprof is its profiler's address, saves
// its heap profile (after a collection, ?gc=1) to file and reads its live heap then.
func readMemory(t *testing.T, n *crashServer, pprof, file string) memoryFigures {
	t.Helper()
	// One scrape, so that the runtime's figures are of one moment.
	m := scrape(t, n.url)
	f := memoryFigures{
		heapInuse:    m["go_memstats_heap_inuse_bytes"],
		heapIdle:     m["go_memstats_heap_idle_bytes"],
		heapReleased: m["go_memstats_heap_released_bytes"],
		stacks:       m["go_memstats_stack_inuse_bytes"],
		runtimeSys: m["go_memstats_mspan_sys_bytes"] + m["go_memstats_mcache_sys_bytes"] + m["go_memstats_gc_sys_bytes"] +
			m["go_memstats_other_sys_bytes"] + m["go_memstats_buck_hash_sys_bytes"],
		allocated:   m["go_memstats_alloc_bytes_total"],
		collections: m["go_gc_duration_seconds_count"],
		grains:      m["intentd_cluster_grain_activations"],
		goroutines:  m["go_goroutines"],
	}
	f.rss, f.rssAnon = procRSS(t, n.cmd.Process.Pid)
	if pprof == "" {
		return f
	}
	resp, err := client.Get("http://" + pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("heap profile of %s: %d %v", pprof, resp.StatusCode, err)
	}
	keep(t, file, body)
	after := scrape(t, n.url)
	f.liveHeap, f.liveObjects = after["go_memstats_heap_inuse_bytes"], after["go_memstats_heap_alloc_bytes"]
	return f
}

// scrape reads a member's /metrics once: each sample without labels, by name.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// keep writes one of the measurement's files; a file it cannot write fails the test.
func keep(t *testing.T, file string, data []byte) {
	t.Helper()
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Error(err)
	}
}

// procRSS reads a process's resident memory from /proc, all of it and its anonymous
// part, in bytes.
func procRSS(t *testing.T, pid int) (rss, anon int64) {
	t.Helper()
	file, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("the resident memory of a process is read from /proc, which this system lacks: %v", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	kb := func(line string) int64 {
		_, v, _ := strings.Cut(line, ":")
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/status: %q", pid, line)
		}
		return n << 10
	}
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, "VmRSS:"):
			rss = kb(line)
		case strings.HasPrefix(line, "RssAnon:"):
			anon = kb(line)
		}
	}
	if rss == 0 {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	return rss, anon
}

// natsRSS reads the resident memory of each NATS server of the rig.
func natsRSS(r *rig) []int64 {
	out := make([]int64, len(r.members))
	for i, m := range r.members {
		out[i], _ = procRSS(r.t, m.cmd.Process.Pid)
	}
	return out
}

// loadDecided creates n intents, each through one node and proposed to through the
// next, from memoryWorkers clients at once, and waits until the members have decided
// every one. It returns how many were decided. A 503 (a full proving queue) is tried
// again shortly.
func loadDecided(t *testing.T, r *rig, n int) int {
	t.Helper()
	decidedBefore := 0
	for _, node := range r.nodes {
		decidedBefore += int(decisions(t, node.url))
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range memoryWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || t.Failed() {
					return
				}
				id, body := r.intent()
				r.submit(t, r.nodes[i%3], id, body)
				url := r.nodes[(i+1)%3].url + "/intents/" + id + "/proposal"
				sol := fmt.Appendf(nil, `{"solution":%q}`, crashSolutions[i%len(crashSolutions)])
				for try := 0; ; try++ {
					code, why := call(url, sol)
					if code == http.StatusOK {
						break
					}
					if code != http.StatusServiceUnavailable && code != 0 || try == 300 {
						t.Errorf("proposal of %s: %d %s", id, code, why)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		decided := -decidedBefore
		for _, node := range r.nodes {
			decided += int(decisions(t, node.url))
		}
		if decided >= n || time.Now().After(deadline) {
			if decided < n {
				t.Fatalf("%d of %d intents decided two minutes after the last proposal", decided, n)
			}
			return decided
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// decisions sums a member's intentd_intent_transitions_total of the terminal states it
// wrote: the intents it decided.
func decisions(t *testing.T, url string) float64 {
	t.Helper()
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sum := 0.0
	for line := range strings.Lines(string(body)) {
		if !strings.HasPrefix(line, "intentd_intent_transitions_total{") ||
			!strings.Contains(line, `state="success"`) && !strings.Contains(line, `state="failure"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// pprofTop is `go tool pprof -top -inuse_space` of a heap profile, or why there is none.
func pprofTop(t *testing.T, file string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		return "(go is not on the PATH: no pprof summary)"
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-inuse_space", file).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(go tool pprof: %v)\n%s", err, out)
	}
	return string(out)
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "")
}

// mib writes a size in bytes in MiB, with one decimal.
func mib[N int64 | float64](n N) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
