package docs

import (
	"bufio"
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
	"testing"
	"time"
)

// server is an intentd the test started, from the binary it built.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string // http://127.0.0.1:PORT
	addr string // 127.0.0.1:PORT
	done chan struct{}
}

// startServer starts intentd on a free port of the loopback interface and a fresh data
// folder, with the flags a document's marker gives, and waits until it is ready.
func startServer(t *testing.T, bin string, flags []string) *server {
	t.Helper()
	data := t.TempDir()
	args := append([]string{"--listen", "127.0.0.1:0", "--data", data, "--log-format", "json"}, flags...)
	cmd := exec.Command(filepath.Join(bin, "intentd"), args...)
	cmd.Env = append(os.Environ(), "HOME="+data)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	var tail strings.Builder
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var rec struct{ Msg, URL string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				found <- rec.URL
			}
			if tail.Len() < 8<<10 {
				tail.WriteString(sc.Text() + "\n")
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case s.url = <-found:
	case <-s.done:
		_ = cmd.Wait()
		t.Fatalf("intentd %v did not start:\n%s", flags, tail.String())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("intentd %v did not start within 30s", flags)
	}
	s.addr = strings.TrimPrefix(s.url, "http://")
	t.Cleanup(s.stop)
	s.waitReady()
	return s
}

// stop ends the server as an operator does, with SIGINT, and waits for it.
func (s *server) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = s.cmd.Wait()
}

func (s *server) get(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), err
}

func (s *server) waitReady() {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.get("/readyz"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatal("intentd is not ready after 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settle waits until the server is as a person typing the next command finds it: no
// proposal being decided, and the transparency log's checkpoint covering every outcome.
// A test types faster than that; without the wait, what a command prints would depend
// on how fast the machine is.
func (s *server) settle() {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, why := s.settled()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the server did not settle within 10s: %s", why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) settled() (bool, string) {
	metrics, err := s.get("/metrics")
	if err != nil {
		return false, err.Error()
	}
	m := parseMetrics(metrics)
	processing, decided := m[`intentd_intent_transitions_total{state="processing"}`], m[`intentd_intent_transitions_total{state="success"}`]+m[`intentd_intent_transitions_total{state="failure"}`]
	if processing > decided || m["intentd_proving_running"]+m["intentd_proving_queued"] > 0 {
		return false, fmt.Sprintf("%v proposals, %v decided", processing, decided)
	}
	if n := m["intentd_webhook_deliveries_in_flight"]; n > 0 {
		// A delivery a receiver took, or is taking, moves the endpoint's position a
		// moment after: a sample that shows the position waits for it.
		return false, fmt.Sprintf("%v webhook deliveries under way", n)
	}
	cp, err := s.get("/log/checkpoint")
	if err != nil {
		return true, "" // no log (--tlog=false), or none yet with no outcome
	}
	lines := strings.Split(cp, "\n")
	size := -1.0
	if len(lines) > 1 {
		size, _ = strconv.ParseFloat(lines[1], 64)
	}
	if events := m["intentd_events_published_total"]; size < events {
		return false, fmt.Sprintf("the checkpoint covers %v of %v outcomes", size, events)
	}
	return true, ""
}

// parseMetrics sums the samples of the Prometheus text by name and the one label the
// settling looks at, state.
func parseMetrics(text string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		name, labels, _ := strings.Cut(line[:sp], "{")
		if _, after, ok := strings.Cut(labels, `state="`); ok {
			state, _, _ := strings.Cut(after, `"`)
			name += `{state="` + state + `"}`
		}
		out[name] += v
	}
	return out
}
