package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// countSeries counts the series of a text exposition: its lines that are not comments.
func countSeries(t *testing.T, exposition string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(strings.NewReader(exposition))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// memoryInUse is the heap in use after a collection and the resident set of the
// process (0 where /proc is not), for the test log: the server runs in the test's
// process.
func memoryInUse() (heap, rss uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				fmt.Sscanf(strings.TrimSpace(v), "%d", &rss)
				rss <<= 10
			}
		}
	}
	return ms.HeapInuse, rss
}

// floodRequest is the i-th request of a flood: made-up methods and unknown paths, each
// new, so that none would share a series if a label took what the request sent.
func floodRequest(i int) (method, path string) {
	switch i % 4 {
	case 0:
		return fmt.Sprintf("M%dX", i), "/x"
	case 1:
		return "GET", fmt.Sprintf("/nowhere/%d", i)
	case 2:
		return fmt.Sprintf("M%dX", i), fmt.Sprintf("/intents/%d/proof", i)
	default:
		return "OPTIONS", fmt.Sprintf("/policies/%d", i)
	}
}

// TestMetricsSeriesFlat floods a real server over HTTP with made-up methods and
// unknown paths, from callers with no token, a wrong one and a valid one, and checks
// that /metrics has as many series after as before. The memory of the process is
// logged, not checked: it moves with the garbage collector and the test runner.
func TestMetricsSeriesFlat(t *testing.T) {
	t.Parallel()
	const flood = 12000
	tests := []struct {
		name string
		args []string
		auth []string // the Authorization headers of the flood's requests, in turn
	}{
		{"no tokens", nil, []string{""}},
		{"tokens", []string{"--tokens", writeTokens(t)}, []string{"", "Bearer not-a-token", "Bearer " + metricsToken, "Bearer " + readToken}},
	}
	// Request logs would pile up in the test's buffer and hide what the server keeps.
	quiet := []string{"--log-level", "warn"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, append(quiet, tt.args...))
			scrape := func() string {
				r := s.do("GET", "/metrics", "", nil)
				if r.status != http.StatusOK {
					t.Fatalf("GET /metrics: %s", r)
				}
				return string(r.body)
			}
			// A client of its own: the answers to OPTIONS are httprouter's, which the
			// OpenAPI document does not describe.
			tr := &http.Transport{MaxIdleConnsPerHost: 8}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
			send := func(i int) error {
				method, path := floodRequest(i)
				req, err := http.NewRequest(method, s.url+path, nil)
				if err != nil {
					return err
				}
				if auth := tt.auth[i%len(tt.auth)]; auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					return err
				}
				if resp.StatusCode >= 500 {
					return fmt.Errorf("%s %s: %s", method, path, resp.Status)
				}
				return nil
			}
			// Each kind of request with each header first, so that every series the
			// flood may touch exists before the count.
			for i := range 4 * len(tt.auth) {
				if err := send(i); err != nil {
					t.Fatal(err)
				}
			}
			scrape()
			before := countSeries(t, scrape())
			heapBefore, rssBefore := memoryInUse()

			next := make(chan int)
			var failed sync.Once
			var firstErr error
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for i := range next {
						if err := send(i); err != nil {
							failed.Do(func() { firstErr = err })
						}
					}
				})
			}
			for i := range flood {
				next <- i
			}
			close(next)
			wg.Wait()
			if firstErr != nil {
				t.Fatal(firstErr)
			}

			exposition := scrape()
			after := countSeries(t, exposition)
			heapAfter, rssAfter := memoryInUse()
			t.Logf("%d series before %d requests, %d after; /metrics %d bytes; heap in use %d -> %d KiB, resident %d -> %d KiB",
				before, flood, after, len(exposition), heapBefore>>10, heapAfter>>10, rssBefore>>10, rssAfter>>10)
			if after != before {
				t.Fatalf("%d series before the flood, %d after", before, after)
			}
		})
	}
}
