package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/intentd/intentd/internal/procstat"
)

// buildIntentd compiles the module's cmd/intentd into dir and returns the binary's
// path. race builds it with the race detector, which the tests use so that the
// dependencies already compiled for `go test -race` are reused from the build cache.
func buildIntentd(ctx context.Context, dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "intentd")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "github.com/intentd/intentd/cmd/intentd")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build intentd (run from inside the module, or pass --intentd): %v\n%s", err, out)
	}
	return bin, nil
}

// listeningRe finds the base URL in the start-up banner that intentd (and the
// baseline server) print on standard error once they serve.
var listeningRe = regexp.MustCompile(`listening on (http://[0-9A-Za-z.:\[\]-]+)`)

// parseListening returns the URL of a banner line, or "".
func parseListening(line string) string {
	m := listeningRe.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return m[1]
}

// child is a server process started by the tool: intentd or the baseline server.
type child struct {
	name    string
	cmd     *exec.Cmd
	url     string
	started time.Time
	// listened is when the banner line was read.
	listened time.Time

	mu      sync.Mutex
	tail    []string // the last lines of its standard error, for error messages
	counts  map[string]int
	exited  chan struct{}
	waitErr error
	// bg is when it flushed or compacted its store and collected garbage.
	bg background
}

// countedLogs are log messages whose number a scenario reports.
var countedLogs = []string{"subscriber too slow", "internal error", "handler panic"}

// startChild runs bin with args and waits until it prints its listening banner.
func startChild(ctx context.Context, name, bin string, args, env []string) (*child, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), env...), gcTraceEnv(os.Getenv("GODEBUG")))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	c := &child{name: name, cmd: cmd, counts: map[string]int{}, exited: make(chan struct{})}
	c.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	urls := make(chan string, 1)
	go c.readLogs(stderr, urls)
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	select {
	case u := <-urls:
		c.url = u
		c.listened = time.Now()
		return c, nil
	case <-c.exited:
		return nil, fmt.Errorf("%s exited before serving: %v\n%s", name, c.waitErr, c.Tail())
	case <-ctx.Done():
		c.Kill()
		return nil, ctx.Err()
	case <-time.After(5 * time.Minute):
		c.Kill()
		return nil, fmt.Errorf("%s did not serve within 5 minutes\n%s", name, c.Tail())
	}
}

// gcTraceEnv is the GODEBUG of a child: the tool's own, with gctrace on, so that the
// child prints a line for each collection, which background reads.
func gcTraceEnv(godebug string) string {
	if godebug == "" {
		return "GODEBUG=gctrace=1"
	}
	return "GODEBUG=" + godebug + ",gctrace=1"
}

func (c *child) readLogs(r io.Reader, urls chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		if !sent {
			if u := parseListening(line); u != "" {
				urls <- u
				sent = true
			}
		}
		c.bg.observe(line, c.started)
		c.mu.Lock()
		for _, s := range countedLogs {
			if strings.Contains(line, s) {
				c.counts[s]++
			}
		}
		c.tail = append(c.tail, line)
		if len(c.tail) > 40 {
			c.tail = c.tail[len(c.tail)-40:]
		}
		c.mu.Unlock()
	}
	io.Copy(io.Discard, r)
}

// Tail returns the last lines the process logged.
func (c *child) Tail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.tail, "\n")
}

// LogCount is how many log lines contained s (one of countedLogs).
func (c *child) LogCount(s string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[s]
}

// Stop asks the process to shut down (SIGTERM) and waits for it, killing it after
// timeout. It returns how long the shutdown took.
func (c *child) Stop(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	select {
	case <-c.exited:
		return 0, c.exitErr()
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case <-c.exited:
		return time.Since(start), c.exitErr()
	case <-time.After(timeout):
		c.Kill()
		return time.Since(start), fmt.Errorf("%s did not stop within %s; killed", c.name, timeout)
	}
}

func (c *child) exitErr() error {
	if c.waitErr != nil {
		return fmt.Errorf("%s: %v\n%s", c.name, c.waitErr, c.Tail())
	}
	return nil
}

// Kill ends the process at once.
func (c *child) Kill() {
	c.cmd.Process.Kill()
	<-c.exited
}

// memory is what /proc/<pid>/status says of a process's memory.
type memory struct {
	RSS  int64 // VmRSS, bytes
	Peak int64 // VmHWM, the peak resident size, bytes
}

// Memory reads the process's resident memory.
func (c *child) Memory() (memory, error) {
	return readMemory(c.cmd.Process.Pid)
}

func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	return parseProcStatus(string(b))
}

// parseProcStatus reads VmRSS and VmHWM (in kB) from the text of /proc/<pid>/status.
func parseProcStatus(s string) (memory, error) {
	var m memory
	var found int
	for _, line := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return memory{}, fmt.Errorf("/proc status: %s: %q, want a number of kB", name, strings.TrimSpace(rest))
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || n < 0 {
			return memory{}, fmt.Errorf("/proc status: %s: %q is not a size", name, fields[0])
		}
		if name == "VmRSS" {
			m.RSS = n << 10
		} else {
			m.Peak = n << 10
		}
		found++
	}
	if found != 2 {
		return memory{}, errors.New("/proc status: VmRSS or VmHWM missing")
	}
	return m, nil
}

// raiseFileLimit lifts the soft limit on open files to the hard one. The children
// inherit it: ten thousand subscribers are ten thousand sockets on each side. Calling
// Setrlimit ourselves also stops Go from restoring the lower original limit in the
// processes it starts.
func raiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

// readWriteBytes reads write_bytes of /proc/<pid>/io: what the process sent to the
// storage layer, its synced writes and Pebble's flushes and compactions alike. Beside
// the CPU it says how much of a path's cost is the disk's: every byte a request adds is
// written to the log, then to a table, then again by compactions.
func readWriteBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	return parseWriteBytes(string(b))
}

// parseWriteBytes finds the write_bytes line of the text of /proc/<pid>/io.
func parseWriteBytes(s string) (int64, error) {
	for line := range strings.Lines(s) {
		v, ok := strings.CutPrefix(line, "write_bytes:")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("/proc io: write_bytes %q is not a count", strings.TrimSpace(v))
		}
		return n, nil
	}
	return 0, errors.New("/proc io: no write_bytes")
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the first figure of /proc/loadavg, the machine's one-minute load: on
// a shared machine it says how much else was running.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// busySample is how long the tool watches the machine's cores before a run.
const busySample = time.Second

// otherWork is the share of a core busy before a run past which the report says other
// work was using the cores: a machine at rest, with the servers of a run started and
// waiting, spends a few hundredths.
const otherWork = 0.5

// busyCores is how many of the machine's cores were busy, on average, over the span
// before it returns, from /proc/stat; ok false where that cannot be read. Unlike the
// load average, it does not count processes that ended before the span: the servers
// of the run before this one.
func busyCores(ctx context.Context, span time.Duration, cores int) (busy float64, ok bool) {
	before, err := procstat.ReadMachine()
	if err != nil {
		return 0, false
	}
	select {
	case <-ctx.Done():
		return 0, false
	case <-time.After(span):
	}
	after, err := procstat.ReadMachine()
	if err != nil {
		return 0, false
	}
	return procstat.BusyCores(before, after, cores), true
}

// cpuMeter measures the CPU the tool and a server child use over a span.
type cpuMeter struct {
	srv   *child
	self  time.Duration
	kid   procstat.Stat
	start time.Time
	// written is the server's write_bytes at the start; -1 where /proc does not say.
	written int64
}

func startCPU(srv *child) *cpuMeter {
	m := &cpuMeter{srv: srv, self: selfCPU(), start: time.Now(), written: -1}
	if srv != nil {
		m.kid, _ = procstat.Read(srv.cmd.Process.Pid)
		if n, err := readWriteBytes(srv.cmd.Process.Pid); err == nil {
			m.written = n
		}
	}
	return m
}

// perOp adds to r the CPU per operation of the tool and of the server, for n
// operations since the meter started.
func (m *cpuMeter) perOp(r *Report, what string, n int64) {
	if n <= 0 {
		return
	}
	wall := time.Since(m.start)
	self := selfCPU() - m.self
	r.figure(what+": load generator CPU per request", float64(self.Microseconds())/float64(n), "µs")
	r.figure(what+": load generator cores busy", self.Seconds()/wall.Seconds(), "")
	if m.srv == nil {
		return
	}
	if kid, err := procstat.Read(m.srv.cmd.Process.Pid); err == nil {
		cpu := kid.CPU - m.kid.CPU
		r.figure(what+": server CPU per request", float64(cpu.Microseconds())/float64(n), "µs")
		r.figure(what+": server cores busy", cpu.Seconds()/wall.Seconds(), "")
		r.figure(what+": server page faults per second", float64(kid.MinorFaults-m.kid.MinorFaults)/wall.Seconds(), "")
	}
	if w, err := readWriteBytes(m.srv.cmd.Process.Pid); err == nil && m.written >= 0 {
		r.figure(what+": server bytes written per request", float64(w-m.written)/float64(n), "B")
	}
}
