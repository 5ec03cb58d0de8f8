//go:build unix

package persistence

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestOpenLocked opens a store that another process holds open: the error names the
// lock and what to do, not only "resource temporarily unavailable". The other process
// is this test binary again, holding the store until it is killed.
func TestOpenLocked(t *testing.T) {
	if dir := os.Getenv("INTENTD_TEST_HOLD_STORE"); dir != "" {
		s, err := Open(dir, Options{})
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		defer s.Close()
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenLocked$")
	cmd.Env = append(os.Environ(), "INTENTD_TEST_HOLD_STORE="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("the other process: %q", line)
	}
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "another process holds its LOCK file") {
		t.Fatalf("Open of a store another process holds: %v", err)
	}
}
