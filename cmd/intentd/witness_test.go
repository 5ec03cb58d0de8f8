package main

import (
	"bufio"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/syncbuf"
	iproof "github.com/intentd/intentd/proof"
	"github.com/intentd/intentd/tlog"
)

// litewitnessVersion is the torchwood release whose litewitness the tests run: a
// C2SP tlog-witness written by others, built from the Go module proxy.
const litewitnessVersion = "v0.6.1"

var (
	litewitnessOnce sync.Once
	litewitnessBin  string
	litewitnessErr  error
)

// buildLitewitness builds litewitness once per process, in the user's cache folder
// so that later runs reuse it; the test skips when it cannot be built (no module
// proxy, no network).
func buildLitewitness(t *testing.T) string {
	t.Helper()
	litewitnessOnce.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "intentd-test", "litewitness-"+litewitnessVersion)
		litewitnessBin = filepath.Join(dir, "litewitness")
		if _, err := os.Stat(litewitnessBin); err == nil {
			return
		}
		cmd := exec.Command("go", "install", "filippo.io/torchwood/cmd/litewitness@"+litewitnessVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			litewitnessErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if litewitnessErr != nil {
		t.Skipf("litewitness %s cannot be built (go install filippo.io/torchwood/cmd/litewitness@%s): %v", litewitnessVersion, litewitnessVersion, litewitnessErr)
	}
	for _, tool := range []string{"ssh-keygen", "ssh-agent", "ssh-add"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed, which litewitness's key needs: apt-get install openssh-client", tool)
		}
	}
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 not installed, which registers the log with litewitness: apt-get install sqlite3")
	}
	return litewitnessBin
}

// litewitness is one litewitness process with its ssh-agent, its key and database.
type litewitness struct {
	t    *testing.T
	name string
	url  string
	vkey string
	db   string
	cmd  *exec.Cmd
}

// startLitewitness starts litewitness named name.example on a free port, with a new
// Ed25519 key in an ssh-agent of its own, and reads its verifier key from its log.
func startLitewitness(t *testing.T, bin, name string) *litewitness {
	t.Helper()
	// A socket path is at most 108 bytes: a short folder of its own.
	dir, err := os.MkdirTemp("", "lw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	key := filepath.Join(dir, "key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	out, err := exec.Command("ssh-keygen", "-l", "-f", key+".pub").Output()
	if err != nil {
		t.Fatalf("ssh-keygen -l: %v", err)
	}
	fingerprint := strings.Fields(string(out))[1]
	sock := filepath.Join(dir, "s")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatalf("ssh-agent: %v", err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		add := exec.Command("ssh-add", key)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		out, err := add.CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w := &litewitness{t: t, name: name, url: "http://" + freeAddr(t), db: filepath.Join(dir, "witness.db")}
	w.cmd = exec.Command(bin, "-name", name+".example", "-key", fingerprint, "-ssh-agent", sock, "-db", w.db,
		"-listen", strings.TrimPrefix(w.url, "http://"))
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("litewitness: %v", err)
	}
	t.Cleanup(w.stop)
	vkeyRe := regexp.MustCompile(`vkey=(\S+)`)
	lines := bufio.NewScanner(stderr)
	found := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if m := vkeyRe.FindStringSubmatch(lines.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case w.vkey = <-found:
	case <-time.After(20 * time.Second):
		t.Fatalf("litewitness %s logged no verifier key", name)
	}
	for {
		resp, err := http.Get(w.url + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("litewitness %s does not answer: %v", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return w
}

// register makes the log of origin and verifier key known to the witness, as its
// witnessctl add-log and add-key do (witnessctl itself needs a module the proxy does
// not serve): rows in its database, which it reads at each request.
func (w *litewitness) register(origin, vkey string) {
	w.t.Helper()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	sql := fmt.Sprintf("INSERT INTO log (origin, tree_size, tree_hash) VALUES (%s, 0, %s); INSERT INTO key (origin, key) VALUES (%s, %s);",
		q(origin), q(base64.StdEncoding.EncodeToString(make([]byte, 32))), q(origin), q(vkey))
	if out, err := exec.Command("sqlite3", w.db, sql).CombinedOutput(); err != nil {
		w.t.Fatalf("register the log with %s: %v: %s", w.name, err, out)
	}
}

// stop ends the witness, as a crash would.
func (w *litewitness) stop() {
	if w.cmd.ProcessState == nil {
		w.cmd.Process.Kill()
		w.cmd.Wait()
	}
}

// writePolicy writes a C2SP tlog-policy of the witnesses with a quorum of two, and,
// when logKey is set, the log's key.
func writePolicy(t *testing.T, logKey string, ws ...*litewitness) string {
	t.Helper()
	var b strings.Builder
	if logKey != "" {
		fmt.Fprintf(&b, "log %s\n", logKey)
	}
	names := make([]string, len(ws))
	for i, w := range ws {
		fmt.Fprintf(&b, "witness %s %s %s\n", w.name, w.vkey, w.url)
		names[i] = w.name
	}
	fmt.Fprintf(&b, "group two-of-three 2 %s\nquorum two-of-three\n", strings.Join(names, " "))
	path := filepath.Join(t.TempDir(), "witnesses.policy")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// decideOne submits an intent, proposes a solution the policy accepts, waits for its
// success and returns its id.
func (s *testServer) decideOne() string {
	s.t.Helper()
	id := s.submit()
	if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
		s.t.Fatalf("proposal: %s", r)
	}
	s.waitStatus(id, "success")
	return id
}

// witnessedProof fetches an intent's proof bundle until its log says whether the
// quorum is met as want, and returns it.
func (s *testServer) witnessedProof(id string, want bool) ([]byte, *intentd.ProofBundle) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.do("GET", "/intents/"+id+"/proof", "", nil)
		var b intentd.ProofBundle
		if r.status == http.StatusOK {
			if err := json.Unmarshal(r.body, &b); err != nil {
				s.t.Fatal(err)
			}
			if b.Log != nil && b.LogWitnesses != nil && b.LogWitnesses.QuorumMet == want {
				return r.body, &b
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the proof of %s never had quorum_met %v: %s", id, want, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// witnessStates reads GET /log/witnesses.
func (s *testServer) witnessStates() []tlog.WitnessStatus {
	s.t.Helper()
	var st struct {
		Witnesses []tlog.WitnessStatus `json:"witnesses"`
	}
	if err := json.Unmarshal(s.do("GET", "/log/witnesses", "", nil).body, &st); err != nil {
		s.t.Fatal(err)
	}
	return st.Witnesses
}

// metric reads one series of the server's metrics, by its name and labels as the
// text format writes them; -1 when absent.
func (s *testServer) metric(series string) float64 {
	s.t.Helper()
	v, ok := metricValue(s.t, string(s.do("GET", "/metrics", "", nil).body), series)
	if !ok {
		return -1
	}
	return v
}

// TestLogWitnesses runs the log with three real witnesses (litewitness) under a
// 2-of-3 policy: cosigned checkpoints are served and verified; a second node with the
// same key and origin but another history is refused by the witnesses, and says so;
// and the witnesses going down one by one leave the log serving, counting the gap.
func TestLogWitnesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three litewitness processes and two servers")
	}
	bin := buildLitewitness(t)
	ws := []*litewitness{startLitewitness(t, bin, "w1"), startLitewitness(t, bin, "w2"), startLitewitness(t, bin, "w3")}
	key, err := crypto.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	if err := os.WriteFile(keyFile, key.EncodeFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	const origin = "log.example.test/intentd"
	vkey, err := note.NewEd25519VerifierKey(origin, key.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		w.register(origin, vkey)
	}
	serverPolicy := writePolicy(t, "", ws...)
	args := []string{"--signing-key", keyFile, "--tlog-origin", origin, "--tlog-witnesses", serverPolicy, "--tlog-witness-interval", "1s"}
	a := startServer(t, args)
	// What a reader holds: the same witnesses and quorum, and the log's key.
	policy, err := iproof.ParsePolicy(mustRead(t, writePolicy(t, vkey, ws...)))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("cosigned checkpoints served and verified", func(t *testing.T) {
		a.t = t
		ids := []string{a.decideOne(), a.decideOne()}
		raw, b := a.witnessedProof(ids[1], true)
		rep, err := iproof.VerifyWitnessed(raw, key.PublicKey(), policy)
		if err != nil {
			t.Fatalf("VerifyWitnessed: %v", err)
		}
		if len(rep.Log.Cosigners) < 2 || len(b.LogWitnesses.Cosigners) < 2 {
			t.Errorf("cosigners %v, the server says %v", rep.Log.Cosigners, b.LogWitnesses.Cosigners)
		}
		cp := a.do("GET", "/log/checkpoint", "", nil)
		if names, err := policy.CheckQuorum(cp.body); err != nil || len(names) < 2 {
			t.Errorf("/log/checkpoint: %v, %v\n%s", names, err, cp.body)
		}
		// Another reader's policy, whose quorum is all three and a fourth witness
		// that never cosigned, refuses the same bundle.
		strict, err := iproof.ParsePolicy(fmt.Appendf(nil, "witness w1 %s\nwitness w2 %s\nwitness w3 %s\nwitness w4 %s\ngroup all4 all w1 w2 w3 w4\nquorum all4\n",
			ws[0].vkey, ws[1].vkey, ws[2].vkey, startLitewitness(t, bin, "w4").vkey))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := iproof.VerifyWitnessed(raw, key.PublicKey(), strict); err == nil || !strings.Contains(err.Error(), "quorum is not met") {
			t.Errorf("a quorum of four: %v", err)
		}
	})

	t.Run("the console shows the cosignatures", func(t *testing.T) {
		a.t = t
		id := a.decideOne()
		a.witnessedProof(id, true)
		b := newConsoleBrowser(t, a)
		b.open("#/proof/" + id)
		b.wait("the witnesses' line", `(document.getElementById("proof-witnesses") || {textContent: ""}).textContent.includes("quorum is met")`, 15*time.Second)
		if n := b.count(`#proof-witnesses li[data-verified="true"]`); n < 2 {
			t.Errorf("%d cosignatures verified in the browser, want 2 or more: %s", n, b.text("#proof-witnesses"))
		}
		b.screenshot("proof-witnessed", `document.getElementById("proof-witnesses")`)
	})

	t.Run("a fork is refused by the witnesses", func(t *testing.T) {
		// Node b has the same key and origin and its own history: five outcomes
		// that are not a's. Each witness holds a's smaller tree: b's first request
		// (from size 0) is answered 409 with a's size, and the next, with a proof
		// from that size in b's tree, 422.
		a.t = t
		var held uint64
		for _, w := range a.witnessStates() {
			held = max(held, w.Cosigned)
		}
		b := startServer(t, args)
		ids := make([]string, 5)
		for i := range ids {
			ids[i] = b.decideOne()
		}
		_, bundle := b.witnessedProof(ids[4], false)
		if !strings.Contains(bundle.LogWitnesses.Message, "no checkpoint") {
			t.Errorf("b's bundle says %+v", bundle.LogWitnesses)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			r := b.do("GET", "/readyz", "", nil)
			if strings.Count(string(r.body), "ALARM 422") == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("b's /readyz: %s", r)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, w := range b.witnessStates() {
			if w.Size != held || !strings.HasPrefix(w.Alarm, "422") {
				t.Errorf("b's witness %s: size %d (not resynchronised to a's %d by its 409), alarm %q", w.Name, w.Size, held, w.Alarm)
			}
			if n := b.metric(fmt.Sprintf(`intentd_tlog_witness_alarms_total{witness=%q}`, w.Name)); n < 1 {
				t.Errorf("b's alarms of %s: %v", w.Name, n)
			}
		}
		if !strings.Contains(b.logs.String(), "ALARM: a witness refuses the log's checkpoint") {
			t.Error("b logged no alarm")
		}
		if chromiumPath() != "" && !testing.Short() {
			br := newConsoleBrowser(t, b)
			br.open("#/proof/" + ids[4])
			br.wait("the witnesses' alarms", `(document.getElementById("witness-alarms") || {textContent: ""}).textContent.includes("ALARM 422")`, 15*time.Second)
			br.screenshot("proof-witness-alarms", `document.getElementById("witness-alarms")`)
		}
		// a is not disturbed: its next outcome is cosigned.
		a.witnessedProof(a.decideOne(), true)
	})

	t.Run("witnesses down", func(t *testing.T) {
		a.t = t
		ws[2].stop()
		raw, _ := a.witnessedProof(a.decideOne(), true)
		if rep, err := iproof.VerifyWitnessed(raw, key.PublicKey(), policy); err != nil || len(rep.Log.Cosigners) != 2 {
			t.Fatalf("with w3 down: %v, %v", rep, err)
		}
		if n := a.metric(`intentd_tlog_witness_failures_total{witness="w3"}`); n < 1 {
			t.Errorf("failures of w3: %v", n)
		}
		if r := a.do("GET", "/readyz", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), "witness w3: unreachable") {
			t.Errorf("/readyz: %s", r)
		}

		// With two down the quorum cannot be met: the log goes on, its proofs
		// against its own checkpoint, and the gap is counted.
		ws[1].stop()
		a.decideOne()
		raw, b := a.witnessedProof(a.decideOne(), false)
		if _, err := iproof.Verify(raw, key.PublicKey()); err != nil {
			t.Errorf("the bundle without the quorum does not verify as a bundle: %v", err)
		}
		if _, err := iproof.VerifyWitnessed(raw, key.PublicKey(), policy); err == nil {
			t.Error("a bundle without the quorum passes VerifyWitnessed")
		}
		if b.LogWitnesses.Message == "" {
			t.Error("the bundle does not say the quorum is not met")
		}
		if n := a.metric("intentd_tlog_uncosigned_leaves"); n < 2 {
			t.Errorf("intentd_tlog_uncosigned_leaves %v, want 2 or more", n)
		}
		cp := a.do("GET", "/log/checkpoint", "", nil)
		if _, err := policy.CheckQuorum(cp.body); cp.status != http.StatusOK || err != nil {
			t.Errorf("/log/checkpoint serves no cosigned checkpoint: %s, %v", cp, err)
		}
		if r := a.do("GET", "/readyz", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), "not yet covered") {
			t.Errorf("/readyz: %s", r)
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// freeAddr is a loopback address with a port free now, for a process that takes no
// listener of ours.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestWitnessFlags checks that the log's origin and witness flags refuse what cannot
// be meant, naming the flag.
func TestWitnessFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--tlog-origin", "https://log.example.com/intentd"}, {"--tlog-origin", "log.example.com/intentd/"},
		{"--tlog-origin", "log example"}, {"--tlog-origin", "{log"},
		{"--tlog-witness-interval", "0s"}, {"--tlog-witnesses", "w.policy", "--tlog=false"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			m := NewMain()
			m.Stderr = &syncbuf.Buffer{}
			m.LookupEnv = func(string) (string, bool) { return "", false }
			if err := m.ParseFlags(args); err == nil || !strings.Contains(err.Error(), args[0]) {
				t.Fatalf("ParseFlags(%q) = %v, want an error naming %s", args, err, args[0])
			}
		})
	}
}

// TestOriginFixed checks that a log of outcomes refuses another origin at start, naming
// the one it has, while an empty log takes a new one; and that a witness policy the log
// cannot use (a witness without URL) stops the start.
func TestOriginFixed(t *testing.T) {
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	_, keyID := s.serviceKey()
	s.decideOne()
	s.logReader().waitCheckpoint(t, 1)
	if err := s.m.Close(); err != nil {
		t.Fatal(err)
	}
	err := runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", dir, "--tlog-origin", "log.example.com/intentd"})
	if err == nil || !strings.Contains(err.Error(), "--tlog-origin") || !strings.Contains(err.Error(), "intentd/"+keyID) ||
		!strings.Contains(err.Error(), "start with no --tlog-origin") {
		t.Fatalf("Run under another origin: %v, want a refusal naming the log's origin", err)
	}
	s = startServerIn(t, dir, nil)
	if lr := s.logReader(); lr.origin != "intentd/"+keyID {
		t.Fatalf("origin %s after the refused start", lr.origin)
	}

	empty := startServer(t, []string{"--tlog-origin", "log.example.com/new"})
	if lr := empty.logReader(); lr.origin != "log.example.com/new" {
		t.Fatalf("a new log's origin %s", lr.origin)
	}

	policy := filepath.Join(t.TempDir(), "w.policy")
	_, priv, _ := ed25519.GenerateKey(nil)
	cs, err := torchwood.NewCosignatureSigner("w1.example", priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte("witness w1 "+cs.Verifier().String()+"\nquorum w1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = runRefused(t, []string{"--listen", "127.0.0.1:0", "--data", t.TempDir(), "--tlog-witnesses", policy})
	if err == nil || !strings.Contains(err.Error(), "witness w1 has no URL") {
		t.Fatalf("Run with a witness without URL: %v", err)
	}
}
