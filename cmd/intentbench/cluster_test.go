package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseProcessCPU(t *testing.T) {
	tests := []struct {
		name, text string
		want       time.Duration
		wantErr    bool
	}{
		{"the process collector's lines", "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\nprocess_max_fds 1024\n", 12500 * time.Millisecond, false},
		{"after other families, one with the name as a prefix", "go_goroutines 12\nprocess_cpu_seconds_total_other 3\nprocess_cpu_seconds_total 0.01\n", 10 * time.Millisecond, false},
		{"with labels and a timestamp", "process_cpu_seconds_total{instance=\"a\"} 2 1700000000000\n", 2 * time.Second, false},
		{"absent", "go_goroutines 12\n", 0, true},
		{"not a number", "process_cpu_seconds_total x\n", 0, true},
		{"negative", "process_cpu_seconds_total -1\n", 0, true},
		{"labels not closed", "process_cpu_seconds_total{a=\"b\" 1\n", 0, true},
		{"no value", "process_cpu_seconds_total \n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcessCPU(strings.NewReader(tt.text))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseClusterArgs(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"fanout", "--server", "http://a:1", "--server", "http://b:1"}, "give --server once"},
		{[]string{"baseline", "--server", "http://a:1", "--server", "http://b:1"}, "give --server once"},
		{[]string{"decide", "--cpu-pid", "12"}, "give --server"},
		{[]string{"decide", "--server", "http://a:1", "--cpu-pid", "x"}, "not a process id"},
		{[]string{"decide", "--server", "http://a:1", "--cpu-pid", "0"}, "not a process id"},
		{[]string{"decide", "--server", "a:1"}, "want an http or https URL"},
		{[]string{"intake", "--server", "ftp://a"}, "want an http or https URL"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var errs bytes.Buffer
			_, _, err := parseArgs(tt.args, &errs)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
	var errs bytes.Buffer
	_, o, err := parseArgs([]string{"decide", "--server", "http://a:1/", "--server", "https://b:2", "--cpu-pid", "7", "--cpu-pid", "9"}, &errs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Servers, " ") != "http://a:1 https://b:2" || o.CPUPids.String() != "7 9" {
		t.Errorf("servers %q, pids %q", o.Servers, o.CPUPids.String())
	}
	if s := o.settings("decide"); s["server"] != "http://a:1 https://b:2" || s["cpu_pids"] != "7 9" {
		t.Errorf("settings %v", s)
	}
}

// TestIntakeOnSeveralServers runs intake against two intentd processes named by
// --server, with this test's own process as a --cpu-pid: the load reaches both, and
// each one's CPU is read from its /metrics.
func TestIntakeOnSeveralServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := buildIntentd(ctx, dir, raceEnabled)
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{opts: options{IntentTTL: time.Hour, Intentd: bin, Quiet: true}, stderr: os.Stderr, tmp: dir, client: newClient(4)}
	b.intentd = bin
	defer b.close()
	var urls []string
	for range 2 {
		data, err := os.MkdirTemp(dir, "data-")
		if err != nil {
			t.Fatal(err)
		}
		c, err := b.startIntentd(ctx, data, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, c.url)
	}
	args := []string{"intake", "--json", "--quiet", "--concurrency", "8", "--duration", "1s", "--warmup", "0s", "--intents", "300",
		"--server", urls[0], "--server", urls[1], "--cpu-pid", strconv.Itoa(os.Getpid())}
	var out, errs bytes.Buffer
	if err := run(ctx, args, &out, &errs); err != nil {
		t.Fatalf("run %q: %v\n%s", args, err, errs.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, out.String())
	}
	for _, name := range []string{"intake: member 0 CPU per request", "intake: member 1 CPU per request", "intake: intentd CPU per request (all members)", "intake: --cpu-pid processes' CPU per request"} {
		if f := figureOf(t, r, name); f.Value <= 0 {
			t.Errorf("%s = %v, want it measured", name, f.Value)
		}
	}
	all := figureOf(t, r, "intake: all servers' CPU per request").Value
	members := figureOf(t, r, "intake: intentd CPU per request (all members)").Value
	pids := figureOf(t, r, "intake: --cpu-pid processes' CPU per request").Value
	if d := all - members - pids; d < -0.01 || d > 0.01 {
		t.Errorf("all servers %v µs, want the members' %v plus the processes' %v", all, members, pids)
	}
	// Both members took intents: each one counted creates.
	for i, u := range urls {
		body, err := get(ctx, newClient(2), u+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		created := false
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "intentd_intent_transitions_total{") && strings.Contains(line, `state="open"`) && !strings.HasSuffix(line, " 0") {
				created = true
			}
		}
		if !created {
			t.Errorf("member %d counted no intent created: the load did not reach it", i)
		}
	}
}
