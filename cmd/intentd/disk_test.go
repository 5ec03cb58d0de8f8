package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestFullDisk runs intentd on a small file system (a tmpfs the test mounts, so it
// needs root; it skips, saying so, without) and fills it: new intents are answered
// 503 storage_full with Retry-After, reads of what is stored go on, the service stays
// up, and writes are taken again, on their own, once space is freed.
func TestFullDisk(t *testing.T) {
	// Not parallel: mounts a tmpfs and fills it, measuring free space.
	ownStores(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a full disk needs a small file system: mounting a tmpfs failed (%v: %s); run as root to test it", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	const margin = 24 << 20
	s := startServerIn(t, filepath.Join(dir, "data"), []string{"--min-free-disk", strconv.Itoa(margin)})
	stored := s.submit()

	fill(t, filepath.Join(dir, "filler"), 128<<20)

	deadline := time.Now().Add(10 * time.Second)
	for {
		intent := s.intentJSON(uuid.NewString())
		r := s.postIntent(authored(t, intent, s.signEd25519(intent)))
		if r.status == http.StatusServiceUnavailable {
			if code, msg := r.errorBody(t); code != "storage_full" || !strings.Contains(msg, "storage is full") || r.header.Get("Retry-After") == "" {
				t.Fatalf("a write on a full disk: %s (Retry-After %q), want 503 storage_full saying so", r, r.header.Get("Retry-After"))
			}
			break
		}
		if r.status != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("a write while the disk fills: %s, want 200 and then 503 storage_full", r)
		}
	}
	if r := s.do("GET", "/readyz", "", nil); r.status != http.StatusServiceUnavailable {
		t.Fatalf("GET /readyz on a full disk: %s, want 503 storage_full", r)
	} else if code, _ := r.errorBody(t); code != "storage_full" {
		t.Fatalf("GET /readyz on a full disk: %s, want the code storage_full", r)
	}
	if st := s.status(stored); st["status"] != "open" {
		t.Fatalf("status of a stored intent on a full disk: %v, want it read", st)
	}
	if r := s.do("GET", "/intents/"+stored, "", nil); r.status != http.StatusOK {
		t.Fatalf("GET of a stored intent on a full disk: %s", r)
	}

	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		intent := s.intentJSON(uuid.NewString())
		r := s.postIntent(authored(t, intent, s.signEd25519(intent)))
		if r.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a write after space returned: %s, want 200 within 10 s", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := s.do("GET", "/readyz", "", nil); r.status != http.StatusOK {
		t.Fatalf("GET /readyz once space returned: %s", r)
	}
	if r := s.propose(stored, solutionPasses); r.status != http.StatusOK {
		t.Fatalf("proposal after space returned: %s", r)
	}
	s.waitStatus(stored, "success")
}

// TestFullDiskFirstStart starts intentd for the first time on a small file system that
// is already full (a tmpfs the test mounts; it skips without root): the start is
// refused with one line naming the data folder and saying its disk is full, and once
// space is freed the next start creates the store, which the first one had begun.
func TestFullDiskFirstStart(t *testing.T) {
	// Not parallel: mounts a tmpfs and fills it, measuring free space.
	ownStores(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a full disk needs a small file system: mounting a tmpfs failed (%v: %s); run as root to test it", err, strings.TrimSpace(string(out)))
	}
	// Lazily: Pebble keeps the manifest it could not write open when its first open
	// stops, and the process, which a refused start ends, is this test's.
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	fill(t, filepath.Join(dir, "filler"), 0)

	data := filepath.Join(dir, "data")
	args := []string{"--listen", "127.0.0.1:0", "--data", data, "--min-free-disk", "1048576"}
	err := runRefused(t, args)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), data) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("a first start on a full disk: %v, want one line naming %s and saying it has no space left", err, data)
	}
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	s := startServerIn(t, data, args[4:])
	s.submit()
	if !strings.Contains(s.logs.String(), "never completely created") {
		t.Errorf("the start after the full disk does not warn that the store is created afresh; the log:\n%s", s.logs)
	}
}

// fill writes the file name until its file system is full, or it holds more than most
// bytes (0: no bound).
func fill(t *testing.T, name string, most int64) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for n := int64(0); most == 0 || n <= most; n += int64(len(chunk)) {
		if _, err := f.Write(chunk); err != nil {
			return // the file system is full
		}
	}
}
