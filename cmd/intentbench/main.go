package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if kind := os.Getenv(baselineEnv); kind != "" {
		if err := serveBaseline(os.Stderr, kind); err != nil {
			fmt.Fprintln(os.Stderr, "intentbench baseline server:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "intentbench:", err)
		os.Exit(1)
	}
}

// scenarios are the loads the tool runs, by name.
var scenarios = map[string]struct {
	about string
	run   func(ctx context.Context, b *bench, r *Report) error
}{
	"intake":   {"POST /intents, Ed25519-signed, at a concurrency or a rate", runIntake},
	"baseline": {"intake, then the same load on a bare server (no actors, no store), and their ratio", runBaseline},
	"decide":   {"intents, then proposals at a rate; latency from a proposal's 200 to its event on the stream", runDecide},
	"decide-floor": {"decide on a bare server that does only the proposal's work: two synced writes, extraction, evaluation, the receipt, the stream", func(ctx context.Context, b *bench, r *Report) error {
		b.floor = true
		return runDecide(ctx, b, r)
	}},
	"intake-floor": {"baseline with the intake floor in intentd's place: the bare server that also writes each intent to the store, synced", func(ctx context.Context, b *bench, r *Report) error {
		b.floor = true
		return runBaseline(ctx, b, r)
	}},
	"fanout":    {"N stream subscribers while events are produced at a rate; lost, duplicated, delivery lag", runFanout},
	"soak-open": {"fill the store with N open intents; resident memory, restart time, status latency after restart", runSoakOpen},
}

// options are the flags, shared by every scenario; a zero or negative value where a
// default depends on the scenario means "the scenario's default".
type options struct {
	// Servers are the --server URLs: several are one cluster's members, over which
	// intake and decide spread their load (cluster.go).
	Servers stringList
	// CPUPids are processes of this machine whose CPU counts as the servers' (NATS
	// servers beside the members).
	CPUPids       pidList
	Intentd       string
	BuildRace     bool
	ServerFlags   stringList
	Concurrency   int
	Rate          float64
	Duration      time.Duration
	Warmup        time.Duration
	Intents       int
	Subscribers   int
	Drain         time.Duration
	Settle        time.Duration
	StatusSamples int
	IntentTTL     time.Duration
	JSON          bool
	Keep          bool
	Quiet         bool
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// pidList is a repeatable flag of process ids.
type pidList []int

func (l *pidList) String() string {
	s := make([]string, len(*l))
	for i, p := range *l {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}

func (l *pidList) Set(v string) error {
	p, err := strconv.Atoi(v)
	if err != nil || p <= 0 {
		return fmt.Errorf("%q is not a process id", v)
	}
	*l = append(*l, p)
	return nil
}

func parseArgs(args []string, stderr io.Writer) (string, options, error) {
	var o options
	fs := flag.NewFlagSet("intentbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&o.Servers, "server", "base URL of a running intentd; repeated: the members of one cluster, the load spread over them (intake, decide); none: start one in a temporary folder")
	fs.Var(&o.CPUPids, "cpu-pid", "with --server: a process of this machine whose CPU counts as the servers' too, e.g. a NATS server (repeatable)")
	fs.StringVar(&o.Intentd, "intentd", "", "intentd binary to start; empty: go build the module's cmd/intentd")
	fs.BoolVar(&o.BuildRace, "build-race", false, "build intentd with the race detector (the tests do)")
	fs.Var(&o.ServerFlags, "server-flag", "a flag for the intentd the tool starts, e.g. --server-flag=--max-proving=128 (repeatable)")
	fs.IntVar(&o.Concurrency, "concurrency", 64, "requests in flight (closed loop), or at most in flight (with --rate)")
	fs.Float64Var(&o.Rate, "rate", -1, "requests per second (open loop); intake: 0 = closed loop (default), decide and fanout: 1000")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "how long the measured load runs")
	fs.DurationVar(&o.Warmup, "warmup", defaultWarmup, "intake and baseline: load run first and not counted, long enough that the server has grown its memory")
	fs.IntVar(&o.Intents, "intents", 0, "intake: pre-signed intents (default: enough for 15,000/s); soak-open: open intents to fill (default 1,000,000)")
	fs.IntVar(&o.Subscribers, "subscribers", 1000, "fanout: stream subscribers")
	fs.DurationVar(&o.Drain, "drain", 30*time.Second, "decide and fanout: how long to wait for the last events after the load")
	fs.DurationVar(&o.Settle, "settle", 75*time.Second, "soak-open: wait after the fill before measuring memory again (intent actors passivate after 10 s idle)")
	fs.IntVar(&o.StatusSamples, "status-samples", 10000, "soak-open: statuses read after the restart")
	fs.DurationVar(&o.IntentTTL, "intent-ttl", 30*24*time.Hour, "--intent-ttl of the intentd the tool starts, long so that nothing expires during a run")
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary folder (data folders, binaries)")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress lines on standard error")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: intentbench SCENARIO [flags]\n\nScenarios:\n")
		for _, name := range sortedKeys(scenarios) {
			fmt.Fprintf(fs.Output(), "  %-10s %s\n", name, scenarios[name].about)
		}
		fmt.Fprintf(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fs.Usage()
			return "", o, flag.ErrHelp
		}
		fs.Usage()
		return "", o, errors.New("want a scenario first")
	}
	name := args[0]
	if _, ok := scenarios[name]; !ok {
		return "", o, fmt.Errorf("unknown scenario %q (want one of %s)", name, strings.Join(sortedKeys(scenarios), ", "))
	}
	if err := fs.Parse(args[1:]); err != nil {
		return "", o, err
	}
	if fs.NArg() > 0 {
		return "", o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case o.Concurrency < 1:
		return "", o, fmt.Errorf("--concurrency %d: want at least 1", o.Concurrency)
	case o.Duration <= 0:
		return "", o, fmt.Errorf("--duration %s: want a positive duration", o.Duration)
	case o.Warmup < 0 || o.Drain < 0 || o.Settle < 0:
		return "", o, errors.New("--warmup, --drain and --settle: want 0 or more")
	case o.Subscribers < 1:
		return "", o, fmt.Errorf("--subscribers %d: want at least 1", o.Subscribers)
	case o.Intents < 0 || o.StatusSamples < 0:
		return "", o, errors.New("--intents and --status-samples: want 0 or more")
	case o.IntentTTL <= 0:
		return "", o, fmt.Errorf("--intent-ttl %s: want a positive duration", o.IntentTTL)
	}
	if o.Rate < 0 {
		o.Rate = 0
		if name == "decide" || name == "decide-floor" || name == "fanout" {
			o.Rate = 1000
		}
	}
	if (name == "decide" || name == "decide-floor" || name == "fanout") && o.Rate == 0 {
		return "", o, fmt.Errorf("--rate: %s needs a rate above 0", name)
	}
	if name == "soak-open" && len(o.Servers) > 0 {
		return "", o, errors.New("soak-open restarts the server, so it starts its own: drop --server")
	}
	if len(o.Servers) > 1 && name != "intake" && name != "decide" {
		return "", o, fmt.Errorf("%s runs against one server: give --server once (intake and decide take a cluster's members)", name)
	}
	if len(o.CPUPids) > 0 && len(o.Servers) == 0 {
		return "", o, errors.New("--cpu-pid counts processes beside servers named by --server: give --server")
	}
	for i, s := range o.Servers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", o, fmt.Errorf("--server %q: want an http or https URL", s)
		}
		o.Servers[i] = strings.TrimSuffix(s, "/")
	}
	return name, o, nil
}

// run parses the arguments, runs one scenario and writes its report to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name, o, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	b := &bench{opts: o, stderr: stderr, client: newClient(o.Concurrency + 8)}
	defer b.close()
	if b.files, err = raiseFileLimit(); err != nil {
		return fmt.Errorf("raise the open-file limit: %w", err)
	}
	if b.tmp, err = os.MkdirTemp("", "intentbench-"); err != nil {
		return err
	}
	if b.key, err = newKey(); err != nil {
		return err
	}
	r := &Report{Scenario: name, Machine: thisMachine(), Settings: o.settings(name)}
	before := loadAverage()
	busy, measured := busyCores(ctx, busySample, r.Machine.Cores)
	if err := scenarios[name].run(ctx, b, r); err != nil {
		return err
	}
	// The load average still counts, for a minute, the processes of a run that ended
	// (the servers of the run before, in a series): what says whether other work was
	// running is the cores' time over the moment before this run.
	busyNote := "; the cores' time before the run could not be read"
	if measured {
		busyNote = fmt.Sprintf("; cores busy over the %v before the run %.2f of %d", busySample, busy, r.Machine.Cores)
		if busy >= otherWork {
			busyNote += ": other work was using the cores when the run started"
		}
	}
	r.note("machine load average (1 min) before the run %s, after %s (which counts the run's own processes)%s", before, loadAverage(), busyNote)
	return r.Write(stdout, o.JSON)
}

func newKey() (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(nil)
	return key, err
}

// settings are the options a scenario used, for the report.
func (o options) settings(name string) map[string]string {
	s := map[string]string{"concurrency": strconv.Itoa(o.Concurrency), "duration": o.Duration.String()}
	if len(o.Servers) > 0 {
		s["server"] = strings.Join(o.Servers, " ")
		if len(o.CPUPids) > 0 {
			s["cpu_pids"] = o.CPUPids.String()
		}
	} else {
		s["server"] = "started by the tool"
		if len(o.ServerFlags) > 0 {
			s["server_flags"] = strings.Join(o.ServerFlags, " ")
		}
	}
	if o.Rate > 0 {
		s["rate"] = trimFloat(o.Rate)
	}
	switch name {
	case "intake", "baseline", "intake-floor":
		s["warmup"] = o.Warmup.String()
	case "decide", "decide-floor":
		s["drain"] = o.Drain.String()
	case "fanout":
		s["subscribers"] = strconv.Itoa(o.Subscribers)
		s["drain"] = o.Drain.String()
	case "soak-open":
		delete(s, "duration")
		s["intents"] = strconv.Itoa(o.soakIntents())
		s["settle"] = o.Settle.String()
		s["status_samples"] = strconv.Itoa(o.StatusSamples)
		s["intent_ttl"] = o.IntentTTL.String()
	}
	return s
}

func (o options) soakIntents() int {
	if o.Intents > 0 {
		return o.Intents
	}
	return 1_000_000
}

// bench is one run's shared state: the client, the servers it started, its folder.
type bench struct {
	opts    options
	stderr  io.Writer
	client  *http.Client
	tmp     string
	key     ed25519.PrivateKey
	files   uint64
	intentd string   // the binary, once built
	servers []*child // started by the tool, stopped by close
	// subscribers is the stream clients the run opens, for --max-subscribers.
	subscribers int
	// floor makes the run's server the floor (floor.go) instead of intentd.
	floor bool
}

// hasFlag reports whether the binary's -h lists the flag, so that a flag newer than
// the binary is not passed to it.
func hasFlag(bin, name string) bool {
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	re := regexp.MustCompile(`(?m)^\s+--?` + regexp.QuoteMeta(name) + `(\s|$)`)
	return re.Match(out)
}

func (b *bench) logf(format string, args ...any) {
	if !b.opts.Quiet {
		fmt.Fprintf(b.stderr, "intentbench: "+format+"\n", args...)
	}
}

// intentdBinary returns the binary to start, building it on first use.
func (b *bench) intentdBinary(ctx context.Context) (string, error) {
	if b.intentd != "" {
		return b.intentd, nil
	}
	if b.opts.Intentd != "" {
		b.intentd = b.opts.Intentd
		return b.intentd, nil
	}
	b.logf("building intentd")
	bin, err := buildIntentd(ctx, b.tmp, b.opts.BuildRace)
	if err != nil {
		return "", err
	}
	b.intentd = bin
	return bin, nil
}

// startIntentd starts intentd on dataDir listening on listen (host:port, port 0 for
// any).
func (b *bench) startIntentd(ctx context.Context, dataDir, listen string) (*child, error) {
	bin, err := b.intentdBinary(ctx)
	if err != nil {
		return nil, err
	}
	args := []string{"--listen", listen, "--data", dataDir, "--intent-ttl", b.opts.IntentTTL.String(), "--log-format", "text", "--log-level", "info"}
	if b.subscribers > 0 && hasFlag(bin, "max-subscribers") {
		// Room for the run's subscribers and the marker stream, over the default.
		args = append(args, "--max-subscribers", strconv.Itoa(max(b.subscribers+16, 10000)))
	}
	args = append(args, b.opts.ServerFlags...)
	c, err := startChild(ctx, "intentd", bin, args, []string{"INTENTD_LISTEN=", "INTENTD_DATA="})
	if err != nil {
		return nil, err
	}
	b.servers = append(b.servers, c)
	return c, nil
}

// targets returns the servers to load: every --server, or an intentd started in a
// fresh data folder (the child is nil for --server).
func (b *bench) targets(ctx context.Context) ([]string, *child, error) {
	if len(b.opts.Servers) > 0 {
		return b.opts.Servers, nil, nil
	}
	base, srv, err := b.target(ctx)
	if err != nil {
		return nil, nil, err
	}
	return []string{base}, srv, nil
}

// target returns the server to load: --server, or an intentd started in a fresh data
// folder (the child is nil for --server).
func (b *bench) target(ctx context.Context) (string, *child, error) {
	if len(b.opts.Servers) > 0 {
		return b.opts.Servers[0], nil, nil // one server: parseArgs refuses several here
	}
	if b.floor {
		c, err := b.startBaseline(ctx, floorServer)
		if err != nil {
			return "", nil, err
		}
		b.logf("the floor %s serving", c.url)
		return c.url, c, nil
	}
	dir, err := os.MkdirTemp(b.tmp, "data-")
	if err != nil {
		return "", nil, err
	}
	c, err := b.startIntentd(ctx, dir, "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	b.logf("intentd %s serving in %s", c.url, dir)
	return c.url, c, nil
}

// startBaseline starts a bare server of the kind baselineEnv names: this program's own
// executable in baseline mode.
func (b *bench) startBaseline(ctx context.Context, kind string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c, err := startChild(ctx, "baseline server", exe, nil, []string{baselineEnv + "=" + kind})
	if err != nil {
		return nil, err
	}
	b.servers = append(b.servers, c)
	return c, nil
}

// close stops the servers and removes the folder unless --keep.
func (b *bench) close() {
	b.client.CloseIdleConnections()
	for _, c := range b.servers {
		if _, err := c.Stop(time.Minute); err != nil {
			b.logf("stopping %s: %v", c.name, err)
		}
	}
	if b.tmp == "" {
		return
	}
	if b.opts.Keep {
		b.logf("kept %s", b.tmp)
		return
	}
	os.RemoveAll(b.tmp)
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
