package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/procstat"
)

// costSetup is one shape TestClusterCost measures: nodes intentd processes on the
// three NATS servers, as members of one cluster or, for one node, as a plain node of
// the NATS store; and in a cluster, idle more members that the load does not reach,
// whose CPU is what a member spends following the intents others serve.
type costSetup struct {
	nodes   int
	cluster bool
	idle    int
	// keepers is how many members keep the transparency log, the first ones; the others
	// serve it from them (--tlog=false). 0: every member keeps it.
	keepers int
}

func (c costSetup) String() string {
	var s string
	switch {
	case !c.cluster:
		return fmt.Sprintf("%d node, no cluster", c.nodes)
	case c.idle > 0:
		s = fmt.Sprintf("%d-node cluster and %d idle", c.nodes, c.idle)
	default:
		s = fmt.Sprintf("%d-node cluster", c.nodes)
	}
	if c.keepers > 0 {
		s += fmt.Sprintf(", the log kept by %d", c.keepers)
	}
	return s
}

// keepsLog reports whether member i of the setup keeps the transparency log.
func (c costSetup) keepsLog(i int) bool { return c.keepers == 0 || i < c.keepers }

// memberArgs are the flags of member i of the setup, on the NATS servers at urls,
// signing with keyFile, with the profiler at pprof unless it is empty.
func (c costSetup) memberArgs(t *testing.T, i int, urls []string, keyFile, pprof string) []string {
	args := []string{"--store", strings.Join(urls, ","), "--nats-replicas", "3", "--intent-ttl", "1h",
		"--max-proving", "128", "--signing-key", keyFile}
	if pprof != "" {
		args = append(args, "--pprof", pprof)
	}
	if c.cluster {
		args = append(args, "--cluster-bind", "127.0.0.1:"+freePort(t))
	}
	if !c.keepsLog(i) {
		args = append(args, "--tlog=false")
	}
	return args
}

// costRow is what one run of a setup measured.
type costRow struct {
	round             int // the round of make cluster-cost it was measured in, from 1
	setup             costSetup
	intentdCPU        float64 // µs per intent created and decided, all members
	allCPU            float64 // with the NATS servers
	p50, p99          float64 // ms, a proposal's 200 to its event on member 0's stream
	accepted, missing float64
	load              string
	// idleCPU is an idle member's CPU per intent created (the mean of the idle members),
	// over the whole run of intentbench, its set-up and drain included.
	idleCPU float64
}

// TestClusterCost measures what an intent costs, created and decided, on one node of
// the NATS store and on clusters of 2, 3 and 4 members, each on three NATS servers of
// its own (processes of this machine, R3), one setup after the other: `intentbench
// decide` with every member as a --server, the load spread over them, and the NATS
// servers as --cpu-pid. It prints a table of the CPU per intent (the members', and all
// servers'), and what each member added over the setup before it, and keeps it and
// every report in INTENTD_CLUSTER_COST_OUT. It takes minutes and loads the machine:
// `make cluster-cost` runs it; `make test` does not. It fails only if a proposal was
// lost or refused: the figures are for docs/cluster.md, not held to a target here.
func TestClusterCost(t *testing.T) {
	if os.Getenv("INTENTD_CLUSTER_COST") == "" {
		t.Skip("the cluster cost measurement takes minutes: run it with `make cluster-cost` (INTENTD_CLUSTER_COST=1)")
	}
	out := os.Getenv("INTENTD_CLUSTER_COST_OUT")
	if out == "" {
		out = t.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	rate := envOr("INTENTD_CLUSTER_COST_RATE", "300")
	duration := envOr("INTENTD_CLUSTER_COST_DURATION", "10s")
	rounds, err := strconv.Atoi(envOr("INTENTD_CLUSTER_COST_ROUNDS", "1"))
	if err != nil || rounds < 1 {
		t.Fatalf("INTENTD_CLUSTER_COST_ROUNDS %q: want a count", os.Getenv("INTENTD_CLUSTER_COST_ROUNDS"))
	}
	setups, err := parseSetups(envOr("INTENTD_CLUSTER_COST_SETUPS", "1,c1,c2,c3,c4"))
	if err != nil {
		t.Fatal(err)
	}
	// INTENTD_CLUSTER_COST_BIN measures another build of intentd (an earlier commit's,
	// to compare) with this tree's intentbench.
	bin := os.Getenv("INTENTD_CLUSTER_COST_BIN")
	if bin == "" {
		bin = buildIntentd(t)
	}
	bench := filepath.Join(t.TempDir(), "intentbench")
	if b, err := exec.Command("go", "build", "-o", bench, "../intentbench").CombinedOutput(); err != nil {
		t.Fatalf("go build intentbench: %v\n%s", err, b)
	}
	var rows []costRow
	for round := 1; round <= rounds; round++ {
		seen := map[costSetup]int{}
		for _, s := range setups {
			name := fmt.Sprintf("%s, round %d", s, round)
			seen[s]++
			var row costRow
			t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
				row = measureCost(t, bin, bench, s, rate, duration, filepath.Join(out, reportName(round, s, seen[s])))
			})
			if row.accepted == 0 {
				t.FailNow()
			}
			row.round = round
			rows = append(rows, row)
			t.Logf("%s: intentd %.0f µs an intent, all servers %.0f µs, p50/p99 %.1f/%.1f ms (load %s)", name, row.intentdCPU, row.allCPU, row.p50, row.p99, row.load)
		}
	}
	table := costTable(rows, rate, duration) + "\nBy setup, each run against its round's one node:\n\n" + costSummary(rows)
	t.Logf("CPU per intent created and decided:\n%s", table)
	if err := os.WriteFile(filepath.Join(out, "figures.md"), []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reportName is the file of a run's report: r1-n3+0-true.json for the first cluster of
// three of round 1, with -log1 when one member keeps the log, and -2 for the second
// run of a setup given twice in the list (COST_SETUPS=1,c3,1).
func reportName(round int, s costSetup, nth int) string {
	name := fmt.Sprintf("r%d-n%d+%d-%v", round, s.nodes, s.idle, s.cluster)
	if s.keepers > 0 {
		name += fmt.Sprintf("-log%d", s.keepers)
	}
	if nth > 1 {
		name += fmt.Sprintf("-%d", nth)
	}
	return name + ".json"
}

// saveProfile keeps what url answers in file.
func saveProfile(t *testing.T, url, file string) {
	resp, err := (&http.Client{Timeout: time.Minute}).Get(url)
	if err != nil {
		t.Errorf("profile: %v", err)
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, b)
	}
	if err == nil {
		err = os.WriteFile(file, b, 0o644)
	}
	if err != nil {
		t.Errorf("profile %s: %v", url, err)
	}
}

// parseSetups reads INTENTD_CLUSTER_COST_SETUPS: a list of "N" (N nodes of the NATS
// store, no cluster: 1 is the only such setup whose figures mean one node), "cN" (a
// cluster of N members), "cN+K" (a cluster of N members the load is spread over and
// K more that it does not reach), and either with "/L" after N: only the first L
// members keep the transparency log ("c3/1", "c3/1+1").
func parseSetups(list string) ([]costSetup, error) {
	var setups []costSetup
	bad := fmt.Errorf("INTENTD_CLUSTER_COST_SETUPS %q: want a list of 1, cN, cN+K, cN/L and cN/L+K, N and K counts of members, L of those keeping the log", list)
	for _, f := range strings.Split(list, ",") {
		s := costSetup{}
		f, s.cluster = strings.CutPrefix(strings.TrimSpace(f), "c")
		f, idle, plus := strings.Cut(f, "+")
		f, keepers, slash := strings.Cut(f, "/")
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || (!s.cluster && (n != 1 || plus || slash)) {
			return nil, bad
		}
		if plus {
			if s.idle, err = strconv.Atoi(idle); err != nil || s.idle < 1 {
				return nil, bad
			}
		}
		if slash {
			if s.keepers, err = strconv.Atoi(keepers); err != nil || s.keepers < 1 || s.keepers > n {
				return nil, bad
			}
		}
		s.nodes = n
		setups = append(setups, s)
	}
	return setups, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// measureCost starts setup s on three fresh NATS servers, runs intentbench decide
// against it and returns its figures; the report is kept in report.
func measureCost(t *testing.T, bin, bench string, s costSetup, rate, duration, report string) costRow {
	members := startNATSCluster(t, 3)
	var urls []string
	var pids []string
	for _, m := range members {
		urls = append(urls, m.url)
		pids = append(pids, "--cpu-pid", strconv.Itoa(m.cmd.Process.Pid))
	}
	keyFile, _ := signingKeyFile(t)
	profile := os.Getenv("INTENTD_CLUSTER_COST_PROFILE") != ""
	pprofs := make([]string, s.nodes+s.idle)
	nodes := make([]*crashServer, s.nodes+s.idle)
	for i := range nodes {
		if profile {
			pprofs[i] = "127.0.0.1:" + freePort(t)
		}
		nodes[i] = &crashServer{t: t, bin: bin, data: filepath.Join(t.TempDir(), "data"), args: s.memberArgs(t, i, urls, keyFile, pprofs[i])}
		nodes[i].start()
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.stop()
		}
	})
	if s.cluster {
		waitMembers(t, nodes, len(nodes))
	}
	args := []string{"decide", "--json", "--quiet", "--rate", rate, "--duration", duration, "--drain", "60s"}
	for _, n := range nodes[:s.nodes] {
		args = append(args, "--server", n.url)
	}
	idle := nodes[s.nodes:]
	idleBefore := make([]time.Duration, len(idle))
	for i, n := range idle {
		idleBefore[i] = idleCPU(t, n)
	}
	args = append(args, pids...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bench, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var profiled sync.WaitGroup
	if profile {
		// Each member's CPU profile over the run's first 30 s: the creates, then the
		// proposals.
		for i, addr := range pprofs {
			profiled.Add(1)
			go func() {
				defer profiled.Done()
				saveProfile(t, "http://"+addr+"/debug/pprof/profile?seconds=30", strings.TrimSuffix(report, ".json")+fmt.Sprintf("-node%d.cpu.pb.gz", i))
			}()
		}
	}
	err := cmd.Run()
	var idleSpent time.Duration
	for i, n := range idle {
		idleSpent += idleCPU(t, n) - idleBefore[i]
	}
	profiled.Wait()
	if err != nil {
		t.Fatalf("intentbench %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if err := os.WriteFile(report, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Figures []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"figures"`
		Series []struct {
			Name string  `json:"name"`
			P50  float64 `json:"p50_ms"`
			P99  float64 `json:"p99_ms"`
		} `json:"series"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("intentbench's report: %v\n%s", err, stdout.String())
	}
	fig := func(name string) float64 {
		for _, f := range r.Figures {
			if f.Name == name {
				return f.Value
			}
		}
		t.Fatalf("intentbench's report has no figure %q:\n%s", name, stdout.String())
		return 0
	}
	row := costRow{setup: s,
		intentdCPU: fig("per intent created and decided: intentd CPU per request (all members)"),
		allCPU:     fig("per intent created and decided: all servers' CPU per request"),
		accepted:   fig("proposals accepted"), missing: fig("events missing")}
	if len(idle) > 0 {
		row.idleCPU = float64(idleSpent.Microseconds()) / fig("set-up: intents submitted") / float64(len(idle))
	}
	for _, se := range r.Series {
		if se.Name == "proposal 200 -> event" {
			row.p50, row.p99 = se.P50, se.P99
		}
	}
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "machine load average") {
			row.load = n
		}
		if strings.HasPrefix(n, "proposals: first error") {
			t.Errorf("%s", n)
		}
	}
	if row.missing != 0 {
		t.Errorf("%v events missing", row.missing)
	}
	return row
}

// costTable is the figures as a Markdown table: each setup's CPU per intent, against
// the one node of its round, and each cluster's against the cluster one member smaller
// measured in the same round.
func costTable(rows []costRow, rate, duration string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "intentbench decide --rate %s --duration %s, the load spread over the members\n\n", rate, duration)
	b.WriteString("| setup | intentd CPU per intent | / one node | all servers' CPU per intent | the last member's cost per intent | an idle member's CPU per intent | p50 / p99 ms | proposals | load |\n|---|---|---|---|---|---|---|---|---|\n")
	one, byRound := costRounds(rows)
	for _, r := range rows {
		ratio, marginal := "", ""
		o := one[r.round]
		if o > 0 {
			ratio = fmt.Sprintf("%.2f ×", r.intentdCPU/o)
		}
		idle := ""
		if r.setup.idle > 0 {
			idle = fmt.Sprintf("%.0f µs", r.idleCPU)
		}
		if smaller, ok := smallerCluster(byRound[r.round], r.setup); ok && o > 0 {
			marginal = fmt.Sprintf("%+.0f µs (%+.0f %% of one node)", r.intentdCPU-smaller.intentdCPU, 100*(r.intentdCPU-smaller.intentdCPU)/o)
		}
		fmt.Fprintf(&b, "| %s | %.0f µs | %s | %.0f µs | %s | %s | %.1f / %.1f | %.0f | %s |\n", r.setup, r.intentdCPU, ratio, r.allCPU, marginal, idle, r.p50, r.p99, r.accepted, strings.TrimPrefix(r.load, "machine load average (1 min) "))
	}
	return b.String()
}

// TestParseCostSetups reads the setups make cluster-cost is given, and refuses what
// names no setup.
func TestParseCostSetups(t *testing.T) {
	for _, c := range []struct {
		list string
		want []costSetup // nil: refused
	}{
		{"1,c1,c3", []costSetup{{nodes: 1}, {nodes: 1, cluster: true}, {nodes: 3, cluster: true}}},
		{"c3+1, c2+2", []costSetup{{nodes: 3, cluster: true, idle: 1}, {nodes: 2, cluster: true, idle: 2}}},
		{"2", nil},
		{"1+1", nil},
		{"c0", nil},
		{"c3+", nil},
		{"c3+0", nil},
		{"c3+x", nil},
		{"c3/1, c3/1+1", []costSetup{{nodes: 3, cluster: true, keepers: 1}, {nodes: 3, cluster: true, idle: 1, keepers: 1}}},
		{"c3/0", nil},
		{"c3/4", nil},
		{"1/1", nil},
		{"c3/", nil},
		{"", nil},
	} {
		got, err := parseSetups(c.list)
		if c.want == nil {
			if err == nil {
				t.Errorf("%q: read as %v, want refused", c.list, got)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: %v, %v; want %v", c.list, got, err, c.want)
		}
	}
}

// idleCPU is the CPU time, user and system, member n has spent so far.
func idleCPU(t *testing.T, n *crashServer) time.Duration {
	t.Helper()
	st, err := procstat.Read(n.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return st.CPU
}
