package webhook

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/intentd/intentd"
	"github.com/intentd/intentd/internal/benchcpu"
)

// receiverEnv makes the test binary a webhook receiver in a process of its own, so
// that the benchmark's CPU figures are the sender's alone.
const receiverEnv = "INTENTD_WEBHOOK_BENCH_RECEIVER"

func TestMain(m *testing.M) {
	if os.Getenv(receiverEnv) != "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(ln.Addr().String())
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startReceiverProcess runs the receiver in a child process and returns its URL.
func startReceiverProcess(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), receiverEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("the receiver process did not say its address: %v", err)
	}
	return "http://" + line[:len(line)-1] + "/hooks"
}

// BenchmarkDelivery delivers b.N events, written at 1,000 a second, to one healthy
// endpoint in another process, and reports the sender's CPU per delivery: the HMAC
// signature (and with v1a the Ed25519 one), the request and its answer over a kept
// connection, the filters and the bookkeeping of the position. The store is in memory:
// on a real one the position is written at most five times a second, whatever the rate
// (docs/benchmarks.md, "Webhooks"). The target is 20 µs.
func BenchmarkDelivery(b *testing.B) {
	for _, asym := range []bool{false, true} {
		b.Run(fmt.Sprintf("v1a=%v", asym), func(b *testing.B) { benchDelivery(b, asym) })
	}
}

func benchDelivery(b *testing.B, asymmetric bool) {
	url := startReceiverProcess(b)
	store, log := newMemStore(), newMemLog()
	_, key, _ := ed25519GenerateKey()
	s := New(Options{Store: store, Source: log, Log: log, Key: key, AllowPrivate: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wh, err := s.CreateWebhook(ctx, intentd.WebhookSpec{URL: url, Asymmetric: asymmetric})
	if err != nil {
		b.Fatal(err)
	}
	// One delivery first, so that the connection is open and the deliverer running.
	first := log.add(intentd.StateSuccess, "P", "")
	waitDelivered(b, s, wh.ID, first)
	b.ResetTimer()
	start := benchcpu.Now()
	tick := time.NewTicker(time.Millisecond)
	var last uint64
	for range b.N {
		<-tick.C
		last = log.add(intentd.StateSuccess, "P", "")
	}
	tick.Stop()
	waitDelivered(b, s, wh.ID, last)
	b.StopTimer()
	benchcpu.ReportMicros(b, start, "delivery")
}

func waitDelivered(b *testing.B, s *Service, id string, through uint64) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		w, err := s.Webhook(context.Background(), id)
		if err == nil && w.Delivered >= through {
			if w.Status != intentd.WebhookActive {
				b.Fatalf("endpoint %s", w.Status)
			}
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("delivered through %d after a minute, want %d (%v)", w.Delivered, through, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkPostFloor is the floor under BenchmarkDelivery: a bare http.Client POST of
// an event-sized body to the same receiver process over a kept connection, nothing
// signed or recorded; back to back, and paced as BenchmarkDelivery's events are, one a
// millisecond, where each request wakes an idle process and its connection's
// goroutines.
func BenchmarkPostFloor(b *testing.B) {
	for _, paced := range []bool{false, true} {
		b.Run(fmt.Sprintf("paced=%v", paced), func(b *testing.B) { benchPostFloor(b, paced) })
	}
}

func benchPostFloor(b *testing.B, paced bool) {
	url := startReceiverProcess(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	body := make([]byte, 600)
	post := func() {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post()
	b.ResetTimer()
	start := benchcpu.Now()
	var tick <-chan time.Time
	if paced {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	for range b.N {
		if paced {
			<-tick
		}
		post()
	}
	b.StopTimer()
	benchcpu.ReportMicros(b, start, "post")
}

// BenchmarkPacing is what BenchmarkDelivery's own pacing costs the process: a ticker
// of a millisecond, waking an otherwise idle process a thousand times a second, with
// nothing else done. It is in BenchmarkDelivery's figure, and not the sender's work.
func BenchmarkPacing(b *testing.B) {
	start := benchcpu.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for range b.N {
		<-tick.C
	}
	benchcpu.ReportMicros(b, start, "tick")
}
