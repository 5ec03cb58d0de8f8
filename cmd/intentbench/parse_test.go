package main

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHistQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name   string
		values func(i int) time.Duration
	}{
		{"small exact values", func(i int) time.Duration { return time.Duration(i % 100) }},
		{"one value", func(int) time.Duration { return 3 * time.Millisecond }},
		{"uniform to a second", func(int) time.Duration { return time.Duration(rng.Int64N(int64(time.Second))) }},
		{"long tail", func(int) time.Duration { return time.Duration(rng.ExpFloat64() * float64(5*time.Millisecond)) }},
		{"negative counts as zero", func(i int) time.Duration { return -time.Duration(i) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			vals := make([]time.Duration, 10000)
			for i := range vals {
				vals[i] = tt.values(i)
				h.Record(vals[i])
				vals[i] = max(vals[i], 0)
			}
			slices.Sort(vals)
			if h.Count() != uint64(len(vals)) || h.Max() != vals[len(vals)-1] {
				t.Fatalf("count %d max %v, want %d and %v", h.Count(), h.Max(), len(vals), vals[len(vals)-1])
			}
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
				exact := vals[max(int(float64(len(vals))*q+0.999999)-1, 0)]
				got := h.Quantile(q)
				if diff := got - exact; diff > exact/64+1 || -diff > exact/64+1 {
					t.Errorf("q%v = %v, exact %v: more than 1/64 off", q, got, exact)
				}
			}
		})
	}
	var empty hist
	if empty.Quantile(0.99) != 0 || empty.Mean() != 0 {
		t.Error("an empty histogram should report zeros")
	}
}

func TestBuckets(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1e6, 1e9, 1<<62 + 12345, 1<<64 - 1} {
		i := bucketOf(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d, out of range", v, i)
		}
		if mid := bucketMid(i); bucketOf(mid) != i {
			t.Errorf("bucketMid(%d) = %d falls in bucket %d", i, mid, bucketOf(mid))
		}
		if v > 0 && bucketOf(v-1) > i {
			t.Errorf("buckets not monotonic at %d", v)
		}
	}
}

func TestSSEReader(t *testing.T) {
	type got struct {
		id   uint64
		typ  string
		data string
	}
	tests := []struct {
		name    string
		stream  string
		want    []got
		wantErr error
	}{
		{"the server's frames", "retry: 3000\n\nid: 1\nevent: success\ndata: {\"a\":1}\n\n: heartbeat\n\nid: 2\nevent: failure\ndata: {}\n\n",
			[]got{{1, "success", `{"a":1}`}, {2, "failure", "{}"}}, io.EOF},
		{"CRLF line ends", "id: 7\r\nevent: expired\r\ndata: x\r\n\r\n", []got{{7, "expired", "x"}}, io.EOF},
		{"two data lines joined", "data: a\ndata: b\n\n", []got{{0, "", "a\nb"}}, io.EOF},
		{"no space after the colon", "id:5\ndata:z\n\n", []got{{5, "", "z"}}, io.EOF},
		{"an id without data is no event", "id: 3\n\ndata: y\n\n", []got{{0, "", "y"}}, io.EOF},
		{"cut in the middle of a line", "id: 1\ndata: {", nil, io.ErrUnexpectedEOF},
		{"cut before the blank line", "id: 1\ndata: x\n", nil, io.EOF},
		{"a bad id", "id: x1\ndata: q\n\n", nil, errSSELine},
		{"an unknown field", "bogus: 1\n\n", nil, errSSELine},
		{"a long line", "data: " + strings.Repeat("x", 40000) + "\n\n", []got{{0, "", strings.Repeat("x", 40000)}}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := newSSEReader(strings.NewReader(tt.stream))
			var all []got
			var err error
			for {
				var ev sseEvent
				if ev, err = rd.Next(); err != nil {
					break
				}
				all = append(all, got{ev.ID, string(ev.Type), string(ev.Data)})
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ended with %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(all, tt.want) {
				t.Errorf("events %v, want %v", all, tt.want)
			}
		})
	}
}

// FuzzSSEReader: whatever a server sends, the reader ends with an error instead of
// panicking or looping, and every event it returns has data.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("retry: 3000\n\nid: 1\nevent: success\ndata: {\"intent_id\":\"x\"}\n\n"))
	f.Add([]byte("id: 18446744073709551616\ndata: x\n\n"))
	f.Add([]byte(":\n\r\n\n\ndata\n\n"))
	f.Add([]byte("data: a\rdata: b\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := newSSEReader(bytes.NewReader(b))
		for range len(b) + 1 {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			if ev.Data == nil {
				t.Fatalf("event without data from %q", b)
			}
		}
		if _, err := rd.Next(); err == nil {
			t.Fatalf("more events than lines in %q", b)
		}
	})
}

func TestEventIntentID(t *testing.T) {
	tests := []struct{ data, want string }{
		{`{"type":"success","intent_id":"5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e","proposal":{}}`, "5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e"},
		{`{"type":"expired"}`, ""},
		{`{"intent_id":"unterminated`, ""},
	}
	for _, tt := range tests {
		if got := string(eventIntentID([]byte(tt.data))); got != tt.want {
			t.Errorf("eventIntentID(%s) = %q, want %q", tt.data, got, tt.want)
		}
	}
	ins := []signedIntent{{ID: "5f0c6a52-3b1e-4a7e-9a51-1b2b8a3c4d5e"}, {ID: "00000000-0000-4000-8000-000000000001"}}
	idx := newIntentIndex(ins)
	for _, tt := range []struct {
		id   string
		want int32
	}{{ins[0].ID, 0}, {ins[1].ID, 1}, {"5F0C6A52-3B1E-4A7E-9A51-1B2B8A3C4D5E", 0}, {"00000000-0000-4000-8000-000000000002", -1}, {"nope", -1}, {"", -1}} {
		if got := idx.lookup([]byte(tt.id)); got != tt.want {
			t.Errorf("lookup(%q) = %d, want %d", tt.id, got, tt.want)
		}
	}
}

func TestParseListening(t *testing.T) {
	tests := []struct{ line, want string }{
		{"intentd is listening on http://127.0.0.1:40123", "http://127.0.0.1:40123"},
		{"baseline server listening on http://127.0.0.1:5/", "http://127.0.0.1:5"},
		{"time=... level=INFO msg=listening url=http://127.0.0.1:1", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := parseListening(tt.line); got != tt.want {
			t.Errorf("parseListening(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestParseProcStatus(t *testing.T) {
	tests := []struct {
		name, text string
		want       memory
		wantErr    bool
	}{
		{"both", "Name:\tintentd\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n", memory{RSS: 100 << 20, Peak: 200 << 20}, false},
		{"missing", "Name:\tx\nVmRSS:\t1 kB\n", memory{}, true},
		{"not kB", "VmRSS:\t1 MB\nVmHWM:\t1 kB\n", memory{}, true},
		{"not a number", "VmRSS:\tx kB\nVmHWM:\t1 kB\n", memory{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStatus(tt.text)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseWriteBytes(t *testing.T) {
	tests := []struct {
		name, text string
		want       int64
		wantErr    bool
	}{
		{"plain", "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 131072\ncancelled_write_bytes: 0\n", 131072, false},
		{"last line without a newline", "read_bytes: 0\nwrite_bytes: 7", 7, false},
		{"missing", "rchar: 10\nwchar: 20\n", 0, true},
		{"not a number", "write_bytes: x\n", 0, true},
		{"negative", "write_bytes: -1\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWriteBytes(tt.text)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestHasFlag(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fake")
	help := "#!/bin/sh\necho 'Usage: intentd [flags]' >&2\necho '  -max-subscribers int' >&2\necho '  -max-body int' >&2\necho '  -allow-unsigned' >&2\n"
	if err := os.WriteFile(bin, []byte(help), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		want bool
	}{{"max-subscribers", true}, {"max-body", true}, {"allow-unsigned", true}, {"max", false}, {"subscribers", false}, {"Usage", false}} {
		if got := hasFlag(bin, tt.name); got != tt.want {
			t.Errorf("hasFlag(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if hasFlag(filepath.Join(t.TempDir(), "missing"), "max-body") {
		t.Error("a missing binary has no flags")
	}
}

func TestBurstySeconds(t *testing.T) {
	// Each row gives, per second, how many gaps and how many of them over slowGap.
	tests := []struct {
		name      string
		all, slow []int64
		want      int
		worst     float64
	}{
		{"none slow", []int64{1000, 1000}, []int64{0, 0}, 0, 0},
		{"1 % is not over", []int64{1000, 1000}, []int64{10, 0}, 0, 0.01},
		{"one burst", []int64{1000, 1000, 1000}, []int64{0, 62, 11}, 2, 0.062},
		{"part seconds left out", []int64{40, 1000, 7}, []int64{40, 5, 7}, 0, 0.005},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			p := newPairClock(1, &h, len(tt.all))
			for i := range tt.all {
				p.perSecond[i].Store(tt.all[i])
				p.slowPerSecond[i].Store(tt.slow[i])
			}
			n, worst := p.burstySeconds()
			if n != tt.want || worst != tt.worst {
				t.Errorf("got %d, %v; want %d, %v", n, worst, tt.want, tt.worst)
			}
		})
	}
}

func TestPairClockCountsSlowGapsBySecond(t *testing.T) {
	var h hist
	p := newPairClock(2, &h, 3)
	p.origin = time.Now().Add(-1500 * time.Millisecond) // in the run's second second
	p.acked(0)
	p.evented(0)
	p.event[1].Store(p.now())
	p.ack[1].Store(p.now() - int64(2*slowGap))
	p.seen[1].Store(1)
	p.done(1) // the 200 came 20 ms before the event: a slow gap
	if got := p.perSecond[1].Load(); got != 2 {
		t.Errorf("gaps in second 1: %d, want 2", got)
	}
	if got := p.slowPerSecond[1].Load(); got != 1 {
		t.Errorf("slow gaps in second 1: %d, want 1", got)
	}
	if h.Count() != 2 {
		t.Errorf("histogram holds %d gaps, want 2", h.Count())
	}
}
