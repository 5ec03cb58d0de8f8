package docs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// documents are run in this order, each against a server of its own: the order a new
// user reads them in.
var documents = []string{"README.md", "docs/cli.md", "docs/api.md", "docs/mandates.md", "docs/policy-language.md", "docs/webhooks.md"}

// commandAliases are the spellings of the documents that mean the binaries the test
// built from the same source: `go run ./cmd/intentctl` compiles what is on PATH here.
var commandAliases = strings.NewReplacer(
	"go run ./cmd/intentctl", "intentctl",
	"go run ./cmd/intentd", "intentd",
)

// maxFailures ends a document's run after this many differences: past them, the values
// the later samples rest on were never learnt, and the messages would only repeat.
const maxFailures = 3

func TestDocuments(t *testing.T) {
	if testing.Short() {
		t.Skip("builds intentd and intentctl and runs the documents against them")
	}
	// The tools the documents' commands call, beside the two commands built here.
	for _, tool := range []string{"bash", "curl", "jq", "sed", "xxd", "head"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the documents' commands need %s, which is not on PATH", tool)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/intentd", "./cmd/intentctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, doc := range documents {
		t.Run(doc, func(t *testing.T) {
			blocks, err := parseFile(filepath.Join(root, doc), doc)
			if err != nil {
				t.Fatal(err)
			}
			r := newRun(t, root, bin)
			r.document(blocks)
		})
	}
}

// run is one document's run: its shell, its server, its working folder.
type run struct {
	t        *testing.T
	root     string
	bin      string
	sh       *shell
	srv      *server
	b        bindings
	bg       []*background
	skipped  []string
	failures int
}

func newRun(t *testing.T, root, bin string) *run {
	work := t.TempDir()
	// The walk-throughs run from a clone's root, where examples/ and docs/examples/ are.
	if err := os.Symlink(filepath.Join(root, "examples"), filepath.Join(work, "examples")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "docs", "examples"), filepath.Join(work, "docs", "examples")); err != nil {
		t.Fatal(err)
	}
	r := &run{t: t, root: root, bin: bin, b: bindings{}}
	r.sh = newShell(t, work, bin)
	t.Cleanup(func() {
		for _, bg := range r.bg {
			bg.stop()
		}
	})
	return r
}

// document runs the blocks in order, then says which it did not run and why.
func (r *run) document(blocks []block) {
	t := r.t
	for _, b := range blocks {
		if r.failures >= maxFailures {
			t.Errorf("%s and after: not run, after %d differences", b.name(), r.failures)
			break
		}
		verb, arg, _ := strings.Cut(b.marker, " ")
		switch verb {
		case "skip":
			if strings.TrimSpace(arg) == "" {
				t.Fatalf("%s: a skipped block says why it cannot run here", b.name())
			}
			r.skipped = append(r.skipped, b.name()+": "+arg)
		case "server":
			r.skipped = append(r.skipped, b.name()+": starts a server; the test started its own with: intentd "+arg)
			r.startServer(strings.Fields(arg))
		case "restart":
			// The block needs a server of other flags: a fresh one, whose data the
			// blocks after it find.
			r.startServer(strings.Fields(arg))
			for _, s := range b.steps {
				r.step(b, s, 0)
			}
		case "background":
			if arg == "output" {
				r.backgroundOutput(b)
			} else {
				r.background(b)
			}
		case "stream":
			for _, s := range b.steps {
				r.step(b, s, 2*time.Second)
			}
		case "":
			for _, s := range b.steps {
				r.step(b, s, 0)
			}
		default:
			t.Fatalf("%s: unknown doctest marker %q", b.name(), b.marker)
		}
	}
	t.Logf("%d block(s), %d skipped:\n  %s", len(blocks), len(r.skipped), strings.Join(r.skipped, "\n  "))
}

func (r *run) startServer(flags []string) {
	if r.srv != nil {
		r.srv.stop()
	}
	r.srv = startServer(r.t, r.bin, flags)
	r.sh.setServer(r.srv)
}

func (r *run) server() *server {
	if r.srv == nil {
		r.startServer(nil)
	}
	return r.srv
}

// command is a step's command as this run types it: the built binaries for `go run`,
// the server's address for 8080, this run's ids and keys for the document's.
func (r *run) command(b block, s step) (string, bool) {
	cmd := commandAliases.Replace(s.command)
	cmd = strings.NewReplacer("localhost:8080", r.srv.addr, "127.0.0.1:8080", r.srv.addr).Replace(cmd)
	cmd, err := r.b.rewrite(cmd)
	if err != nil {
		r.fail(b, s, "the command's values: %v", err)
		return "", false
	}
	return cmd, true
}

// step runs one command after the server settles and compares its output with the
// sample; limit, when set, stops a command that streams, which is then no failure.
func (r *run) step(b block, s step, limit time.Duration) {
	r.server().settle()
	cmd, ok := r.command(b, s)
	if !ok {
		return
	}
	out, code, stopped := r.sh.run(cmd, limit)
	got := r.sh.normalise(out)
	switch {
	case s.compare && !matchLines(s.want, got, r.b):
		r.fail(b, s, "%s\noutput (exit status %d):\n%s", firstDifference(s.want, got, r.b), code, indent(got))
	case !s.compare && code != 0 && !stopped:
		r.fail(b, s, "exit status %d:\n%s", code, indent(got))
	}
}

func (r *run) fail(b block, s step, format string, args ...any) {
	r.t.Helper()
	r.failures++
	r.t.Errorf("%s:%d: $ %s\n%s", b.file, s.line, s.command, fmt.Sprintf(format, args...))
}

func indent(lines []string) string {
	return "    " + strings.Join(lines, "\n    ")
}

// background starts a block's command as in a second terminal and, when the block shows
// what it prints first, waits for that.
func (r *run) background(b block) {
	r.server().settle()
	for _, s := range b.steps {
		cmd, ok := r.command(b, s)
		if !ok {
			return
		}
		bg := r.sh.start(cmd)
		r.bg = append(r.bg, bg)
		if s.compare {
			r.await(b, s, bg)
		}
	}
}

// backgroundOutput compares what the last background command printed since it was last
// looked at with a plain block.
func (r *run) backgroundOutput(b block) {
	if len(r.bg) == 0 {
		r.t.Fatalf("%s: no background command to show the output of", b.name())
	}
	r.server().settle()
	r.await(b, b.steps[0], r.bg[len(r.bg)-1])
}

// await waits a little for a background command's new output to match the sample: an
// event reaches a stream a moment after it is stored.
func (r *run) await(b block, s step, bg *background) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, n := bg.since()
		got := trimTrailingBlank(r.sh.normalise(out))
		if matchLines(s.want, got, r.b) {
			bg.consume(n)
			return
		}
		if time.Now().After(deadline) {
			r.fail(b, s, "%s\nthe second terminal shows:\n%s", firstDifference(s.want, got, r.b), indent(got))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
