package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// commandTimeout bounds a command that should end by itself.
const commandTimeout = 30 * time.Second

// shell runs a document's commands one bash at a time, carrying what a terminal keeps
// from one command to the next: the variables set, and the last exit status for `$?`.
type shell struct {
	t     *testing.T
	dir   string // the working folder
	state string // the variables, as `export -p` writes them
	env   []string
	last  int
	addr  string // the server's host:port, put back to 8080 in output
	url   string // the server's URL, INTENTCTL_SERVER of every command
}

func newShell(t *testing.T, dir, bin string) *shell {
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		// The user's own server, token and key settings are not the run's.
		if strings.HasPrefix(kv, "INTENTCTL_") || strings.HasPrefix(kv, "INTENTD_") ||
			strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "PATH=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "TZ=UTC")
	// On a terminal curl shows no progress meter; into the test's pipe it would.
	if err := os.WriteFile(filepath.Join(home, ".curlrc"), []byte("no-progress-meter\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return &shell{t: t, dir: dir, state: state, env: env}
}

func (sh *shell) setServer(s *server) {
	sh.addr, sh.url = s.addr, s.url
}

// script wraps a command so that it sees the variables and `$?` the last one left, and
// leaves its own for the next. The server's address is set after the variables: those
// a command before a restart left name the server before it.
func (sh *shell) script(cmd string) string {
	server := ""
	if sh.url != "" {
		server = fmt.Sprintf("export INTENTCTL_SERVER=%q\n", sh.url)
	}
	return fmt.Sprintf("set -a\n. %q\n%s(exit %d)\n%s\n__doctest_rc=$?\nexport -p > %q\nexit $__doctest_rc\n", sh.state, server, sh.last, cmd, sh.state)
}

func (sh *shell) command(ctx context.Context, cmd string) *exec.Cmd {
	c := exec.CommandContext(ctx, "bash", "-c", sh.script(cmd))
	c.Dir, c.Env = sh.dir, sh.env
	// A command's children (a pipeline, a server) go with it.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = time.Second
	return c
}

// run runs a command to its end, or until limit when set: its output, standard output
// and error in the order written, as a terminal shows them; its exit status; and whether
// it was stopped at limit.
func (sh *shell) run(cmd string, limit time.Duration) (string, int, bool) {
	timeout := commandTimeout
	if limit > 0 {
		timeout = limit
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := sh.command(ctx, cmd)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil && limit > 0:
		return out.String(), 0, true
	case ctx.Err() != nil:
		sh.t.Fatalf("$ %s\ndid not end within %s; output:\n%s", cmd, timeout, out.String())
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		sh.t.Fatalf("$ %s: %v", cmd, err)
	}
	sh.last = code
	return out.String(), code, false
}

// normalise puts the document's address back in place of the run's, and splits the
// output into lines.
func (sh *shell) normalise(out string) []string {
	if sh.addr != "" {
		port := sh.addr[strings.LastIndexByte(sh.addr, ':')+1:]
		out = strings.NewReplacer(sh.addr, "127.0.0.1:8080", "localhost:"+port, "localhost:8080").Replace(out)
	}
	// A header's CRLF is a line's end to a reader.
	return trimTrailingBlank(strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n"))
}

// background is a command running beside the others, as in a second terminal.
type background struct {
	cancel context.CancelFunc
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	seen   int // bytes of out already compared with a sample
}

func (bg *background) Write(p []byte) (int, error) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	return bg.out.Write(p)
}

// since returns the output not yet compared, and where it ends.
func (bg *background) since() (string, int) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	return bg.out.String()[bg.seen:], bg.out.Len()
}

func (bg *background) consume(n int) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	bg.seen = n
}

func (bg *background) stop() {
	bg.cancel()
	_ = bg.cmd.Wait()
}

// start starts a command in the background; it runs until the document's end.
func (sh *shell) start(cmd string) *background {
	ctx, cancel := context.WithCancel(context.Background())
	bg := &background{cancel: cancel}
	bg.cmd = sh.command(ctx, cmd)
	bg.cmd.Stdout, bg.cmd.Stderr = bg, bg
	if err := bg.cmd.Start(); err != nil {
		cancel()
		sh.t.Fatal(err)
	}
	return bg
}
