package deploy

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intentd/intentd/internal/syncbuf"
)

const (
	unitFile = "systemd/intentd.service"
	envFile  = "systemd/intentd.env"
	// unitBinary is where the unit runs intentd from; the one line of the unit that
	// the tests change.
	unitBinary = "/usr/local/bin/intentd"
)

// directive is one setting of a unit file.
type directive struct{ section, key, value string }

// parseUnit returns a unit's settings in order, with continuation lines joined and
// comments left out.
func parseUnit(text string) []directive {
	var out []directive
	section, pending := "", ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if pending != "" {
			line, pending = pending+" "+line, ""
		}
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out = append(out, directive{section, strings.TrimSpace(k), strings.TrimSpace(v)})
		}
	}
	return out
}

// setting returns the value of key in the unit's [Service] section: the last one, as
// systemd takes it for a single-valued setting.
func setting(t *testing.T, ds []directive, key string) string {
	t.Helper()
	v, found := "", false
	for _, d := range ds {
		if d.section == "Service" && d.key == key {
			v, found = d.value, true
		}
	}
	if !found {
		t.Fatalf("%s sets no %s", unitFile, key)
	}
	return v
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit, with intentd built
// from this checkout in place of /usr/local/bin/intentd: verify refuses an ExecStart
// whose program is missing.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd): the unit is not verified")
	}
	shipped := readFile(t, unitFile)
	if n := strings.Count(shipped, unitBinary); n != 1 {
		t.Fatalf("%s names %s %d times; want once, in ExecStart", unitFile, unitBinary, n)
	}
	bin := intentdBinary(t)
	tested := strings.Replace(shipped, unitBinary, bin, 1)

	// What is verified is the shipped unit but for the program's path.
	sl, tl := strings.Split(shipped, "\n"), strings.Split(tested, "\n")
	if len(sl) != len(tl) {
		t.Fatalf("the tested unit has %d lines, the shipped one %d", len(tl), len(sl))
	}
	differ := 0
	for i := range sl {
		if sl[i] == tl[i] {
			continue
		}
		differ++
		rest, ok := strings.CutPrefix(sl[i], "ExecStart="+unitBinary+" ")
		if !ok || tl[i] != "ExecStart="+bin+" "+rest {
			t.Errorf("line %d differs beyond ExecStart's program:\nshipped: %s\ntested:  %s", i+1, sl[i], tl[i])
		}
	}
	if differ != 1 {
		t.Errorf("the tested unit differs from the shipped one in %d lines; want 1, ExecStart", differ)
	}

	path := filepath.Join(t.TempDir(), "intentd.service")
	if err := os.WriteFile(path, []byte(tested), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// verify warns of an unknown or malformed setting and still exits 0. Lines about
	// the host's own units are not the unit's.
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case line == "":
		case strings.Contains(line, "intentd.service"):
			t.Errorf("systemd-analyze verify: %s", line)
		default:
			t.Logf("systemd-analyze verify, of the host's units: %s", line)
		}
	}

	// The exposure score is reported, not judged: it is docs/deploying.md's to quote.
	out, err = exec.Command(analyze, "security", "--offline=true", path).CombinedOutput()
	if i := strings.Index(string(out), "Overall exposure level"); i >= 0 {
		line, _, _ := strings.Cut(string(out[i:]), "\n")
		t.Logf("systemd-analyze security: %s", line)
	} else {
		t.Logf("systemd-analyze security --offline=true gave no score (%v): %s", err, out)
	}
}

// TestSystemdUnitHardening keeps the settings docs/deploying.md promises: a change
// that drops one fails here rather than go unnoticed in a longer score.
func TestSystemdUnitHardening(t *testing.T) {
	ds := parseUnit(readFile(t, unitFile))
	for key, want := range map[string]string{
		"DynamicUser": "yes", "StateDirectory": "intentd", "Restart": "on-failure",
		"ExecReload": "/bin/kill -HUP $MAINPID", "KillSignal": "SIGTERM",
		"EnvironmentFile": "-/etc/intentd/intentd.env", "UMask": "0077",
		"ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"NoNewPrivileges": "yes", "PrivateDevices": "yes", "ProtectKernelTunables": "yes",
		"ProtectKernelModules": "yes", "ProtectControlGroups": "yes",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "RestrictNamespaces": "yes",
		"LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
		"SystemCallArchitectures": "native", "CapabilityBoundingSet": "",
	} {
		if got := setting(t, ds, key); got != want {
			t.Errorf("%s=%s; want %s=%s", key, got, key, want)
		}
	}
	if args := strings.Fields(setting(t, ds, "ExecStart")); argValue(args, "data") != "/var/lib/intentd" {
		t.Errorf("ExecStart gives --data %q; want /var/lib/intentd, the folder of StateDirectory=intentd", argValue(args, "data"))
	}
}

// TestSystemdUnitStartsIntentd checks the unit's flags and the example environment
// file's variables against the flags intentd has, the stop time-out against the drain
// the flags make, and the file limit against the event stream clients; then starts
// intentd as the unit would (on a data folder and a port of its own), stops it with
// SIGTERM and times the drain.
func TestSystemdUnitStartsIntentd(t *testing.T) {
	bin := intentdBinary(t)
	ds := parseUnit(readFile(t, unitFile))
	execStart := strings.Fields(setting(t, ds, "ExecStart"))
	if execStart[0] != unitBinary {
		t.Fatalf("ExecStart runs %s; want %s", execStart[0], unitBinary)
	}
	args := execStart[1:]

	help, _ := exec.Command(bin, "-h").CombinedOutput() // -h exits 0, listing every flag
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		flags[m[1]] = true
	}
	if !flags["data"] || !flags["shutdown-delay"] {
		t.Fatalf("intentd -h lists no --data or --shutdown-delay; the flags were not read from:\n%s", help)
	}
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "-"); ok {
			name, _, _ = strings.Cut(strings.TrimPrefix(name, "-"), "=")
			if !flags[name] {
				t.Errorf("ExecStart gives %s, which is no flag of intentd", a)
			}
		}
	}
	env := envSettings(t, flags)

	// The drain: --shutdown-delay, then --shutdown-timeout for requests in flight, then
	// the engine and the store close (the store's last flush, the transparency log's
	// last write of up to 2 s); TimeoutStopSec must cover them before systemd kills.
	closing := 10 * time.Second
	delay := durationArg(t, args, help, "shutdown-delay")
	timeout := durationArg(t, args, help, "shutdown-timeout")
	stop, err := time.ParseDuration(setting(t, ds, "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v (the test reads Go's duration syntax, as 60s)", err)
	}
	if delay+timeout+closing > stop {
		t.Errorf("TimeoutStopSec=%s does not cover --shutdown-delay %s, --shutdown-timeout %s and %s to close", stop, delay, timeout, closing)
	}

	// Each event stream client holds a file; the stores' tables and the requests in
	// flight need some thousands more.
	subscribers := env["INTENTD_MAX_SUBSCRIBERS"]
	if subscribers == "" {
		var ok bool
		if subscribers, ok = flagDefault(help, "max-subscribers"); !ok {
			t.Fatal("intentd -h shows no default of --max-subscribers")
		}
	}
	maxSubs, err := strconv.Atoi(subscribers)
	if err != nil {
		t.Fatalf("--max-subscribers %q: %v", subscribers, err)
	}
	if limit, err := strconv.Atoi(setting(t, ds, "LimitNOFILE")); err != nil || limit < maxSubs+4096 {
		t.Errorf("LimitNOFILE=%s; want at least %d, --max-subscribers (%d) and 4096", setting(t, ds, "LimitNOFILE"), maxSubs+4096, maxSubs)
	}

	startAndDrain(t, bin, args, env, delay, stop)
}

// envSettings returns the variables the example environment file sets, having checked
// that every one it names, set or commented out, sets a flag: intentd ignores an
// INTENTD_ variable it has no flag for.
func envSettings(t *testing.T, flags map[string]bool) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(#?)(INTENTD_[A-Z0-9_]+)=(.*)$`).FindAllStringSubmatch(readFile(t, envFile), -1) {
		name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(m[2], "INTENTD_"), "_", "-"))
		if !flags[name] {
			t.Errorf("%s names %s, which sets no flag of intentd", envFile, m[2])
		}
		if m[1] == "" {
			env[m[2]] = m[3]
		}
	}
	if len(env) == 0 {
		t.Errorf("%s sets nothing; the start would not read it", envFile)
	}
	return env
}

// startAndDrain runs intentd with the unit's args and the environment file's settings,
// on a port and a folder of the test's (later flags win), until it listens and is
// ready; then stops it with SIGTERM, as systemctl stop does, and checks the drain: 503
// on /readyz for the delay, and an exit with status 0 within the stop time-out.
func startAndDrain(t *testing.T, bin string, args []string, env map[string]string, delay, stop time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{}, args...), "--listen", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data"))...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INTENTD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			<-exited
		}
	})

	listening := regexp.MustCompile(`msg"?[=:]"?listening\b.*url"?[=:]"?(http://[^"\s]+)`)
	var url string
	for deadline := time.Now().Add(60 * time.Second); url == ""; time.Sleep(50 * time.Millisecond) {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("intentd with the unit's flags exited (%v) before it listened:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("intentd with the unit's flags did not listen within 60 s:\n%s", stderr.String())
		}
	}
	if code := readyz(url); code != http.StatusOK {
		t.Fatalf("GET /readyz answered %d once listening; want 200", code)
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if delay > 0 {
		// The load balancer's part of the drain: /readyz says 503 while the rest serves.
		time.Sleep(delay / 5)
		if code := readyz(url); code != http.StatusServiceUnavailable {
			t.Errorf("GET /readyz answered %d during --shutdown-delay; want 503", code)
		}
	}
	select {
	case err := <-exited:
		stopped = true
		took := time.Since(start)
		if err != nil {
			t.Errorf("intentd exited with %v after SIGTERM; want status 0, which Restart=on-failure leaves alone:\n%s", err, stderr.String())
		}
		if took > stop {
			t.Errorf("intentd took %s to stop after SIGTERM, past TimeoutStopSec=%s", took, stop)
		}
		t.Logf("intentd stopped %s after SIGTERM (--shutdown-delay %s, TimeoutStopSec=%s)", took.Round(time.Millisecond), delay, stop)
	case <-time.After(stop + 5*time.Second):
		t.Fatalf("intentd had not stopped %s after SIGTERM, past TimeoutStopSec:\n%s", stop+5*time.Second, stderr.String())
	}
}

// readyz returns the status of GET url/readyz, or 0 when none came.
func readyz(url string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// argValue returns the value args give the flag name (--name V or --name=V, one dash
// or two), the last one given; "" when none.
func argValue(args []string, name string) string {
	v := ""
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name && i+1 < len(args) {
			v = args[i+1]
		} else if val, ok := strings.CutPrefix(a, name+"="); ok {
			v = val
		}
	}
	return v
}

// flagDefault returns the default intentd -h shows for a flag; none is shown for a
// zero value.
func flagDefault(help []byte, name string) (string, bool) {
	m := regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `(?: \S+)?\n[^\n]*\(default ([^)]+)\)`).FindSubmatch(help)
	if m == nil {
		return "", false
	}
	return string(m[1]), true
}

// durationArg returns the duration the unit's args give a flag, or its default.
func durationArg(t *testing.T, args []string, help []byte, name string) time.Duration {
	t.Helper()
	v := argValue(args, name)
	if v == "" {
		var ok bool
		if v, ok = flagDefault(help, name); !ok {
			v = "0s"
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("--%s %q: %v", name, v, err)
	}
	return d
}
