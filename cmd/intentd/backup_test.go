package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	tclient "github.com/transparency-dev/tessera/client"

	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/crypto"
	"github.com/intentd/intentd/internal/backup"
	iproof "github.com/intentd/intentd/proof"
)

// takeBackup saves a backup of s through the client, as intentctl backup does, checks it
// whole, and returns its path.
func (s *testServer) takeBackup() string {
	s.t.Helper()
	c, err := client.NewClient(s.url)
	if err != nil {
		s.t.Fatal(err)
	}
	c.Token = s.token
	path := filepath.Join(s.t.TempDir(), "backup.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := c.Backup(context.Background(), f); err != nil {
		s.t.Fatalf("backup: %v", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		s.t.Fatal(err)
	}
	if _, err := backup.Check(f); err != nil {
		s.t.Fatalf("the backup is not whole: %v", err)
	}
	return path
}

// restoreArgs are the flags that restore a backup of the server on dir into, and start
// on, a fresh folder: Pebble there, or on NATS a fresh embedded server there, with the
// stream's prefix of the server backed up.
func restoreArgs(dir string) []string {
	if testNATS == "" {
		return nil
	}
	args := storeArgs(dir, nil)
	return []string{"--nats-embed", args[2], args[3]}
}

// restore runs intentd restore with the flags of a server on dir, and returns what it
// printed and its exit code.
func restore(t *testing.T, dir, file string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	all := append(append([]string{"--data", dir}, args...), file)
	code := runRestore(context.Background(), all, nil, &out, &out)
	return out.String(), code
}

// load creates and decides intents on s from workers goroutines until stop is closed,
// and reports each intent whose creation, and each whose proposal, was acknowledged,
// with the time of the acknowledgement. It talks HTTP itself: a test's helpers may not fail it from here.
type load struct {
	mu       sync.Mutex
	created  map[string]time.Time
	proposed map[string]time.Time
	errs     []string
	done     chan struct{}
}

func startLoad(s *testServer, stop <-chan struct{}, workers int) *load {
	l := &load{created: map[string]time.Time{}, proposed: map[string]time.Time{}, done: make(chan struct{})}
	post := func(path string, body []byte) (int, error) {
		req, _ := http.NewRequest("POST", s.url+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if s.token != "" {
			req.Header.Set("Authorization", "Bearer "+s.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := uuid.NewString()
				intent := s.intentJSON(id)
				auth, err := crypto.SignEd25519(s.key, intent)
				if err != nil {
					l.fail("sign: %v", err)
					return
				}
				a, _ := json.Marshal(auth)
				if code, err := post("/intents", fmt.Appendf(nil, `{"intent":%s,"authorship":%s}`, intent, a)); err != nil || code != http.StatusOK {
					l.fail("POST /intents: %d %v", code, err)
					return
				}
				l.note(l.created, id)
				if i%5 == 4 {
					continue // left open
				}
				if code, err := post("/intents/"+id+"/proposal", []byte(`{"solution":"`+solutionPasses+`"}`)); err != nil || code != http.StatusOK {
					l.fail("POST proposal: %d %v", code, err)
					return
				}
				l.note(l.proposed, id)
			}
		})
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

func (l *load) note(m map[string]time.Time, id string) {
	l.mu.Lock()
	m[id] = time.Now()
	l.mu.Unlock()
}

func (l *load) fail(format string, args ...any) {
	l.mu.Lock()
	l.errs = append(l.errs, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// before returns the ids of m acknowledged before t.
func (l *load) before(m map[string]time.Time, t time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	for id, at := range m {
		if at.Before(t) {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestBackupUnderLoad backs a running server up while a load creates and decides
// intents, restores the backup into a fresh folder (on NATS, a fresh embedded NATS
// server), starts intentd on it, and checks that everything acknowledged before the
// backup began is there: each intent with its status (or, if its proposal was being
// proved, proved to its outcome by the start's recovery), each proof verifying under the
// same key, and the transparency log's checkpoint an extension of the one served before.
func TestBackupUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, nil)
	pub, _ := s.serviceKey()
	decided := s.decideMany(30)
	open := []string{s.submit(), s.submit()}
	lr := s.logReader()
	cpBefore, _ := lr.waitCheckpoint(t, uint64(len(decided)))
	want := map[string]string{}
	for i, id := range decided {
		w := "success"
		if i%7 == 0 {
			w = "failure"
		}
		s.waitStatus(id, w)
		want[id] = w
	}
	for _, id := range open {
		want[id] = "open"
	}

	stop := make(chan struct{})
	l := startLoad(s, stop, 4)
	time.Sleep(300 * time.Millisecond) // the load under way
	began := time.Now()
	file := s.takeBackup()
	time.Sleep(100 * time.Millisecond) // and going on after it
	close(stop)
	<-l.done
	if len(l.errs) > 0 {
		t.Fatalf("the load failed: %v", l.errs)
	}
	created, proposed := l.before(l.created, began), l.before(l.proposed, began)
	t.Logf("backup of %d bytes taken under a load that had created %d intents (%d proposed) when it began, %d in all",
		fileSize(t, file), len(created), len(proposed), len(l.created))
	if len(created) == 0 {
		t.Fatal("the load created nothing before the backup began")
	}

	dir2 := t.TempDir()
	if out, code := restore(t, dir2, file, restoreArgs(dir)...); code != 0 {
		t.Fatalf("intentd restore: exit %d\n%s", code, out)
	}
	r := startServerIn(t, dir2, restoreArgs(dir))
	if pub2, _ := r.serviceKey(); !bytes.Equal(pub, pub2) {
		t.Fatal("the restored server signs with another key")
	}
	for id, w := range want {
		if got := r.status(id)["status"]; got != w {
			t.Errorf("intent %s is %v after the restore, want %s", id, got, w)
		}
	}
	isProposed := map[string]bool{}
	for _, id := range proposed {
		isProposed[id] = true
	}
	for _, id := range created {
		if !isProposed[id] {
			if st := r.status(id)["status"]; st != "open" && st != "success" {
				t.Errorf("intent %s, open when the backup began, is %v after the restore", id, st)
			}
			continue
		}
		// Decided before the backup, or processing in it and proved by the
		// restored server's recovery: success either way.
		r.waitStatus(id, "success")
	}
	for _, id := range slices.Concat(decided, proposed) {
		p := r.do("GET", "/intents/"+id+"/proof", "", nil)
		if _, err := iproof.Verify(p.body, pub); err != nil {
			t.Errorf("the proof of %s after the restore: %v\n%s", id, err, p)
		}
	}
	checkExtends(t, r, cpBefore)
}

// checkExtends waits for the restored server's log to hold as many leaves as before and
// checks that its checkpoint is consistent with the earlier one.
func checkExtends(t *testing.T, r *testServer, before *log.Checkpoint) {
	t.Helper()
	lr := r.logReader()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	var cp *log.Checkpoint
	for {
		c, _, _, err := tclient.FetchCheckpoint(ctx, lr.f.ReadCheckpoint, lr.verifier, lr.origin)
		if err != nil {
			t.Fatalf("the restored checkpoint does not verify: %v", err)
		}
		if c.Size >= before.Size {
			cp = c
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restored log has %d leaves after 20s, want %d or more", c.Size, before.Size)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pb, err := tclient.NewProofBuilder(ctx, cp.Size, lr.f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := pb.ConsistencyProof(ctx, before.Size, cp.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, before.Size, cp.Size, cons, before.Hash, cp.Hash); err != nil {
		t.Fatalf("the restored log (%d leaves) is not consistent with the one before the backup (%d): %v", cp.Size, before.Size, err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestBackupWhileProcessing backs up a server while a proposal is being proved (its
// evidence service holds the answer): the intent is restored processing, and the
// restored server's start-up recovery proves it to its outcome.
func TestBackupWhileProcessing(t *testing.T) {
	t.Parallel()
	es := newEvidenceService(t)
	dir := t.TempDir()
	s := startServerIn(t, dir, []string{"--extractor-url", es.URL})
	id := s.submit()
	if r := s.propose(id, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("propose: %s", r)
	}
	<-es.started
	file := s.takeBackup()
	if err := s.m.Close(); err != nil { // the proving in flight is cancelled
		t.Fatal(err)
	}
	es.free()

	dir2 := t.TempDir()
	if out, code := restore(t, dir2, file, restoreArgs(dir)...); code != 0 {
		t.Fatalf("intentd restore: exit %d\n%s", code, out)
	}
	r := startServerIn(t, dir2, append(restoreArgs(dir), "--extractor-url", es.URL))
	r.waitStatus(id, "success")
	pub, _ := r.serviceKey()
	if _, err := iproof.Verify(r.do("GET", "/intents/"+id+"/proof", "", nil).body, pub); err != nil {
		t.Fatalf("the proof of the intent proved after the restore: %v", err)
	}
}

// TestRestoreRefuses checks what a restore refuses: a target that holds anything, a
// backup cut short or changed, a backup of the other kind of store, and that none of
// them leaves anything where intentd would start.
func TestRestoreRefuses(t *testing.T) {
	t.Parallel()
	dir0 := t.TempDir()
	s := startServerIn(t, dir0, nil)
	s.decideMany(3)
	file := s.takeBackup()
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	write := func(b []byte) string {
		p := filepath.Join(t.TempDir(), "b.tar.gz")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := bytes.Clone(whole)
	flipped[len(flipped)*2/3] ^= 0x01
	other := "--nats-embed"
	if testNATS != "" {
		other = "--store=pebble"
	}
	for _, tc := range []struct {
		name, file string
		args       []string
		nonEmpty   bool
		want       string
	}{
		{"a folder that holds something", file, restoreArgs(dir0), true, "is not empty"},
		{"cut short", write(whole[:len(whole)/2]), restoreArgs(dir0), false, "the backup is cut short"},
		{"cut before its list of files", write(whole[:len(whole)-40]), restoreArgs(dir0), false, "the backup is"},
		{"a byte changed", write(flipped), restoreArgs(dir0), false, "the backup is damaged"},
		{"not a backup", write([]byte("this is a text file, and no backup of anything\n")), restoreArgs(dir0), false, "the backup is damaged or not an intentd backup"},
		{"missing", filepath.Join(t.TempDir(), "none.tar.gz"), restoreArgs(dir0), false, "no such file"},
		{"the other store", file, []string{other}, false, "the flags name"},
		{"a log folder that holds something", file, append(restoreArgs(dir0), "--tlog-dir", dir0), false, "the log folder (--tlog-dir)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if tc.nonEmpty {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, code := restore(t, dir, tc.file, tc.args...)
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, %q; want 1 and %q", code, out, tc.want)
			}
			entries, _ := os.ReadDir(filepath.Dir(dir))
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if tc.nonEmpty && (len(names) != 1 || names[0] != "data") || !tc.nonEmpty && len(names) != 0 {
				t.Fatalf("the restore left %v beside the target", names)
			}
		})
	}
	t.Run("usage", func(t *testing.T) {
		var out bytes.Buffer
		if code := runRestore(context.Background(), nil, nil, &out, &out); code != 2 || !strings.Contains(out.String(), "usage: intentd restore") {
			t.Fatalf("exit %d, %q", code, out.String())
		}
	})
}

// TestBackupRole checks that a backup needs the admin role.
func TestBackupRole(t *testing.T) {
	t.Parallel()
	s := startServer(t, []string{"--tokens", writeTokens(t)})
	for _, tc := range []struct {
		token string
		want  int
	}{
		{"", http.StatusUnauthorized},
		{readToken, http.StatusForbidden},
		{submitToken, http.StatusForbidden},
		{adminToken, http.StatusOK},
	} {
		auth := ""
		if tc.token != "" {
			auth = "Bearer " + tc.token
		}
		r := s.do("POST", "/admin/backup", "", nil, "Authorization", auth)
		if r.status != tc.want {
			t.Errorf("token %q: %d, want %d", tc.token, r.status, tc.want)
		}
		if r.status == http.StatusOK {
			if _, err := backup.Check(bytes.NewReader(r.body)); err != nil {
				t.Errorf("the answer is not a whole backup: %v", err)
			}
		}
	}
}
